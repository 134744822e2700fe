// Commands the guard reads by their bare name: a path prefix (`/bin/rm`) is dropped, and a
// glob in command position (`/bin/r?`) is tried against them and their usual directories.

/** Commands whose path prefix is dropped and that a glob in command position is tested against. */
export const DANGEROUS_COMMANDS: readonly string[] = ["rm", "dd", "mkfs", "chmod", "chown", "curl", "wget", "sh", "bash", "zsh", "dash", "ksh", "shred", "base64", "env", "sudo", "eval", "xargs", "python", "python3", "perl", "nc", "ncat", "socat"];

/** The directories a command name is usually found in. */
export const BIN_DIRS: readonly string[] = ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/"];

/** The last segment of a command path (`/usr/bin/rm` → `rm`); a word ending in `/` is kept. */
export function baseName(w: string): string {
  const slash = w.lastIndexOf("/");
  return slash >= 0 && slash < w.length - 1 ? w.slice(slash + 1) : w;
}
