// Globbing for the guard: a linear-time glob matcher, and the sensitive paths a glob in an
// argument could name (so `~/.ss[h]/id_*` reads as `/root/.ssh/id_*`).
import { posix } from "node:path";
import type { ShellOptions } from "./expansion.js";

/** One element of a compiled glob. */
type GlobTok =
  | { k: "char"; c: string; segStart: boolean }
  | { k: "any"; segStart: boolean }
  | { k: "star"; segStart: boolean }
  | { k: "globstar" }
  | { k: "class"; set: string; negated: boolean; segStart: boolean };

/** A compiled glob; `test` runs in O(glob × text) (an NFA, no backtracking on attacker input). */
export interface Glob {
  test(s: string): boolean;
}

/** A glob (`*` `?` `[..]`, `**` crossing `/`; a leading `*`/`?` does not match a dot file) as a matcher. */
export function compileGlob(glob: string): Glob {
  return new GlobNfa(parseGlob(glob));
}

function parseGlob(glob: string): GlobTok[] {
  const toks: GlobTok[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    const segStart = i === 0 || glob[i - 1] === "/";
    if (c === "\\") toks.push({ k: "char", c: glob[++i] ?? "", segStart });
    else if (c === "*") {
      if (glob[i + 1] === "*") {
        toks.push({ k: "globstar" });
        while (glob[i + 1] === "*") i++;
      } else toks.push({ k: "star", segStart });
    } else if (c === "?") toks.push({ k: "any", segStart });
    else if (c === "[" && glob.indexOf("]", i + 2) > 0) {
      const end = glob.indexOf("]", i + 2);
      toks.push(classTok(glob.slice(i + 1, end), segStart));
      i = end;
    } else toks.push({ k: "char", c, segStart });
  }
  return toks;
}

/** `[...]`'s body: its characters spelled out (ranges bounded), negated by a leading `!` or `^`. */
function classTok(text: string, segStart: boolean): GlobTok {
  const negated = text.startsWith("!") || text.startsWith("^");
  const body = negated ? text.slice(1) : text;
  let set = "";
  for (let j = 0; j < body.length; j++) {
    if (body[j + 1] === "-" && j + 2 < body.length) {
      for (let x = body.charCodeAt(j); x <= body.charCodeAt(j + 2) && set.length < 256; x++) set += String.fromCharCode(x);
      j += 2;
    } else set += body[j] as string;
  }
  return { k: "class", set, negated, segStart };
}

/** The glob as a set of states, one per token plus the accepting one, advanced a character at a time. */
class GlobNfa implements Glob {
  private readonly n: number;

  constructor(private readonly toks: readonly GlobTok[]) {
    this.n = toks.length;
  }

  test(s: string): boolean {
    let cur: Uint8Array = new Uint8Array(this.n + 1);
    cur[0] = 1;
    this.close(cur);
    for (let i = 0; i < s.length; i++) {
      const next = this.step(cur, s[i] as string, i === 0 || s[i - 1] === "/");
      if (next === undefined) return false;
      cur = next;
    }
    return cur[this.n] === 1;
  }

  /** Closure: a star or globstar may match nothing, so a state at it also stands after it. */
  private close(states: Uint8Array): void {
    for (let k = 0; k < this.n; k++)
      if (states[k] === 1 && (this.toks[k]?.k === "star" || this.toks[k]?.k === "globstar")) states[k + 1] = 1;
  }

  /** The states after reading ch, or undefined when none is left. */
  private step(cur: Uint8Array, ch: string, atSegStart: boolean): Uint8Array | undefined {
    const next = new Uint8Array(this.n + 1);
    for (let k = 0; k < this.n; k++) {
      if (cur[k] !== 1) continue;
      const t = this.toks[k] as GlobTok;
      const hidden = ch === "." && atSegStart && t.k !== "char" && t.k !== "globstar" && t.segStart;
      const to = advance(t, ch, hidden);
      if (to !== undefined) next[k + to] = 1;
    }
    this.close(next);
    return next.includes(1) ? next : undefined;
  }
}

/** Where a token's state goes on ch: 1 to the next token, 0 to stay (stars), undefined if it dies. */
function advance(t: GlobTok, ch: string, hidden: boolean): 0 | 1 | undefined {
  switch (t.k) {
    case "char":
      return t.c === ch ? 1 : undefined;
    case "any":
      return ch !== "/" && !hidden ? 1 : undefined;
    case "class":
      return ch !== "/" && !hidden && t.set.includes(ch) !== t.negated ? 1 : undefined;
    case "star":
      return ch !== "/" && !hidden ? 0 : undefined;
    case "globstar":
      return 0;
  }
}

/**
 * Sensitive paths a glob is tested against, `~` standing for the home directory: the concrete
 * files and directories behind the built-in forbidden-path patterns.
 */
const SENSITIVE_PATHS = [
  "/etc/passwd",
  "/etc/shadow",
  "/etc/sudoers",
  "/etc/ssh",
  "/etc/ssh/sshd_config",
  "/root",
  "/root/.ssh",
  "/boot",
  "/sys",
  "/proc/1",
  "/proc/self/environ",
  "/proc/self/mem",
  "/proc/self/root",
  "/proc/self/cwd",
  "/proc/self/fd",
  "/dev/sda",
  "/dev/nvme0n1",
  "/dev/mmcblk0",
  "/dev/loop0",
  "/var/run/secrets",
  "/run/secrets",
  "/var/run/secrets/kubernetes.io/serviceaccount/token",
  "/var/run/docker.sock",
  "/run/docker.sock",
  "~/.ssh",
  "~/.ssh/id_rsa",
  "~/.ssh/id_ed25519",
  "~/.ssh/id_ecdsa",
  "~/.ssh/authorized_keys",
  "~/.aws/credentials",
  "~/.gnupg",
  "~/.kube/config",
  "/home/user/.ssh",
  "/home/user/.aws/credentials",
  "/home/user/.kube/config",
  "/home/user/.gnupg",
];

/**
 * The sensitive paths a glob could name, as texts for the forbidden-path patterns: a path the
 * whole glob matches, or a directory a leading part of the glob matches (then with the rest of
 * the glob after it: `~/.ss[h]/id_*` reads `/root/.ssh/id_*`).
 */
export function globTargets(glob: string, opts: ShellOptions): readonly string[] {
  if (cannotNameSensitive(glob, opts)) return NO_TARGETS;
  const abs = glob.startsWith("/") ? glob : `${opts.cwd}/${glob}`;
  const path = DOT_SEGMENT_RE.test(abs) ? posix.normalize(abs) : abs;
  // Only paths under the glob's literal start (or directories above it) can be named by it:
  // most globs (`src/**/*.ts`) share no start with any sensitive path and cost one scan.
  const literal = path.slice(0, path.search(GLOB_META_RE) >>> 0);
  const matcher = new PrefixMatcher(path);
  let out: string[] | undefined;
  for (const p of candidatePaths(path, opts.home)) {
    if (!p.path.startsWith(literal) && !literal.startsWith(p.path)) continue;
    const target = matcher.target(p.path, p.segments);
    if (target !== undefined) (out ??= []).push(target);
  }
  return out ?? NO_TARGETS;
}

// Fast reject: a glob whose first directory is literal and is no sensitive path's first
// directory (`src/**/*.ts` under /workspace) can name none of them.
function cannotNameSensitive(glob: string, opts: ShellOptions): boolean {
  if (glob.includes("..")) return false;
  const from = glob.startsWith("/") ? glob : opts.cwd;
  const end = from.indexOf("/", 1);
  const first = from.slice(1, end < 0 ? from.length : end);
  return !GLOB_META_RE.test(first) && !firstSegments(opts.home).has(first) && !(glob.startsWith("/home/") || opts.cwd.startsWith("/home/"));
}

/** `~` stands for the worker's home and for the home the glob itself is under (/home/u/.ss[h]). */
function candidatePaths(path: string, home: string): readonly { path: string; segments: number }[] {
  const own = /^\/home\/[^/*?[\\]+/.exec(path)?.[0];
  if (own === undefined || own === home) return sensitivePaths(home);
  return [...sensitivePaths(home), ...sensitivePaths(own).filter((c) => c.path.startsWith(own))];
}

/** Matches candidate paths against the glob, or against its first n segments (then the rest of the glob follows). */
class PrefixMatcher {
  private segs: string[] | undefined;
  private whole: Glob | undefined;
  private readonly prefixes = new Map<number, Glob>();

  constructor(private readonly path: string) {}

  /** What the glob names at `candidate` (n segments long), or undefined. */
  target(candidate: string, n: number): string | undefined {
    const segs = (this.segs ??= this.path.split("/"));
    if (n > segs.length) {
      // A `**` may still cover it.
      return this.path.includes("**") && (this.whole ??= compileGlob(this.path)).test(candidate) ? candidate : undefined;
    }
    let g = this.prefixes.get(n);
    if (g === undefined) {
      g = compileGlob(segs.slice(0, n).join("/"));
      this.prefixes.set(n, g);
    }
    if (!g.test(candidate)) return undefined;
    return n === segs.length ? candidate : `${candidate}/${segs.slice(n).join("/")}`;
  }
}

const NO_TARGETS: readonly string[] = Object.freeze([]);
const DOT_SEGMENT_RE = /(^|\/)\.\.?(\/|$)|\/\//;
const GLOB_META_RE = /[*?[\\]/;
/** The first directory of every sensitive path, per home directory. */
const firstByHome = new Map<string, ReadonlySet<string>>();
function firstSegments(home: string): ReadonlySet<string> {
  let set = firstByHome.get(home);
  if (set === undefined) {
    set = new Set(sensitivePaths(home).map((p) => p.path.split("/")[1] ?? ""));
    if (firstByHome.size < 16) firstByHome.set(home, set);
  }
  return set;
}

/** SENSITIVE_PATHS with `~` replaced, and their segment counts, per home directory. */
const sensitiveByHome = new Map<string, readonly { path: string; segments: number }[]>();
function sensitivePaths(home: string): readonly { path: string; segments: number }[] {
  let list = sensitiveByHome.get(home);
  if (list === undefined) {
    list = SENSITIVE_PATHS.map((p) => {
      const path = p.startsWith("~") ? home + p.slice(1) : p;
      return { path, segments: path.split("/").length };
    });
    if (sensitiveByHome.size < 16) sensitiveByHome.set(home, list);
  }
  return list;
}
