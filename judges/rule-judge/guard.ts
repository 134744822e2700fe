// The rule judge's binary guard (vaglio phase one): forbidden paths anywhere in the args,
// irrecoverable shell commands in a shell tool's command. A hit is a denial, not a score.

/** Paths nobody's tool call should mention: keys, credentials, system internals. */
export const FORBIDDEN_PATH_PATTERNS: readonly RegExp[] = [
  /(^|\/)\.ssh(\/|$)/,
  /^\/etc\/(passwd|shadow|sudoers)/,
  /^\/etc\/ssh(\/|$)/,
  /^\/root(\/|$)/,
  /^\/boot(\/|$)/,
  /^\/sys(\/|$)/,
  /^\/proc(\/[0-9]|$)/,
  /^\/dev\/(sd|nvme|mmcblk|loop)/,
  /\.aws\/credentials/,
  /\.config\/[^/]+\/credentials\.env/,
  /\.gnupg(\/|$)/,
];

/** Commands that leave the system in a state it cannot answer from. */
export const DANGEROUS_SHELL_PATTERNS: readonly RegExp[] = [
  /\brm\s+-rf?\s+\/(\s|$)/,
  /\brm\s+-rf?\s+~(\s|$|\/)/,
  /\bmkfs\b/,
  /\bdd\s+.*\bof=\/dev\//,
  /:\s*\(\s*\)\s*\{\s*:\|:&\s*\}/,
  /\bchmod\s+-?R?\s*0?77[0-9]\s+\//,
];

/** Every string in a JSON value, nested ones included. */
export function flattenStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) flattenStrings(v, out);
  else if (typeof value === "object" && value !== null) for (const v of Object.values(value)) flattenStrings(v, out);
  return out;
}

// `~` means the user's home; "/home/user" stands in so `^/`-anchored patterns apply too.
function expandHome(s: string): string {
  return s.startsWith("~") ? `/home/user${s.slice(1)}` : s;
}

/** Tools whose `command`/`cmd` argument is a shell command line. */
export function isShellTool(tool: string): boolean {
  return /(^|[._-])(shell|exec|cmd|bash|sh|run_command|terminal)([._-]|$)/i.test(tool);
}

/** The first guard violation for a tool call, or undefined when it passes. */
export function guardViolation(tool: string, args: unknown): string | undefined {
  for (const s of flattenStrings(args)) {
    const value = expandHome(s);
    for (const p of FORBIDDEN_PATH_PATTERNS) {
      // A path may appear inside a longer string ("cat ~/.ssh/id_rsa"): test each word too.
      if (p.test(value) || value.split(/\s+/).some((w) => p.test(expandHome(w)))) {
        return `forbidden path violated: pattern '${p.source}' in args`;
      }
    }
  }
  if (isShellTool(tool) && typeof args === "object" && args !== null) {
    const a = args as Record<string, unknown>;
    const raw = a.command ?? a.cmd;
    const command = Array.isArray(raw) ? raw.map(String).join(" ") : typeof raw === "string" ? raw : undefined;
    if (command !== undefined) {
      for (const p of DANGEROUS_SHELL_PATTERNS) {
        if (p.test(command)) return `dangerous shell command: pattern '${p.source}'`;
      }
    }
  }
  return undefined;
}
