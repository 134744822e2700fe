// Word expansion for the shell reader: a word's parts become its possible values (quote
// removal, ~, brace lists, $VAR and ${VAR<op>} from what the line assigned or the known
// environment, $(...) through the interpreter), bounded, and unknown where not computable.
import { tokenize, type Part, type Token } from "./lexer.js";
import type { CommandLog } from "./records.js";

/** What the expansion knows about the worker. */
export interface ShellOptions {
  home: string;
  cwd: string;
}

/** A word's possible values: alternatives (quote-removed), and whether part of it is unknown. */
export interface Expanded {
  values: string[];
  /** Some expansion in it could not be computed (it is read as empty in `values`). */
  unknown: boolean;
  /** The word with its unquoted glob characters kept as a glob (others escaped), when it has any. */
  glob?: string;
}

/** Reads a line of tokens under env (the interpreter); returns its output when static. */
export type RunLine = (tokens: Token[], env: Env) => string | undefined;

/** Per-line state: variables assigned so far (alternatives; undefined = assigned something unknown). */
export interface Env {
  vars: Map<string, string[] | undefined>;
  opts: ShellOptions;
  depth: number;
  texts: string[];
  unresolved?: string;
  /** The directory the next command runs in (`cd` changes it). */
  cwd: string;
  /** How a nested line (`$(...)`, `eval`, `sh -c`) is read. */
  run: RunLine;
  /** Every simple command read so far, shared by the nested lines (for the effect model). */
  log: CommandLog;
  /** The command running this line as another user (`sudo find . -exec sh \;`): its commands run so too. */
  asUser?: string;
}

/** Bounds: alternatives per word, nesting of eval/sh -c/$(...), length of a line read. */
export const MAX_ALTERNATIVES = 16;
export const MAX_DEPTH = 4;
export const MAX_SOURCE = 8192;

/** Environment a worker's shell starts with, as far as the guard assumes it. */
const KNOWN_ENV: Readonly<Record<string, (o: ShellOptions) => string>> = {
  HOME: (o) => o.home,
  PWD: (o) => o.cwd,
  IFS: () => " ",
  PATH: () => "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  SHELL: () => "/bin/sh",
  // The user whose home it is (root for /root, x for /home/x); unknown for another home.
  USER: (o) => userOf(o.home),
  LOGNAME: (o) => userOf(o.home),
};

function userOf(home: string): string {
  return home === "/root" ? "root" : (/^\/(?:home|Users)\/([^/]+)$/.exec(home)?.[1] ?? "root");
}

function lookup(env: Env, name: string): string[] | undefined {
  if (env.vars.has(name)) return env.vars.get(name);
  const known = KNOWN_ENV[name];
  return known === undefined ? undefined : [known(env.opts)];
}

/** ${NAME<op><arg>} operators: the value (undefined = unset) and the argument give the result, undefined if not computable. */
type ParamOp = (v: string | undefined, arg: string) => string | undefined;

const defaultIfUnset: ParamOp = (v, arg) => v ?? arg;
const defaultIfEmpty: ParamOp = (v, arg) => (v === undefined || v === "" ? arg : v);
const asIs: ParamOp = (v) => v;
const trimSuffix: ParamOp = (v, arg) =>
  v === undefined || /[*?[]/.test(arg) ? undefined : v.endsWith(arg) ? v.slice(0, v.length - arg.length) : v;
const trimPrefix: ParamOp = (v, arg) => (v === undefined || /[*?[]/.test(arg) ? undefined : v.startsWith(arg) ? v.slice(arg.length) : v);

const PARAM_OPS: Readonly<Record<string, ParamOp>> = {
  "": asIs,
  len: (v) => (v === undefined ? undefined : String(v.length)),
  "-": defaultIfUnset,
  "=": defaultIfUnset,
  ":-": defaultIfEmpty,
  ":=": defaultIfEmpty,
  "+": (v, arg) => (v === undefined ? "" : arg),
  ":+": (v, arg) => (v === undefined || v === "" ? "" : arg),
  "?": asIs,
  ":?": asIs,
  ":": substring,
  "/": (v, arg) => replace(v, arg, false),
  "//": (v, arg) => replace(v, arg, true),
  "^^": (v) => v?.toUpperCase(),
  ",,": (v) => v?.toLowerCase(),
  "^": (v) => (v === undefined ? undefined : v.charAt(0).toUpperCase() + v.slice(1)),
  ",": (v) => (v === undefined ? undefined : v.charAt(0).toLowerCase() + v.slice(1)),
  "%": trimSuffix,
  "%%": trimSuffix,
  "#": trimPrefix,
  "##": trimPrefix,
};

/** `${X:off:len}`. */
function substring(v: string | undefined, arg: string): string | undefined {
  if (v === undefined) return undefined;
  const m = /^\s*(-?\d+)\s*(?::\s*(-?\d+))?\s*$/.exec(arg.replace(/^ /, ""));
  if (m === null) return undefined;
  let off = Number(m[1]);
  if (off < 0) off = Math.max(0, v.length + off);
  if (m[2] === undefined) return v.slice(off);
  const len = Number(m[2]);
  return len < 0 ? v.slice(off, v.length + len) : v.slice(off, off + len);
}

/** `${X/a/b}` and `${X//a/b}` with a literal pattern. */
function replace(v: string | undefined, arg: string, all: boolean): string | undefined {
  if (v === undefined) return undefined;
  const slash = arg.indexOf("/");
  const pat = slash < 0 ? arg : arg.slice(0, slash);
  const rep = slash < 0 ? "" : arg.slice(slash + 1);
  if (/[*?[]/.test(pat) || pat === "") return undefined;
  return all ? v.split(pat).join(rep) : v.replace(pat, () => rep);
}

/** Applies a ${NAME<op><arg>} operator to a known value; undefined if unsupported. */
function applyOp(v: string | undefined, op: string, arg: string): string | undefined {
  const f = PARAM_OPS[op];
  return f === undefined ? undefined : f(v, arg);
}

/** Expands brace lists `{a,b}` in unquoted literal text (no ranges), bounded. */
function braces(s: string): string[] {
  const m = /\{([^{}]*,[^{}]*)\}/.exec(s);
  if (m === null) return [s];
  const out: string[] = [];
  for (const alt of (m[1] ?? "").split(",")) {
    if (out.length >= MAX_ALTERNATIVES) break;
    for (const rest of braces(s.slice(0, m.index) + alt + s.slice(m.index + m[0].length))) {
      if (out.length < MAX_ALTERNATIVES) out.push(rest);
    }
  }
  return out;
}

const GLOB_CHARS_RE = /[*?[]/;
const GLOB_ESCAPE_RE = /[*?[\]\\]/;
/** What an unquoted literal may expand: `~`, brace lists, globs. */
const PLAIN_EXPANSION_RE = /[~{*?[]/;
const TILDE_RE = /^~([a-z_][a-z0-9_-]*)?(?=\/|$)/;

/** `~` or `~user` as a directory. */
export function tildeHome(user: string | undefined, home: string): string {
  return user === undefined ? home : user === "root" ? "/root" : `/home/${user}`;
}

const escapeGlob = (s: string): string => (GLOB_ESCAPE_RE.test(s) ? s.replace(/[*?[\]\\]/g, "\\$&") : s);
const keepGlob = (s: string): string => s;

/** The alternatives of a word being expanded, with each one's glob form. */
class Alternatives {
  values = [""];
  globs = [""];
  unknown = false;
  hasGlob = false;

  append(alts: string[], glob: (s: string) => string): void {
    const nv: string[] = [];
    const ng: string[] = [];
    for (let a = 0; a < this.values.length; a++) {
      for (const alt of alts) {
        if (nv.length >= MAX_ALTERNATIVES) break;
        nv.push((this.values[a] as string) + alt);
        ng.push((this.globs[a] as string) + glob(alt));
      }
    }
    this.values = nv;
    this.globs = ng;
  }

  result(): Expanded {
    return { values: this.values, unknown: this.unknown, ...(this.hasGlob ? { glob: this.globs[0] } : {}) };
  }
}

/** A word's values under env: quotes removed, variables and substitutions expanded where known. */
export function expandWord(parts: Part[], env: Env): Expanded {
  // Most words are one literal with nothing to expand.
  const only = parts.length === 1 ? parts[0] : undefined;
  if (only?.t === "lit" && (only.quoted || !PLAIN_EXPANSION_RE.test(only.s))) return { values: [only.s], unknown: false };
  const acc = new Alternatives();
  parts.forEach((p, idx) => {
    if (p.t === "lit") literal(p, idx === 0, env, acc);
    else if (p.t === "unknown") {
      acc.unknown = true;
      // `$(( $(rm -rf /) + 1 ))`: the value is unknown, but the substituted commands run.
      for (const sub of p.subs ?? []) substitute(sub, env);
    } else {
      const alts = p.t === "var" ? parameter(p, env, acc) : substitution(p, env, acc);
      if (alts !== undefined && alts.length > 0) {
        // Unquoted, an expansion's glob characters are live: `$X` with X='/etc/pass*' globs.
        if (!p.quoted && alts.some((a) => GLOB_CHARS_RE.test(a))) acc.hasGlob = true;
        acc.append(alts, p.quoted ? escapeGlob : keepGlob);
      }
    }
  });
  return acc.result();
}

function literal(p: Part & { t: "lit" }, first: boolean, env: Env, acc: Alternatives): void {
  let s = p.s;
  if (!p.quoted && first && s.startsWith("~")) {
    const m = TILDE_RE.exec(s);
    if (m !== null) s = tildeHome(m[1], env.opts.home) + s.slice(m[0].length);
  }
  const alts = p.quoted ? [s] : braces(s);
  if (!p.quoted && GLOB_CHARS_RE.test(s)) acc.hasGlob = true;
  acc.append(alts, p.quoted ? escapeGlob : keepGlob);
}

function parameter(p: Part & { t: "var" }, env: Env, acc: Alternatives): string[] | undefined {
  const base = lookup(env, p.name);
  const arg =
    expandWord(
      tokenize(p.arg).flatMap((t) => (t.k === "word" ? t.parts : [])),
      env,
    ).values[0] ?? "";
  if (base === undefined) {
    // An unknown variable may also be unset: read as empty (`rm -rf $X/` is `rm -rf /`).
    const v = applyOp(undefined, p.op, arg);
    if (v === undefined) acc.unknown = true;
    return v === undefined ? undefined : [v];
  }
  const vs = base.map((b) => applyOp(b, p.op, arg));
  if (vs.some((v) => v === undefined)) acc.unknown = true;
  return vs.filter((v): v is string => v !== undefined);
}

function substitution(p: Part & { t: "sub" }, env: Env, acc: Alternatives): string[] | undefined {
  if (p.proc === true) {
    // <(cmd) is a path to cmd's output: the command is checked, the word is a file name.
    substitute(p.src, env);
    return ["/dev/fd/63"];
  }
  const out = substitute(p.src, env);
  if (out === undefined) acc.unknown = true;
  return out === undefined ? undefined : [out];
}

/** Output of `$(...)`: read as a line of its own, its value computed if it is a static pipeline. */
export function substitute(src: string, env: Env): string | undefined {
  if (env.depth >= MAX_DEPTH) return undefined;
  const inner: Env = { ...env, vars: new Map(env.vars), depth: env.depth + 1 };
  delete inner.unresolved;
  const out = env.run(tokenize(src), inner);
  if (inner.unresolved !== undefined) env.unresolved ??= inner.unresolved;
  return out === undefined ? undefined : out.replace(/\n+$/, "");
}
