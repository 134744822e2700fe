// Static shell expansion for the guard: reads a command line as sh would split and expand it
// (quotes, escapes, $VAR and ${VAR...} from assignments in the same line, ~, $'..', brace lists,
// for-loop words, $(...) and backticks whose output is computable from literals, static
// pipelines into sh/eval/xargs) without running anything, and says what it could not resolve.
import { posix } from "node:path";

/** What the expansion knows about the worker. */
export interface ShellOptions {
  home: string;
  cwd: string;
}

/** The command lines a text expands to, and what stayed unknown where a command name belongs. */
export interface ShellAnalysis {
  /** Expanded lines (words joined by spaces, operators kept), then the lines nested in them. */
  texts: string[];
  /**
   * Why a command could not be known statically (a computed command name, `eval` or `sh -c`
   * of a computed string, a shell reading computed input), or undefined. Never an argument value.
   */
  unresolved?: string;
}

/** Commands a glob in command position is tested against (by bare name and usual directories). */
export const DANGEROUS_COMMANDS: readonly string[] = ["rm", "dd", "mkfs", "chmod", "chown", "curl", "wget", "sh", "bash", "zsh", "dash", "ksh", "shred", "base64", "env", "sudo", "eval", "xargs", "python", "python3", "perl", "nc", "ncat", "socat"];
const BIN_DIRS = ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/"];
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"]);
/** Words that run the next word as a command (options skipped). */
const PREFIX_COMMANDS = new Set(["sudo", "doas", "nice", "nohup", "time", "exec", "command", "builtin", "stdbuf", "setsid", "chroot", "ionice", "unbuffer", "busybox"]);
const KEYWORDS = new Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "[[", "]]", "function", "case", "esac", "in"]);
/** Environment a worker's shell starts with, as far as the guard assumes it. */
const KNOWN_ENV: Record<string, (o: ShellOptions) => string> = {
  HOME: (o) => o.home,
  PWD: (o) => o.cwd,
  IFS: () => " ",
  PATH: () => "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  SHELL: () => "/bin/sh",
  USER: () => "root",
  LOGNAME: () => "root",
};

/** Bounds: alternatives per word, expanded lines per text, nesting of eval/sh -c/$(...). */
const MAX_ALTERNATIVES = 16;
const MAX_DEPTH = 4;
const MAX_SOURCE = 8192;
const MAX_COMMANDS = 256;

type Part =
  | { t: "lit"; s: string; quoted: boolean }
  | { t: "var"; name: string; op: string; arg: string; quoted: boolean }
  | { t: "sub"; src: string; quoted: boolean; proc?: boolean }
  | { t: "unknown"; quoted: boolean };
type Word = { k: "word"; parts: Part[] };
type Token = Word | { k: "op"; op: string };

const OPERATORS = ["&&", "||", ";;", "|&", "<<<", "<<", ">>", "&>", ">&", "<(", ">(", ";", "|", "&", "<", ">", "(", ")", "\n"];
const OPERATOR_START = new Set(["&", "|", ";", "<", ">", "(", ")", "\n"]);
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*/;

/** Index of the `)` closing a `(` just before i, honouring quotes and nesting; -1 if none. */
function closeParen(s: string, i: number): number {
  let depth = 1;
  for (let j = i; j < s.length; j++) {
    const c = s[j];
    if (c === "\\") j++;
    else if (c === "'") {
      const e = s.indexOf("'", j + 1);
      if (e < 0) return -1;
      j = e;
    } else if (c === '"') {
      for (j++; j < s.length && s[j] !== '"'; j++) if (s[j] === "\\") j++;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return j;
  }
  return -1;
}

/** Splits a command line into words (with their quoting and expansions) and operators. */
export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let parts: Part[] | undefined;
  let lit = "";
  let litQuoted = false;
  const flushLit = (): void => {
    if (lit !== "") (parts ??= []).push({ t: "lit", s: lit, quoted: litQuoted });
    lit = "";
  };
  const pushLit = (s: string, quoted: boolean): void => {
    if (quoted !== litQuoted) flushLit();
    litQuoted = quoted;
    lit += s;
    parts ??= [];
  };
  const endWord = (): void => {
    flushLit();
    if (parts !== undefined) tokens.push({ k: "word", parts });
    parts = undefined;
  };
  // A `$...` expansion at i (s[i] === "$"); returns the index after it.
  const dollar = (i: number, quoted: boolean): number => {
    const n = src[i + 1] ?? "";
    if (n === "(" && src[i + 2] === "(") {
      const end = closeParen(src, i + 2);
      flushLit();
      (parts ??= []).push({ t: "unknown", quoted });
      return end < 0 ? src.length : end + 1;
    }
    if (n === "(") {
      const end = closeParen(src, i + 2);
      flushLit();
      (parts ??= []).push({ t: "sub", src: src.slice(i + 2, end < 0 ? src.length : end), quoted });
      return end < 0 ? src.length : end + 1;
    }
    if (n === "{") {
      const end = src.indexOf("}", i + 2);
      const body = src.slice(i + 2, end < 0 ? src.length : end);
      const m = /^(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(.*)$/s.exec(body);
      flushLit();
      if (m === null) (parts ??= []).push({ t: "unknown", quoted });
      else {
        const rest = m[3] ?? "";
        const op = m[1] === "#" ? "len" : (/^(:?[-=+?]|:|\/\/|\/|\^\^|,,|\^|,|%%|%|##|#)/.exec(rest)?.[0] ?? (rest === "" ? "" : "?unsupported"));
        (parts ??= []).push({ t: "var", name: m[2] ?? "", op, arg: op === "?unsupported" ? "" : rest.slice(op.length), quoted });
      }
      return end < 0 ? src.length : end + 1;
    }
    if (n === "'" && !quoted) {
      // $'...': ANSI-C quoting, decoded here.
      let j = i + 2;
      let out = "";
      for (; j < src.length && src[j] !== "'"; j++) {
        if (src[j] !== "\\") {
          out += src[j];
          continue;
        }
        const rest = src.slice(j + 1);
        const m = /^(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)/s.exec(rest);
        const e = m?.[0] ?? "";
        j += e.length;
        const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", e: "\x1b", f: "\f", v: "\v" };
        if (/^[xuU]/.test(e)) out += safeCodePoint(parseInt(e.slice(1), 16));
        else if (/^[0-7]/.test(e)) out += safeCodePoint(parseInt(e, 8));
        else out += simple[e] ?? e;
      }
      pushLit(out, true);
      return j + 1;
    }
    const name = NAME_RE.exec(src.slice(i + 1))?.[0] ?? (/[0-9@*#?$!-]/.test(n) ? n : "");
    if (name === "") {
      pushLit("$", quoted);
      return i + 1;
    }
    flushLit();
    (parts ??= []).push({ t: "var", name, op: "", arg: "", quoted });
    return i + 1 + name.length;
  };

  /** Here-document bodies, [start, end), jumped over when the line that opens them ends. */
  const skips: [number, number][] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === " " || c === "\t") {
      endWord();
      i++;
      continue;
    }
    if (c === "\\") {
      if (src[i + 1] === "\n") i += 2;
      else {
        pushLit(src[i + 1] ?? "", true);
        i += 2;
      }
      continue;
    }
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      pushLit(src.slice(i + 1, end < 0 ? src.length : end), true);
      i = end < 0 ? src.length : end + 1;
      continue;
    }
    if (c === '"') {
      pushLit("", true);
      let j = i + 1;
      while (j < src.length && src[j] !== '"') {
        const d = src[j] as string;
        if (d === "\\" && j + 1 < src.length && '$`"\\\n'.includes(src[j + 1] as string)) {
          pushLit(src[j + 1] as string, true);
          j += 2;
        } else if (d === "$") j = dollar(j, true);
        else if (d === "`") {
          const end = src.indexOf("`", j + 1);
          flushLit();
          (parts ??= []).push({ t: "sub", src: src.slice(j + 1, end < 0 ? src.length : end), quoted: true });
          j = end < 0 ? src.length : end + 1;
        } else {
          pushLit(d, true);
          j++;
        }
      }
      i = j + 1;
      continue;
    }
    if (c === "$") {
      if (src[i + 1] === '"') {
        i++;
        continue;
      }
      i = dollar(i, false);
      continue;
    }
    if (c === "`") {
      const end = src.indexOf("`", i + 1);
      flushLit();
      (parts ??= []).push({ t: "sub", src: src.slice(i + 1, end < 0 ? src.length : end), quoted: false });
      i = end < 0 ? src.length : end + 1;
      continue;
    }
    if (c === "#" && parts === undefined) {
      // A comment runs to the end of the line.
      const nl = src.indexOf("\n", i);
      i = nl < 0 ? src.length : nl;
      continue;
    }
    const op = OPERATOR_START.has(c) ? OPERATORS.find((o) => src.startsWith(o, i)) : undefined;
    if (op !== undefined) {
      // `2>` / `2>&1`: a number right before a redirection is its file descriptor.
      if ((op[0] === ">" || op[0] === "<" || op === "&>") && lit !== "" && /^[0-9]+$/.test(lit) && parts?.length === 0) {
        lit = "";
        parts = undefined;
      }
      if (op === "<(" || op === ">(") {
        endWord();
        const end = closeParen(src, i + 2);
        tokens.push({ k: "word", parts: [{ t: "sub", src: src.slice(i + 2, end < 0 ? src.length : end), quoted: false, proc: true }] });
        i = end < 0 ? src.length : end + 1;
        continue;
      }
      if (op === "<<") {
        // A here-document: its body is the command's input (data, not commands of this line).
        endWord();
        const m = /^<<-?[ \t]*(['"]?)([^\s'";|&<>()]+)\1/.exec(src.slice(i));
        if (m !== null) {
          const delim = m[2] as string;
          const lineEnd = src.indexOf("\n", i);
          const bodyStart = lineEnd < 0 ? src.length : lineEnd + 1;
          const lines = src.slice(bodyStart).split("\n");
          const end = lines.findIndex((l) => l.replace(/^\t+/, "") === delim);
          const body = (end < 0 ? lines : lines.slice(0, end)).join("\n");
          tokens.push({ k: "op", op: "<<<" }, { k: "word", parts: [{ t: "lit", s: body, quoted: true }] });
          skips.push([bodyStart, end < 0 ? src.length : bodyStart + lines.slice(0, end + 1).join("\n").length]);
          i += m[0].length;
          continue;
        }
      }
      endWord();
      tokens.push({ k: "op", op });
      i += op.length;
      // The line ending: skip the bodies of here-documents opened on it.
      if (op === "\n") {
        for (const [from, to] of skips) if (from === i) i = to;
      }
      continue;
    }
    pushLit(c, false);
    i++;
  }
  endWord();
  return tokens;
}

function safeCodePoint(n: number): string {
  return Number.isFinite(n) && n >= 0 && n <= 0x10ffff ? String.fromCodePoint(n) : "";
}

/** A word's possible values: alternatives (quote-removed), and whether part of it is unknown. */
interface Expanded {
  values: string[];
  /** Some expansion in it could not be computed (it is read as empty in `values`). */
  unknown: boolean;
  /** The word with its unquoted glob characters kept as a glob (others escaped), when it has any. */
  glob?: string;
}

/** Per-line state: variables assigned so far (alternatives; undefined = assigned something unknown). */
interface Env {
  vars: Map<string, string[] | undefined>;
  opts: ShellOptions;
  depth: number;
  texts: string[];
  unresolved?: string;
  /** The directory the next command runs in (`cd` changes it). */
  cwd: string;
}

function lookup(env: Env, name: string): string[] | undefined {
  if (env.vars.has(name)) return env.vars.get(name);
  const known = KNOWN_ENV[name];
  return known === undefined ? undefined : [known(env.opts)];
}

/** Applies a ${NAME<op><arg>} operator to a known value; undefined if unsupported. */
function applyOp(v: string | undefined, op: string, arg: string): string | undefined {
  switch (op) {
    case "":
      return v;
    case "len":
      return v === undefined ? undefined : String(v.length);
    case "-":
    case "=":
      return v ?? arg;
    case ":-":
    case ":=":
      return v === undefined || v === "" ? arg : v;
    case "+":
      return v === undefined ? "" : arg;
    case ":+":
      return v === undefined || v === "" ? "" : arg;
    case "?":
    case ":?":
      return v;
    case ":": {
      if (v === undefined) return undefined;
      const m = /^\s*(-?\d+)\s*(?::\s*(-?\d+))?\s*$/.exec(arg.replace(/^ /, ""));
      if (m === null) return undefined;
      let off = Number(m[1]);
      if (off < 0) off = Math.max(0, v.length + off);
      if (m[2] === undefined) return v.slice(off);
      const len = Number(m[2]);
      return len < 0 ? v.slice(off, v.length + len) : v.slice(off, off + len);
    }
    case "/":
    case "//": {
      if (v === undefined) return undefined;
      const slash = arg.indexOf("/");
      const pat = slash < 0 ? arg : arg.slice(0, slash);
      const rep = slash < 0 ? "" : arg.slice(slash + 1);
      if (/[*?[]/.test(pat) || pat === "") return undefined;
      return op === "//" ? v.split(pat).join(rep) : v.replace(pat, () => rep);
    }
    case "^^":
      return v?.toUpperCase();
    case ",,":
      return v?.toLowerCase();
    case "^":
      return v === undefined ? undefined : v.charAt(0).toUpperCase() + v.slice(1);
    case ",":
      return v === undefined ? undefined : v.charAt(0).toLowerCase() + v.slice(1);
    case "%":
    case "%%":
    case "#":
    case "##": {
      if (v === undefined || /[*?[]/.test(arg)) return undefined;
      if (op.startsWith("%")) return v.endsWith(arg) ? v.slice(0, v.length - arg.length) : v;
      return v.startsWith(arg) ? v.slice(arg.length) : v;
    }
    default:
      return undefined;
  }
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

/** A word's values under env: quotes removed, variables and substitutions expanded where known. */
function expandWord(parts: Part[], env: Env): Expanded {
  // Most words are one literal with nothing to expand.
  const only = parts.length === 1 ? parts[0] : undefined;
  if (only?.t === "lit" && (only.quoted || !PLAIN_EXPANSION_RE.test(only.s))) return { values: [only.s], unknown: false };
  let values = [""];
  let globs = [""];
  let unknown = false;
  let hasGlob = false;
  const append = (alts: string[], glob: (s: string) => string): void => {
    const nv: string[] = [];
    const ng: string[] = [];
    for (let a = 0; a < values.length; a++) {
      for (const alt of alts) {
        if (nv.length >= MAX_ALTERNATIVES) break;
        nv.push((values[a] as string) + alt);
        ng.push((globs[a] as string) + glob(alt));
      }
    }
    values = nv;
    globs = ng;
  };
  const escapeGlob = (s: string): string => (GLOB_ESCAPE_RE.test(s) ? s.replace(/[*?[\]\\]/g, "\\$&") : s);
  parts.forEach((p, idx) => {
    if (p.t === "lit") {
      let s = p.s;
      if (!p.quoted && idx === 0 && s.startsWith("~")) {
        const m = /^~([a-z_][a-z0-9_-]*)?(?=\/|$)/.exec(s);
        if (m !== null) s = (m[1] === undefined ? env.opts.home : m[1] === "root" ? "/root" : `/home/${m[1]}`) + s.slice(m[0].length);
      }
      const alts = p.quoted ? [s] : braces(s);
      if (!p.quoted && GLOB_CHARS_RE.test(s)) hasGlob = true;
      append(alts, p.quoted ? escapeGlob : (x) => x);
      return;
    }
    if (p.t === "unknown") {
      unknown = true;
      return;
    }
    let alts: string[] | undefined;
    if (p.t === "var") {
      const base = lookup(env, p.name);
      const arg = expandWord(tokenize(p.arg).flatMap((t) => (t.k === "word" ? t.parts : [])), env).values[0] ?? "";
      if (base === undefined) {
        const v = applyOp(undefined, p.op, arg);
        if (v === undefined) unknown = true;
        else alts = [v];
        // An unknown variable may also be unset: read as empty (`rm -rf $X/` is `rm -rf /`).
      } else {
        const vs = base.map((b) => applyOp(b, p.op, arg));
        if (vs.some((v) => v === undefined)) unknown = true;
        alts = vs.filter((v): v is string => v !== undefined);
      }
    } else if (p.proc === true) {
      // <(cmd) is a path to cmd's output: the command is checked, the word is a file name.
      substitute(p.src, env);
      alts = ["/dev/fd/63"];
    } else {
      const out = substitute(p.src, env);
      if (out === undefined) unknown = true;
      else alts = [out];
    }
    if (alts !== undefined && alts.length > 0) {
      // Unquoted, an expansion's glob characters are live: `$X` with X='/etc/pass*' globs.
      if (!p.quoted && alts.some((a) => GLOB_CHARS_RE.test(a))) hasGlob = true;
      append(alts, p.quoted ? escapeGlob : (x) => x);
    }
  });
  return { values, unknown, ...(hasGlob ? { glob: globs[0] } : {}) };
}

/** Output of `$(...)`: analysed as a line of its own, its value computed if it is a static pipeline. */
function substitute(src: string, env: Env): string | undefined {
  if (env.depth >= MAX_DEPTH) return undefined;
  const inner: Env = { vars: new Map(env.vars), opts: env.opts, depth: env.depth + 1, texts: env.texts, cwd: env.cwd };
  const out = runLine(tokenize(src), inner);
  if (inner.unresolved !== undefined) env.unresolved ??= inner.unresolved;
  return out === undefined ? undefined : out.replace(/\n+$/, "");
}

/** The output of a command whose output the guard can compute from literals, else undefined. */
function staticOutput(words: string[], stdin: string | undefined): string | undefined {
  const [cmd, ...args] = words;
  switch (cmd) {
    case "echo": {
      let escapes = false;
      let newline = true;
      while (args[0] !== undefined && /^-[neE]+$/.test(args[0])) {
        const f = args.shift() as string;
        if (f.includes("e")) escapes = true;
        if (f.includes("n")) newline = false;
      }
      const text = args.join(" ");
      return (escapes ? unescapePrintf(text) : text) + (newline ? "\n" : "");
    }
    case "printf": {
      const fmt = args.shift();
      if (fmt === undefined) return undefined;
      let k = 0;
      const out = unescapePrintf(fmt).replace(/%([%sbdq])/g, (_m, f: string) => {
        if (f === "%") return "%";
        const a = args[k++] ?? "";
        return f === "b" ? unescapePrintf(a) : a;
      });
      return out;
    }
    case "cat":
      return args.length === 0 || (args.length === 1 && args[0] === "-") ? stdin : undefined;
    case "rev":
      return stdin?.split("\n").map((l) => [...l].reverse().join("")).join("\n");
    case "base64":
      if (stdin === undefined || !args.some((a) => a === "-d" || a === "--decode" || a === "-D")) return undefined;
      return Buffer.from(stdin.replace(/\s+/g, ""), "base64").toString("latin1");
    case "xxd":
      if (stdin === undefined || !(args.includes("-r") && args.includes("-p"))) return undefined;
      return Buffer.from(stdin.replace(/[^0-9a-fA-F]/g, ""), "hex").toString("latin1");
    case "tr": {
      if (stdin === undefined) return undefined;
      if (args[0] === "-d" && args.length === 2) {
        const del = new Set(trSet(args[1] as string));
        return [...stdin].filter((c) => !del.has(c)).join("");
      }
      if (args.length !== 2 || (args[0] as string).startsWith("-")) return undefined;
      const from = trSet(args[0] as string);
      const to = trSet(args[1] as string);
      if (from.length === 0 || to.length === 0) return undefined;
      const map = new Map<string, string>();
      from.forEach((c, idx) => map.set(c, to[Math.min(idx, to.length - 1)] as string));
      return [...stdin].map((c) => map.get(c) ?? c).join("");
    }
    default:
      return undefined;
  }
}

/** A tr set: ranges (`a-z`), `[:lower:]`-style classes and escapes spelled out. */
function trSet(s: string): string[] {
  const classes: Record<string, string> = { "[:lower:]": "a-z", "[:upper:]": "A-Z", "[:digit:]": "0-9", "[:alpha:]": "a-zA-Z", "[:alnum:]": "a-zA-Z0-9" };
  const t = unescapePrintf(s.replace(/\[:[a-z]+:\]/g, (m) => classes[m] ?? m));
  const out: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const a = t.charCodeAt(i);
    if (t[i + 1] === "-" && i + 2 < t.length) {
      const b = t.charCodeAt(i + 2);
      for (let c = a; c <= b && out.length < 1024; c++) out.push(String.fromCharCode(c));
      i += 2;
    } else out.push(t[i] as string);
  }
  return out;
}

/** printf's and echo -e's backslash escapes. */
function unescapePrintf(s: string): string {
  return s.replace(/\\(0?[0-7]{1,3}|x[0-9a-fA-F]{1,2}|.)/gs, (_m, e: string) => {
    if (/^[0-7]/.test(e)) return safeCodePoint(parseInt(e, 8));
    if (e.startsWith("x") && e.length > 1) return safeCodePoint(parseInt(e.slice(1), 16));
    const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", f: "\f", v: "\v", "\\": "\\" };
    return simple[e] ?? `\\${e}`;
  });
}

/** One simple command: its words, and the here-string or redirected input it reads. */
interface Simple {
  words: Token[];
  hereString?: Word;
  /** Reads a file on stdin (`< file`). */
  fileInput: boolean;
  /** Its redirections as text (`> /dev/sda`), rendered after its words. */
  redirs: string[];
}

/**
 * Runs the guard's static reading of one line: records expanded texts and unresolved command
 * positions in env; returns the line's output when every command in its last pipeline is a
 * static text command (for `$(...)`), else undefined.
 */
function runLine(tokens: Token[], env: Env): string | undefined {
  const rendered: string[][] = [];
  let pipeline: Simple[] = [];
  let cur: Simple = { words: [], fileInput: false, redirs: [] };
  let output: string | undefined;
  const finishPipeline = (): void => {
    if (cur.words.length > 0 || cur.redirs.length > 0) pipeline.push(cur);
    cur = { words: [], fileInput: false, redirs: [] };
    if (pipeline.length === 0) return;
    output = runPipeline(pipeline, env, rendered);
    pipeline = [];
  };
  let commands = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.k === "word") {
      cur.words.push(t);
      continue;
    }
    if (++commands > MAX_COMMANDS) {
      // Reading more would cost the gate more than the call is worth: not read, not guessed.
      env.unresolved ??= "too many commands to read";
      break;
    }
    if (t.op === "|" || t.op === "|&") {
      pipeline.push(cur);
      cur = { words: [], fileInput: false, redirs: [] };
    } else if (t.op === "<<<" || t.op === "<") {
      const next = tokens[i + 1];
      if (next?.k === "word") {
        i++;
        if (t.op === "<<<") cur.hereString = next;
        else cur.fileInput = true;
        cur.redirs.push(`${t.op} ${expandWord(next.parts, env).values[0] ?? ""}`);
      }
    } else if (t.op === ">" || t.op === ">>" || t.op === "&>" || t.op === ">&" || t.op === "<<") {
      const next = tokens[i + 1];
      if (next?.k === "word") {
        i++;
        cur.redirs.push(`${t.op} ${expandWord(next.parts, env).values[0] ?? ""}`);
      }
    } else {
      finishPipeline();
      rendered.push([t.op === "\n" ? ";" : t.op]);
    }
  }
  finishPipeline();
  // The line as text, once per variant (a command with alternatives, e.g. a for-loop's words).
  const variants = Math.min(MAX_ALTERNATIVES, Math.max(1, ...rendered.map((r) => r.length)));
  for (let v = 0; v < variants; v++) {
    env.texts.push(rendered.map((r) => (r.length === 0 ? "" : (r[v % r.length] as string))).filter((w) => w !== "").join(" "));
  }
  return output;
}

/** Runs one pipeline: each command's words expanded, its command position checked, its output computed if static. */
function runPipeline(pipeline: Simple[], env: Env, rendered: string[][]): string | undefined {
  let stdin: string | undefined;
  let piped = false;
  for (const simple of pipeline) {
    if (piped) rendered.push(["|"]);
    const here = simple.hereString === undefined ? undefined : (expandWord(simple.hereString.parts, env).values[0] ?? "") + "\n";
    const input = here ?? (piped ? stdin : undefined);
    const computedInput = here === undefined && piped;
    const out = runSimple(simple, env, rendered, input, computedInput && stdin === undefined);
    stdin = out;
    piped = true;
  }
  return stdin;
}

/** Splits leading NAME=value words off a command; records them as variables. */
function assignments(words: Token[], env: Env): Token[] {
  let k = 0;
  for (; k < words.length; k++) {
    const w = words[k] as Token & { k: "word" };
    const first = w.parts[0];
    if (first?.t !== "lit" || first.quoted) break;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\+?=/.exec(first.s);
    if (m === null) break;
    const rest: Part[] = [{ ...first, s: first.s.slice(m[0].length) }, ...w.parts.slice(1)];
    const e = expandWord(rest, env);
    env.vars.set(m[1] as string, e.unknown ? undefined : e.values);
  }
  return words.slice(k);
}

/**
 * One simple command. `input` is its static stdin, `unknownInput` says it reads a pipe the
 * guard could not compute. Returns its output when static.
 */
function runSimple(simple: Simple, env: Env, rendered: string[][], input: string | undefined, unknownInput: boolean): string | undefined {
  const words = assignments(simple.words, env);
  // `export X=1`, `local X=1`, `declare X=1`: assignments too.
  const head0 = words[0];
  if (head0?.k === "word" && head0.parts.length === 1 && head0.parts[0]?.t === "lit" && ["export", "local", "declare", "readonly", "typeset"].includes(head0.parts[0].s)) {
    assignments(words.slice(1).filter((w) => !(w.k === "word" && w.parts[0]?.t === "lit" && w.parts[0].s.startsWith("-"))), env);
  }
  // Words as the command sees them: unquoted empty expansions vanish.
  let argv: Expanded[] = [];
  let tokensOf: Word[] = [];
  for (const w of words) {
    if (w.k !== "word") continue;
    const e = expandWord(w.parts, env);
    if (e.values.every((v) => v === "") && !w.parts.every((p) => p.quoted)) {
      // A computed command name that may be empty still hides the command.
      if (e.unknown && argv.length === 0) env.unresolved ??= "computed command name";
      continue;
    }
    argv.push(e);
    tokensOf.push(w);
  }
  // `for NAME in a b c`: the loop variable takes each word.
  if (argv[0]?.values[0] === "for" && argv[2]?.values[0] === "in") {
    const name = argv[1]?.values[0] ?? "";
    const vals = argv.slice(3).flatMap((e) => e.values);
    env.vars.set(name, argv.slice(3).some((e) => e.unknown) || vals.length === 0 ? undefined : vals.slice(0, MAX_ALTERNATIVES));
    rendered.push([argv.map((e) => e.values[0] ?? "").join(" ")]);
    return undefined;
  }
  // Keywords and prefix commands in front of the command name.
  let k = 0;
  for (;;) {
    const w = argv[k]?.values[0];
    if (w === undefined) break;
    const name = baseName(w);
    if (KEYWORDS.has(w) || w === "(" || w === ")") k++;
    else if (PREFIX_COMMANDS.has(name) || name === "env" || name === "timeout" || name === "watch") {
      k++;
      // Their options, `env`'s NAME=value, `timeout`'s duration.
      while (argv[k] !== undefined) {
        const o = argv[k]?.values[0] ?? "";
        if (o.startsWith("-") || (name === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(o)) || (name === "timeout" && /^[0-9.]+[smhd]?$/.test(o)) || (name === "nice" && /^-?[0-9]+$/.test(o))) k++;
        else break;
      }
    } else break;
  }
  argv = argv.slice(k);
  tokensOf = tokensOf.slice(k);
  const cmd = argv[0];
  if (cmd === undefined) {
    rendered.push(simple.redirs.length > 0 ? [simple.redirs.join(" ")] : []);
    return undefined;
  }
  // The command name: a glob is read as every dangerous command it could name.
  let names = cmd.values;
  if (cmd.glob !== undefined) {
    const re = compileGlob(cmd.glob);
    const hits = DANGEROUS_COMMANDS.flatMap((c) => [c, ...BIN_DIRS.map((d) => d + c)]).filter((c) => re.test(c));
    if (hits.length > 0) names = [...new Set(hits.map(baseName))];
  }
  if (cmd.unknown) env.unresolved ??= "computed command name";
  // Render the command: one variant per alternative of its most varied word.
  const nVariants = Math.min(MAX_ALTERNATIVES, Math.max(names.length, ...argv.map((e) => e.values.length)));
  const lines: string[] = [];
  for (let v = 0; v < nVariants; v++) {
    lines.push([names[v % names.length] ?? "", ...argv.slice(1).map((e) => e.values[v % e.values.length] ?? ""), ...simple.redirs].join(" "));
  }
  rendered.push(lines);
  // Globbed arguments: each also read as the forbidden-looking paths it could name.
  for (const e of argv.slice(1)) if (e.glob !== undefined) env.texts.push(...globTargets(e.glob, { home: env.opts.home, cwd: env.cwd }));

  const name = baseName(names[0] ?? "");
  const args = argv.slice(1);
  const argValues = args.map((e) => e.values[0] ?? "");
  // After a `cd`, relative words are files in that directory (`cd /etc && cat shadow`).
  if (env.cwd !== env.opts.cwd) {
    for (const a of argValues) if (a !== "" && !a.startsWith("-") && !a.startsWith("/")) env.texts.push(posix.resolve(env.cwd, a));
  }
  if (name === "cd" || name === "pushd") {
    const dir = args.find((e) => !(e.values[0] ?? "").startsWith("-"));
    // `cd $(mktemp -d)`: an argument that expanded to nothing is unknown, not absent.
    const droppedArg = words.length > argv.length + k;
    if (dir === undefined && droppedArg) return undefined;
    if (dir === undefined) env.cwd = env.opts.home;
    else if (!dir.unknown) env.cwd = posix.resolve(env.cwd, dir.values[0] ?? "");
    return undefined;
  }
  const nested = (text: string | undefined, what: string): void => {
    if (text === undefined) {
      env.unresolved ??= what;
      return;
    }
    if (env.depth >= MAX_DEPTH || text.length > MAX_SOURCE) {
      env.unresolved ??= what;
      return;
    }
    const inner: Env = { vars: env.vars, opts: env.opts, depth: env.depth + 1, texts: env.texts, cwd: env.cwd };
    runLine(tokenize(text), inner);
    if (inner.unresolved !== undefined) env.unresolved ??= inner.unresolved;
  };
  const anyUnknown = args.some((e) => e.unknown);
  if (name === "eval") {
    nested(anyUnknown ? undefined : argValues.join(" "), "eval of a computed string");
    return undefined;
  }
  if (SHELLS.has(name) || name === "source" || name === ".") {
    const c = args.findIndex((e) => /^-[a-z]*c[a-z]*$/.test(e.values[0] ?? ""));
    if (c >= 0 && SHELLS.has(name)) {
      const script = args[c + 1];
      nested(script === undefined || script.unknown ? undefined : script.values[0], "shell -c of a computed string");
      return undefined;
    }
    const operand = args.find((e) => !(e.values[0] ?? "").startsWith("-") || e.values[0] === "-");
    const op = operand?.values[0];
    const readsStdin = operand === undefined || op === "-" || op === "/dev/stdin" || op === "/proc/self/fd/0";
    if (operand !== undefined && !readsStdin) {
      // `bash <(curl ...)`, `source <(...)`: the script is the substitution's output.
      const part = tokensOf[argv.indexOf(operand)]?.parts[0];
      if (part?.t === "sub" && part.proc === true) nested(substitute(part.src, { ...env, texts: [] }), "shell reading computed input");
      return undefined;
    }
    if (input !== undefined) nested(input, "shell reading computed input");
    else if (unknownInput) env.unresolved ??= "shell reading computed input";
    return undefined;
  }
  if (name === "xargs") {
    // `echo / | xargs rm -rf`: the command after xargs's options gets stdin's words.
    let j = 0;
    while (j < args.length && (args[j]?.values[0] ?? "").startsWith("-")) j++;
    const rest = argValues.slice(j);
    if (rest.length > 0) nested(`${rest.map(shellQuote).join(" ")}${input === undefined ? "" : ` ${input.split(/\s+/).filter((x) => x !== "").map(shellQuote).join(" ")}`}`, "xargs of a computed command");
    return undefined;
  }
  if (name === "find") {
    // find's -exec/-execdir/-ok run the words up to `;` or `+` as a command.
    const at = argValues.findIndex((a) => a === "-exec" || a === "-execdir" || a === "-ok" || a === "-okdir");
    if (at >= 0) {
      const body: string[] = [];
      for (let j = at + 1; j < argValues.length && argValues[j] !== ";" && argValues[j] !== "+"; j++) body.push(argValues[j] as string);
      if (body.length > 0) nested(body.map(shellQuote).join(" "), "find -exec of a computed command");
    }
    return undefined;
  }
  if (cmd.unknown || anyUnknown) return undefined;
  return staticOutput([name, ...argValues], input);
}

/** A value as one shell word (argv elements are not re-split or expanded). */
export function shellQuote(s: string): string {
  return /^[\w./=:@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function baseName(w: string): string {
  const slash = w.lastIndexOf("/");
  return slash >= 0 && slash < w.length - 1 ? w.slice(slash + 1) : w;
}

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
      let body = glob.slice(i + 1, end);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      let set = "";
      for (let j = 0; j < body.length; j++) {
        if (body[j + 1] === "-" && j + 2 < body.length) {
          for (let x = body.charCodeAt(j); x <= body.charCodeAt(j + 2) && set.length < 256; x++) set += String.fromCharCode(x);
          j += 2;
        } else set += body[j] as string;
      }
      toks.push({ k: "class", set, negated, segStart });
      i = end;
    } else toks.push({ k: "char", c, segStart });
  }
  const n = toks.length;
  // Closure: a star or globstar may match nothing, so a state at it also stands after it.
  const close = (states: Uint8Array): void => {
    for (let k = 0; k < n; k++) if (states[k] === 1 && (toks[k]?.k === "star" || toks[k]?.k === "globstar")) states[k + 1] = 1;
  };
  return {
    test(s: string): boolean {
      let cur = new Uint8Array(n + 1);
      cur[0] = 1;
      close(cur);
      for (let i = 0; i < s.length; i++) {
        const ch = s[i] as string;
        const atSegStart = i === 0 || s[i - 1] === "/";
        const next = new Uint8Array(n + 1);
        let any = false;
        for (let k = 0; k < n; k++) {
          if (cur[k] !== 1) continue;
          const t = toks[k] as GlobTok;
          const hidden = ch === "." && atSegStart && t.k !== "char" && t.k !== "globstar" && t.segStart;
          switch (t.k) {
            case "char":
              if (t.c === ch) next[k + 1] = 1;
              break;
            case "any":
              if (ch !== "/" && !hidden) next[k + 1] = 1;
              break;
            case "class":
              if (ch !== "/" && !hidden && t.set.includes(ch) !== t.negated) next[k + 1] = 1;
              break;
            case "star":
              if (ch !== "/" && !hidden) next[k] = 1;
              break;
            case "globstar":
              next[k] = 1;
              break;
          }
        }
        close(next);
        for (let k = 0; k <= n; k++) if (next[k] === 1) any = true;
        if (!any) return false;
        cur = next;
      }
      return cur[n] === 1;
    },
  };
}

/**
 * Sensitive paths a glob is tested against, `~` standing for the home directory: the concrete
 * files and directories behind the built-in forbidden-path patterns.
 */
const SENSITIVE_PATHS = [
  "/etc/passwd", "/etc/shadow", "/etc/sudoers", "/etc/ssh", "/etc/ssh/sshd_config", "/root", "/root/.ssh", "/boot", "/sys", "/proc/1",
  "/proc/self/environ", "/proc/self/mem", "/proc/self/root", "/proc/self/cwd", "/proc/self/fd", "/dev/sda", "/dev/nvme0n1", "/dev/mmcblk0", "/dev/loop0",
  "/var/run/secrets", "/run/secrets", "/var/run/secrets/kubernetes.io/serviceaccount/token", "/var/run/docker.sock", "/run/docker.sock",
  "~/.ssh", "~/.ssh/id_rsa", "~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/authorized_keys", "~/.aws/credentials", "~/.gnupg", "~/.kube/config",
  "/home/user/.ssh", "/home/user/.aws/credentials", "/home/user/.kube/config", "/home/user/.gnupg",
];

/**
 * The sensitive paths a glob could name, as texts for the forbidden-path patterns: a path the
 * whole glob matches, or a directory a leading part of the glob matches (then with the rest of
 * the glob after it: `~/.ss[h]/id_*` reads `/root/.ssh/id_*`).
 */
export function globTargets(glob: string, opts: ShellOptions): readonly string[] {
  // Fast reject: a glob whose first directory is literal and is no sensitive path's first
  // directory (`src/**/*.ts` under /workspace) can name none of them.
  if (!glob.includes("..")) {
    const from = glob.startsWith("/") ? glob : opts.cwd;
    const end = from.indexOf("/", 1);
    const first = from.slice(1, end < 0 ? from.length : end);
    if (!GLOB_META_RE.test(first) && !firstSegments(opts.home).has(first) && !(glob.startsWith("/home/") || opts.cwd.startsWith("/home/"))) return NO_TARGETS;
  }
  const abs = glob.startsWith("/") ? glob : `${opts.cwd}/${glob}`;
  const path = DOT_SEGMENT_RE.test(abs) ? posix.normalize(abs) : abs;
  // Only paths under the glob's literal start (or directories above it) can be named by it:
  // most globs (`src/**/*.ts`) share no start with any sensitive path and cost one scan.
  const literal = path.slice(0, path.search(GLOB_META_RE) >>> 0);
  let out: string[] | undefined;
  let segs: string[] | undefined;
  let whole: Glob | undefined;
  let prefixes: Map<number, Glob> | undefined;
  // `~` stands for the worker's home and for the home the glob itself is under (/home/u/.ss[h]).
  const own = /^\/home\/[^/*?[\\]+/.exec(path)?.[0];
  const candidates = own === undefined || own === opts.home ? sensitivePaths(opts.home) : [...sensitivePaths(opts.home), ...sensitivePaths(own).filter((c) => c.path.startsWith(own))];
  for (const p of candidates) {
    const candidate = p.path;
    if (!candidate.startsWith(literal) && !literal.startsWith(candidate)) continue;
    segs ??= path.split("/");
    const n = p.segments;
    if (n > segs.length) {
      // A `**` may still cover it.
      if (path.includes("**") && (whole ??= compileGlob(path)).test(candidate)) (out ??= []).push(candidate);
      continue;
    }
    prefixes ??= new Map<number, Glob>();
    let g = prefixes.get(n);
    if (g === undefined) {
      g = compileGlob(segs.slice(0, n).join("/"));
      prefixes.set(n, g);
    }
    if (g.test(candidate)) (out ??= []).push(n === segs.length ? candidate : `${candidate}/${segs.slice(n).join("/")}`);
  }
  return out ?? NO_TARGETS;
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

/** Reads a command line statically (see the file's header). */
export function analyseShell(src: string, opts: ShellOptions): ShellAnalysis {
  const env: Env = { vars: new Map(), opts, depth: 0, texts: [], cwd: opts.cwd };
  if (src.length > MAX_SOURCE) return { texts: [] };
  runLine(tokenize(src), env);
  const texts = [...new Set(env.texts)].filter((t) => t !== "" && t !== src);
  return env.unresolved === undefined ? { texts } : { texts, unresolved: env.unresolved };
}
