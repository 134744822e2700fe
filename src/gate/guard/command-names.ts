// Names of commands by what they are (shells, interpreters) and where they live. The commands
// the guard knows — whose path prefix is dropped and that a glob in command position is tried
// against — are the effect model's table (effects/command-table.ts: KNOWN_COMMANDS).

/** Shells: `-c SCRIPT`, a script operand, or stdin is code. */
export const SHELLS: ReadonlySet<string> = new Set([
  "sh",
  "bash",
  "zsh",
  "dash",
  "ksh",
  "ash",
  "mksh",
  "fish",
  "csh",
  "tcsh",
  "posh",
  "yash",
]);

/** Interpreters: a script operand, stdin, or their inline-code option is code. */
export const INTERPRETERS: ReadonlySet<string> = new Set([
  "python",
  "python2",
  "python3",
  "perl",
  "ruby",
  "node",
  "nodejs",
  "php",
  "lua",
  "bun",
  "deno",
  "Rscript",
  "tclsh",
  "pwsh",
  "powershell",
  "osascript",
  "awk",
  "gawk",
]);

/** The directories a command name is usually found in. */
export const BIN_DIRS: readonly string[] = ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/"];

/** The last segment of a command path (`/usr/bin/rm` → `rm`); a word ending in `/` is kept. */
export function baseName(w: string): string {
  const slash = w.lastIndexOf("/");
  return slash >= 0 && slash < w.length - 1 ? w.slice(slash + 1) : w;
}
