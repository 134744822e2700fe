/*
 * gavel-launch: keeps a program's stdout apart from its stderr in a Kubernetes pod log.
 * Kubernetes 1.31's pods/log merges both streams; this static launcher runs the program
 * with two pipes and writes one framed stream (decoded by src/runtime/kubernetes/log-streams.ts):
 *   - a stdout line is written as it is, unless it starts with RS (0x1e);
 *   - every other piece is a record line: RS, a type, the bytes, "\n":
 *     'O' stdout bytes + "\n" (a stdout line that starts with RS), 'o' stdout bytes without
 *     a newline (a partial line cut by stderr output or the end), 'E' a stderr line, 'e' stderr
 *     bytes without a newline.
 * So `kubectl logs` still reads like the program's output, and gavel splits it exactly.
 *
 *   gavel-launch --install DEST   copy this binary to DEST (mode 0555): an init container does
 *                                 this into an emptyDir the main container mounts.
 *   gavel-launch PROGRAM [ARG...] run PROGRAM (PATH looked up) with stdin inherited; exit with
 *                                 its exit code (128 + N when signal N killed it).
 *   gavel-launch --wait           a warm judge pod's main container (ADR 0070): wait, reaping
 *                                 what ends, until SIGTERM or SIGINT; exit 0.
 *   gavel-launch --judge-input DIR [--env NAME=VALUE]... -- PROGRAM [ARG...]
 *                                 what the controller execs in a warm judge pod: stdin (the judge's
 *                                 payload) into DIR/payload (DIR made 0700, the file created new),
 *                                 the variables set, then PROGRAM exec'd in its place with stdin
 *                                 /dev/null; its streams are the exec's own (nothing framed).
 * Signals sent to the launcher (PID 1 of the container) are passed on to the program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RS '\x1e'
#define CHUNK 65536
#define MAX_PENDING 65536

static pid_t child = -1;

static void forward(int sig) {
  if (child > 0) kill(child, sig);
}

static void write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* the log is gone: nothing left to tell */
    }
    p += w;
    n -= (size_t)w;
  }
}

static void record(char type, const char *p, size_t n) {
  char head[2] = {RS, type};
  write_all(head, 2);
  write_all(p, n);
  write_all("\n", 1);
}

/* A partial line kept per stream until its newline arrives. */
struct stream {
  int fd;
  int out; /* 1 stdout, 0 stderr */
  char pending[MAX_PENDING];
  size_t len;
};

static void flush_partial(struct stream *s) {
  if (s->len == 0) return;
  record(s->out ? 'o' : 'e', s->pending, s->len);
  s->len = 0;
}

static void line(struct stream *s, const char *p, size_t n) {
  /* n excludes the newline */
  if (s->out && (s->len > 0 ? s->pending[0] : (n > 0 ? p[0] : 0)) != RS) {
    write_all(s->pending, s->len);
    write_all(p, n);
    write_all("\n", 1);
  } else {
    char head[2] = {RS, s->out ? 'O' : 'E'};
    write_all(head, 2);
    write_all(s->pending, s->len);
    write_all(p, n);
    write_all("\n", 1);
  }
  s->len = 0;
}

static void take(struct stream *s, struct stream *other, const char *p, size_t n) {
  /* The other stream's partial line goes first, so the order of the two streams is kept. */
  flush_partial(other);
  while (n > 0) {
    const char *nl = memchr(p, '\n', n);
    if (nl == NULL) {
      if (s->len + n > MAX_PENDING) flush_partial(s);
      if (n > MAX_PENDING) {
        record(s->out ? 'o' : 'e', p, n);
      } else {
        memcpy(s->pending + s->len, p, n);
        s->len += n;
      }
      return;
    }
    size_t k = (size_t)(nl - p);
    line(s, p, k);
    p += k + 1;
    n -= k + 1;
  }
}

static int install(const char *dest) {
  int in = open("/proc/self/exe", O_RDONLY);
  if (in < 0) { perror("gavel-launch: /proc/self/exe"); return 1; }
  int out = open(dest, O_WRONLY | O_CREAT | O_TRUNC, 0555);
  if (out < 0) { fprintf(stderr, "gavel-launch: %s: %s\n", dest, strerror(errno)); return 1; }
  char buf[CHUNK];
  for (;;) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { perror("gavel-launch: read"); return 1; }
    if (r == 0) break;
    for (ssize_t off = 0; off < r;) {
      ssize_t w = write(out, buf + off, (size_t)(r - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) { fprintf(stderr, "gavel-launch: %s: %s\n", dest, strerror(errno)); return 1; }
      off += w;
    }
  }
  if (fchmod(out, 0555) != 0 || close(out) != 0) { fprintf(stderr, "gavel-launch: %s: %s\n", dest, strerror(errno)); return 1; }
  return 0;
}

static volatile sig_atomic_t stopping = 0;

static void stop_child_noop(int sig) { (void)sig; }

static void stop(int sig) {
  (void)sig;
  stopping = 1;
}

/* --wait: PID 1 of a warm judge pod, idle until the pod is deleted. */
static int wait_for_stop(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGCHLD);
  signal(SIGCHLD, stop_child_noop);
  sigprocmask(SIG_BLOCK, &block, &old);
  while (!stopping) {
    /* Orphans of an exec'd judge are reparented to PID 1: reap them. */
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    sigsuspend(&old);
  }
  return 0;
}

/* --judge-input: the payload from stdin into DIR/payload, the variables set, then PROGRAM in its place. */
static int judge_input(int argc, char **argv) {
  int i = 3;
  for (; i + 1 < argc && strcmp(argv[i], "--env") == 0; i += 2) {
    char *eq = strchr(argv[i + 1], '=');
    if (eq == NULL || eq == argv[i + 1]) { fprintf(stderr, "gavel-launch: --env %s: expected NAME=VALUE\n", argv[i + 1]); return 2; }
    *eq = '\0';
    if (setenv(argv[i + 1], eq + 1, 1) != 0) { perror("gavel-launch: setenv"); return 2; }
  }
  if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
    fprintf(stderr, "usage: gavel-launch --judge-input DIR [--env NAME=VALUE]... -- PROGRAM [ARG...]\n");
    return 2;
  }
  const char *dir = argv[2];
  if (mkdir(dir, 0700) != 0) { fprintf(stderr, "gavel-launch: %s: %s\n", dir, strerror(errno)); return 126; }
  char path[4096];
  if (snprintf(path, sizeof path, "%s/payload", dir) >= (int)sizeof path) { fprintf(stderr, "gavel-launch: %s: too long\n", dir); return 2; }
  int out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0400);
  if (out < 0) { fprintf(stderr, "gavel-launch: %s: %s\n", path, strerror(errno)); return 126; }
  char buf[CHUNK];
  for (;;) {
    ssize_t r = read(0, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { perror("gavel-launch: reading the payload"); return 126; }
    if (r == 0) break;
    for (ssize_t off = 0; off < r;) {
      ssize_t w = write(out, buf + off, (size_t)(r - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) { fprintf(stderr, "gavel-launch: %s: %s\n", path, strerror(errno)); return 126; }
      off += w;
    }
  }
  if (close(out) != 0) { fprintf(stderr, "gavel-launch: %s: %s\n", path, strerror(errno)); return 126; }
  int null = open("/dev/null", O_RDONLY);
  if (null < 0 || dup2(null, 0) < 0) { perror("gavel-launch: /dev/null"); return 126; }
  if (null > 0) close(null);
  execvp(argv[i + 1], argv + i + 1);
  fprintf(stderr, "gavel-launch: %s: %s\n", argv[i + 1], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--install") == 0) return install(argv[2]);
  if (argc == 2 && strcmp(argv[1], "--wait") == 0) return wait_for_stop();
  if (argc >= 3 && strcmp(argv[1], "--judge-input") == 0) return judge_input(argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: gavel-launch PROGRAM [ARG...] | --install DEST | --wait | --judge-input DIR [--env NAME=VALUE]... -- PROGRAM [ARG...]\n");
    return 2;
  }
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) { perror("gavel-launch: pipe"); return 127; }
  signal(SIGPIPE, SIG_IGN);
  child = fork();
  if (child < 0) { perror("gavel-launch: fork"); return 127; }
  if (child == 0) {
    signal(SIGPIPE, SIG_DFL);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "gavel-launch: %s: %s\n", argv[1], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  close(out[1]);
  close(err[1]);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sa.sa_flags = SA_RESTART;
  int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);

  static struct stream so, se;
  so.fd = out[0]; so.out = 1;
  se.fd = err[0]; se.out = 0;
  struct stream *streams[2] = {&so, &se};
  int status = 0, exited = 0;
  char buf[CHUNK];
  for (;;) {
    if (!exited) {
      /* Reap everything (PID 1); only the program's own status counts. */
      for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p <= 0) break;
        if (p == child) { status = st; exited = 1; }
      }
    }
    struct pollfd fds[2];
    nfds_t n = 0;
    for (int i = 0; i < 2; i++) if (streams[i]->fd >= 0) fds[n++] = (struct pollfd){.fd = streams[i]->fd, .events = POLLIN};
    if (n == 0 && exited) break;
    if (n == 0) { /* both closed, the program runs on */
      int st;
      pid_t p = waitpid(child, &st, 0);
      if (p == child) { status = st; exited = 1; }
      else if (p < 0 && errno != EINTR) break;
      continue;
    }
    /* After the program exited, pipes a leftover grandchild keeps open end the run once quiet. */
    int ready = poll(fds, n, exited ? 200 : 100);
    if (ready < 0) { if (errno == EINTR) continue; break; }
    if (ready == 0) { if (exited) break; continue; }
    for (nfds_t i = 0; i < n; i++) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      struct stream *s = fds[i].fd == so.fd ? &so : &se;
      struct stream *other = s == &so ? &se : &so;
      ssize_t r = read(s->fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) { close(s->fd); s->fd = -1; continue; }
      take(s, other, buf, (size_t)r);
    }
  }
  flush_partial(&se);
  if (so.len > 0) {
    if (so.pending[0] == RS) flush_partial(&so);
    else write_all(so.pending, so.len);
  }
  if (!exited) {
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}
