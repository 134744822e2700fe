// The texts the guard searches for one call: every string value and key nested anywhere in
// the arguments, plus decoded, shell-normalised and path-normalised views of each (docs/guard.md).
import { posix } from "node:path";
import type { JsonValue } from "../../api/types.js";
import { analyseShell, globTargets, shellQuote } from "./shell-words.js";

/** Where `~`, `$HOME` and relative paths point for the worker being guarded. */
export interface ViewOptions {
  /** Expansion of `~`, `$HOME`, `${HOME}`; default "/root" (worker containers run as root). */
  home?: string;
  /** Directory relative paths resolve against; default "/workspace". */
  cwd?: string;
}

/** Texts longer than this are split into lines and windows (see pieces). */
export const LARGE_TEXT = 4096;
const WINDOW_OVERLAP = 256;

/** How deep encoded payloads (base64, hex) are unwrapped inside each other. */
const MAX_DECODE_DEPTH = 2;

/** Commands whose path prefix (`/bin/rm`) is dropped so the bare name matches. */
const DANGEROUS_COMMANDS = new Set(["rm", "dd", "mkfs", "chmod", "chown", "curl", "wget", "sh", "bash", "zsh", "dash", "shred", "base64", "env", "sudo"]);

/** Lookalike letters (Cyrillic, Greek, Latin variants) that NFKC leaves alone, folded to ASCII. */
const CONFUSABLES: Record<string, string> = {
  "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y", "\u0445": "x",
  "\u0455": "s", "\u0456": "i", "\u0458": "j", "\u04bb": "h", "\u0501": "d", "\u0261": "g", "\u043a": "k",
  "\u043c": "m", "\u0442": "t", "\u0433": "r", "\u0410": "A", "\u0415": "E", "\u041e": "O", "\u0420": "P",
  "\u0421": "C", "\u0425": "X", "\u041c": "M", "\u0422": "T", "\u041a": "K", "\u0392": "B", "\u0395": "E",
  "\u039f": "O", "\u03bf": "o", "\u03c1": "p", "\u03b1": "a", "\u03b9": "i", "\u03ba": "k", "\u03bd": "v",
  "\u0131": "i", "\u017f": "s", "\u2044": "/", "\u2215": "/", "\u29f8": "/", "\uff0f": "/", "\u2010": "-",
  "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-", "\ufe63": "-", "\uff0d": "-",
};
const CONFUSABLE_RE = new RegExp(`[${Object.keys(CONFUSABLES).join("")}]`, "g");
// Zero-width and other format characters: invisible, so a lookalike of "rm" may hide one.
const FORMAT_CHARS_RE = /[\p{Cf}\u00ad]/gu;
const NON_ASCII_RE = /[^\x00-\x7f]/;
const PERCENT_RE = /%[0-9a-fA-F]{2}/;
const ESCAPE_RE = /\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]{1,6}\}|[0-7]{3})/;
const ENTITY_RE = /&#(?:[0-9]{1,7}|x[0-9a-fA-F]{1,6});/;
const SHELL_WORDS_RE = /\b(?:rm|chmod)\s/;
const PATH_SPLIT_RE = /[\s'"`=,:;|&<>(){}[\]]+/;
/** Characters that end a path token: PATH_SPLIT_RE's, as a table (ASCII; other spaces via \s). */
const PATH_SEPARATORS = separatorTable(" \t\n\r\v\f'\"`=,:;|&<>(){}[]");
const UNICODE_SPACE_RE = /\s/;

function separatorTable(chars: string): Uint8Array {
  const t = new Uint8Array(128);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  return t;
}

/** The path tokens of a text (tokens containing "/"), as the path views read them. */
export function pathTokens(text: string): string[] {
  const out: string[] = [];
  forEachPathToken(text, PATH_SEPARATORS, (t) => out.push(t));
  return out;
}

/** Calls fn with each token of text (split at the separators) that contains a "/", without building an array. */
function forEachPathToken(text: string, separators: Uint8Array, fn: (tok: string) => void): void {
  let start = 0;
  let slash = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32;
    const sep = c < 128 ? separators[c] === 1 : UNICODE_SPACE_RE.test(text.charAt(i));
    if (!sep) {
      if (c === 47) slash = true;
      continue;
    }
    if (slash) fn(text.slice(start, i));
    start = i + 1;
    slash = false;
  }
}
const DOT_SEGMENT_RE = /(^|\/)\.\.?(\/|$)|\/\//;
const BASE64_TOKEN_RE = /[A-Za-z0-9+/_-]{12,}={0,2}/g;
const HEX_TOKEN_RE = /\b(?:[0-9a-fA-F]{2}){6,}\b/g;

// What one pass over a text's characters learns, so that each later step is a bit test
// instead of a regex scan of its own (most values need none of the steps).
const F_NONWORD = 1; // anything but [A-Za-z0-9_.-]: the text is not a plain word
const F_ENCODED = 2; // non-ASCII, %, \ or &: deobfuscate may change it
const F_SHELL = 4; // quotes, $, `, (){};|&<>, tab, CR, LF: shell syntax
const F_SLASH = 8;
const F_TILDE = 16;
const F_UPPER = 32;
const F_LOWER = 64;
const F_DIGIT = 128;
const F_EQUALS = 256;
const F_SPACE = 512;
const F_GLOB = 1024; // * ? [ {: glob or brace expansion
const CHAR_FLAGS = (() => {
  const t = new Uint16Array(128);
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    let f = /[\w.-]/.test(ch) ? 0 : F_NONWORD;
    if ("%\\&".includes(ch)) f |= F_ENCODED;
    if ("'\"\\$`(){};|&<>\t\n\r".includes(ch)) f |= F_SHELL;
    if (ch === "/") f |= F_SLASH;
    if (ch === "~") f |= F_TILDE;
    if (ch >= "A" && ch <= "Z") f |= F_UPPER;
    if (ch >= "a" && ch <= "z") f |= F_LOWER;
    if (ch >= "0" && ch <= "9") f |= F_DIGIT;
    if (ch === "=") f |= F_EQUALS;
    if (ch === " ") f |= F_SPACE;
    if ("*?[{".includes(ch)) f |= F_GLOB;
    t[c] = f;
  }
  return t;
})();

/** The F_* flags of a text: the OR of its characters' flags. */
function charFlags(s: string): number {
  let f = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    f |= c < 128 ? (CHAR_FLAGS[c] as number) : F_NONWORD | F_ENCODED;
  }
  return f;
}

/** Whether a text has anything shellNormalise would change. */
function hasShellSyntax(s: string, flags = charFlags(s)): boolean {
  return (flags & F_SHELL) !== 0 || ((flags & F_SPACE) !== 0 && (s.includes("  ") || SHELL_WORDS_RE.test(s)));
}

/** Every text the guard's patterns are searched in, deduplicated, originals first. */
export function argumentViews(args: JsonValue, options: ViewOptions = {}): string[] {
  return callViews(args, options, false).views;
}

/** A call's argument views, and why its shell command could not be read statically (if so). */
export interface CallViews {
  views: string[];
  /**
   * Set for a shell-capable tool whose command has a part no static reading resolves: a
   * computed command name, `eval`/`sh -c` of a computed string, a shell reading computed input.
   */
  unresolved?: string;
}

/** Argument fields a shell-capable tool runs as a command line (vaglio reads `command` or `cmd`). */
const SHELL_FIELDS = ["command", "cmd", "script", "shell", "argv", "commandLine", "command_line"];
/** Fields naming the directory a command runs in. */
const CWD_FIELDS = ["cwd", "workdir", "working_dir", "workingDirectory", "dir"];

/**
 * The argument views (argumentViews) plus the static shell reading of the command fields;
 * `shellTool` says whether what cannot be resolved counts (the tool runs a shell).
 */
export function callViews(args: JsonValue, options: ViewOptions, shellTool: boolean): CallViews {
  const ctx: Ctx = { home: options.home ?? "/root", cwd: options.cwd ?? "/workspace", seen: new Seen(), out: [], lineFlags: 0 };
  walk(args, ctx, 0);
  let unresolved: string | undefined;
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    let cwd = ctx.cwd;
    for (const f of CWD_FIELDS) {
      const v = args[f];
      if (typeof v === "string" && v.startsWith("/")) {
        cwd = normalisePath(v, ctx.cwd);
        break;
      }
    }
    for (const f of SHELL_FIELDS) {
      const v = args[f];
      let line: string | undefined;
      if (typeof v === "string") line = v;
      else if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string")) line = (v).map(shellQuote).join(" ");
      if (line === undefined || line.length > LARGE_TEXT) continue;
      const why = shellLine(line, cwd, ctx);
      if (shellTool) unresolved ??= why;
    }
  }
  return unresolved === undefined ? { views: ctx.out } : { views: ctx.out, unresolved };
}

/**
 * Views a command line as the shell would run it (shell-words.ts): each expanded line, with its
 * paths resolved against the command's directory. Returns what could not be resolved, if anything.
 */
function shellLine(line: string, cwd: string, ctx: Ctx): string | undefined {
  const decoded = deobfuscate(line);
  let unresolved: string | undefined;
  for (const text of decoded === line ? [line] : [line, decoded]) {
    const flags = charFlags(text);
    if ((flags & (F_SHELL | F_GLOB | F_TILDE)) === 0 && cwd === ctx.cwd) continue;
    const analysis = analyseShell(text, { home: ctx.home, cwd });
    unresolved ??= analysis.unresolved;
    const saved = ctx.cwd;
    ctx.cwd = cwd;
    try {
      for (const t of analysis.texts) {
        if (t.length > LARGE_TEXT) continue;
        add(t, ctx);
        viewsOf(t, charFlags(t), ctx, MAX_DECODE_DEPTH - 1);
      }
      // A command run in another directory: its bare words may be file names there.
      if (cwd !== saved) {
        for (const t of [text, ...analysis.texts]) {
          for (const w of t.split(PATH_SPLIT_RE)) if (w !== "" && !w.startsWith("-") && !w.includes("/")) add(normalisePath(w, cwd), ctx);
        }
      }
    } finally {
      ctx.cwd = saved;
    }
  }
  return unresolved;
}

interface Ctx {
  home: string;
  cwd: string;
  seen: Seen;
  out: string[];
  /** charFlags of the line walk() last returned, so a joined line is not scanned again. */
  lineFlags: number;
}

/**
 * Texts already viewed: a linear scan while they are few (most calls; no hash table to
 * allocate and grow), a Set once there are more.
 */
class Seen {
  private readonly list: string[] = [];
  private set: Set<string> | undefined;

  has(s: string): boolean {
    if (this.set !== undefined) return this.set.has(s);
    for (const x of this.list) if (x === s) return true;
    return false;
  }

  add(s: string): void {
    if (this.set !== undefined) this.set.add(s);
    else if (this.list.push(s) > 48) this.set = new Set(this.list);
  }
}

function add(s: string, ctx: Ctx): void {
  if (ctx.seen.has(s)) return;
  ctx.seen.add(s);
  ctx.out.push(s);
}

/** Arguments nested deeper than this are refused rather than walked (no stack to exhaust). */
export const MAX_NESTING = 64;

/** Thrown for arguments nested deeper than MAX_NESTING; the guard denies such a call. */
export class NestingTooDeep extends Error {
  override readonly name = "NestingTooDeep";
}

/** Views v and everything in it; returns v's words as one line when v is a string or an array of strings. */
function walk(v: JsonValue, ctx: Ctx, level: number): string | undefined {
  if (level > MAX_NESTING) throw new NestingTooDeep(`arguments nested deeper than ${MAX_NESTING} levels`);
  if (typeof v === "string") {
    ctx.lineFlags = addString(v, ctx, 0);
    return v;
  }
  if (typeof v === "number") add(String(v), ctx);
  else if (Array.isArray(v)) {
    let line: string | undefined;
    let allStrings = true;
    let flags = 0;
    for (const item of v) {
      walk(item, ctx, level + 1);
      if (typeof item !== "string") allStrings = false;
      else if (allStrings) {
        line = line === undefined ? item : `${line} ${item}`;
        flags |= ctx.lineFlags;
      }
    }
    // An argv array is a command too: vaglio joins a list-valued command with spaces.
    if (!allStrings || line === undefined) return undefined;
    if (v.length > 1) flags |= F_SPACE | F_NONWORD;
    if (v.length > 1) addJoined(line, flags, ctx);
    ctx.lineFlags = flags;
    return line;
  } else if (v !== null && typeof v === "object") {
    let line: string | undefined;
    let words = 0;
    let flags = F_SPACE | F_NONWORD;
    let dirs: string[] | undefined;
    let names: string[] | undefined;
    for (const k of Object.keys(v)) {
      addString(k, ctx, 0);
      const item = v[k] as JsonValue;
      const w = walk(item, ctx, level + 1);
      if (w !== undefined) {
        line = line === undefined ? w : `${line} ${w}`;
        flags |= ctx.lineFlags;
        words += typeof item === "string" ? 1 : (item as JsonValue[]).length;
        // One-word values: a directory and a name a tool may join into one path.
        if (typeof item === "string" && (ctx.lineFlags & (F_SPACE | F_SHELL)) === 0 && item.length <= 256 && item !== "") {
          if (item.startsWith("/") || item.startsWith("~")) (dirs ??= []).push(item);
          else if (!item.startsWith("-") && !item.includes("://")) (names ??= []).push(item);
        }
      }
    }
    // A command split into fields ({cmd: "rm", args: ["-rf", "/"]}) is read as one line too.
    if (line !== undefined && words > 1) addJoined(line, flags, ctx);
    // A path split into fields ({dir: "/etc", file: "passwd"}) is read joined too.
    if (dirs !== undefined && names !== undefined) {
      for (const d of dirs.slice(0, 8)) {
        const dir = expandHome(d, ctx.home);
        for (const n of names.slice(0, 8)) add(normalisePath(`${dir}/${n}`, ctx.cwd), ctx);
      }
    }
  }
  return undefined;
}

/**
 * A line joined from several values: its words, paths and payloads were already viewed one by
 * one, so only what spans the values (a command and its flags) is new.
 */
function addJoined(s: string, flags: number, ctx: Ctx): void {
  if (s.length > LARGE_TEXT || ctx.seen.has(s)) return;
  ctx.seen.add(s);
  ctx.out.push(s);
  const decoded = (flags & F_ENCODED) === 0 ? s : deobfuscate(s);
  if (decoded !== s) add(decoded, ctx);
  if (decoded === s ? hasShellSyntax(s, flags) : hasShellSyntax(decoded)) add(shellNormalise(decoded), ctx);
}

/** Views one value (and what it decodes to); returns its charFlags (all set for a large text). */
function addString(s: string, ctx: Ctx, depth: number): number {
  if (s.length > LARGE_TEXT) {
    if (depth === 0 && ctx.seen.has(s)) return ~0;
    ctx.seen.add(s);
    for (const piece of pieces(s)) addString(piece, ctx, depth);
    return ~0;
  }
  const flags = charFlags(s);
  if (ctx.seen.has(s)) {
    if (depth === 0) return flags;
  } else {
    ctx.seen.add(s);
    ctx.out.push(s);
  }
  // A plain word (most keys, names, flags) has no path, shell syntax or escape to unfold;
  // only a long one may still be an unpadded base64 or hex payload.
  if ((flags & F_NONWORD) === 0) {
    if (s.length >= 12 && depth < MAX_DECODE_DEPTH) for (const payload of encodedPayloads(s, flags)) addString(payload, ctx, depth + 1);
    return flags;
  }
  const decoded = (flags & F_ENCODED) === 0 ? s : deobfuscate(s);
  viewsOf(s, flags, ctx, depth);
  if (decoded !== s) {
    add(decoded, ctx);
    viewsOf(decoded, charFlags(decoded), ctx, depth);
  }
  return flags;
}

/** The shell-normalised, home-expanded and path views of one (decoded or raw) text, and its payloads. */
function viewsOf(base: string, flags: number, ctx: Ctx, depth: number): void {
  let text = base;
  if (hasShellSyntax(base, flags)) {
    text = shellNormalise(base);
    if (text !== base) add(text, ctx);
  }
  if ((flags & F_TILDE) !== 0 || ((flags & F_UPPER) !== 0 && text.includes("HOME"))) {
    const expanded = expandHome(text, ctx.home);
    if (expanded !== text) add(expanded, ctx);
    text = expanded;
  }
  if (text.includes("/")) {
    forEachPathToken(text, PATH_SEPARATORS, (tok) => add(normalisePath(tok, ctx.cwd), ctx));
    // A value that is one glob (a path or glob argument; not prose or file content, where
    // `/**` opens a comment and nothing expands it) names every path it matches: read it as
    // the sensitive ones it could name. Command fields get this from the shell reading.
    if ((flags & F_GLOB) !== 0 && (flags & (F_SPACE | F_SHELL)) === 0 && /[*?[]/.test(text)) {
      for (const target of globTargets(text, { home: ctx.home, cwd: ctx.cwd })) add(target, ctx);
    }
  }
  if (depth < MAX_DECODE_DEPTH) {
    for (const payload of encodedPayloads(base, flags)) addString(payload, ctx, depth + 1);
  }
}

/**
 * A long text (file content, a blob) is viewed line by line, and a long line in overlapping
 * windows: RE2 in JavaScript is slow per character, and the prefilter then sends only the few
 * lines that contain a literal to it. A match longer than WINDOW_OVERLAP that crosses a window
 * edge, or one spanning lines of a long text, is not seen (docs/guard.md).
 */
function pieces(s: string): string[] {
  const out: string[] = [];
  for (const line of s.split(/\r?\n/)) {
    if (line.length <= LARGE_TEXT) out.push(line);
    else for (let i = 0; i < line.length; i += LARGE_TEXT - WINDOW_OVERLAP) out.push(line.slice(i, i + LARGE_TEXT));
  }
  return out;
}

/** Undoes the encodings a model or an attacker may wrap text in: lookalikes, %XX, \xHH, &#NN;. */
export function deobfuscate(s: string): string {
  if ((charFlags(s) & F_ENCODED) === 0) return s;
  let t = s;
  if (NON_ASCII_RE.test(t)) {
    t = t.normalize("NFKC").replace(FORMAT_CHARS_RE, "").replace(CONFUSABLE_RE, (c) => CONFUSABLES[c] ?? c);
  }
  for (let i = 0; i < 3 && PERCENT_RE.test(t); i++) t = percentDecode(t);
  if (ESCAPE_RE.test(t)) t = decodeEscapes(t);
  if (ENTITY_RE.test(t)) {
    t = t.replace(/&#(x?)([0-9a-fA-F]+);/g, (m, x: string, n: string) => codePoint(parseInt(n, x === "" ? 10 : 16)) ?? m);
  }
  return t;
}

function codePoint(n: number): string | undefined {
  return Number.isFinite(n) && n >= 0 && n <= 0x10ffff ? String.fromCodePoint(n) : undefined;
}

function percentDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    // Invalid UTF-8 sequences: decode byte by byte rather than give up on the whole text.
    return s.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
}

function decodeEscapes(s: string): string {
  return s.replace(/\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]{1,6})\}|([0-7]{3}))/g, (m, x?: string, u?: string, ub?: string, o?: string) => {
    const n = x !== undefined ? parseInt(x, 16) : u !== undefined ? parseInt(u, 16) : ub !== undefined ? parseInt(ub, 16) : parseInt(o ?? "", 8);
    return codePoint(n) ?? m;
  });
}

/**
 * A command as the shell would see its words: quotes and backslashes removed, `$IFS` read
 * as a space, operators spaced out, `/bin/rm` read as `rm`, and rm's flags merged into one
 * canonical `-rf` (so `rm -r -f`, `rm -fr`, `rm --recursive --force` all read `rm -rf`).
 */
export function shellNormalise(s: string): string {
  const t = s
    .replace(/\$\{IFS[^}]*\}|\$IFS\b/g, " ")
    .replace(/\$(?=['"])/g, "")
    .replace(/\\(.)/gs, "$1")
    .replace(/['"]/g, "")
    .replace(/([`(){};|&<>])/g, " $1 ");
  const words = t.split(/\s+/).filter((w) => w !== "");
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    let w = words[i] as string;
    const slash = w.lastIndexOf("/");
    if (slash >= 0 && slash < w.length - 1 && DANGEROUS_COMMANDS.has(w.slice(slash + 1))) w = w.slice(slash + 1);
    out.push(w);
    if (w !== "rm") continue;
    const letters = new Set<string>();
    const longs: string[] = [];
    let j = i + 1;
    for (; j < words.length; j++) {
      const opt = words[j] as string;
      if (opt === "--") {
        j++;
        break;
      }
      if (!opt.startsWith("-") || opt === "-") break;
      if (opt.startsWith("--")) {
        if (opt === "--recursive") letters.add("r");
        else if (opt === "--force") letters.add("f");
        else if (opt === "--dir") letters.add("d");
        else longs.push(opt);
      } else for (const c of opt.slice(1)) letters.add(c === "R" ? "r" : c);
    }
    if (letters.size > 0) {
      const rest = [...letters].filter((c) => c !== "r" && c !== "f").sort().join("");
      out.push(`-${letters.has("r") ? "r" : ""}${letters.has("f") ? "f" : ""}${rest}`);
    }
    out.push(...longs);
    // rm's operands are paths: `//`, `/./`, `/tmp/..` all mean `/`.
    for (; j < words.length; j++) {
      const arg = words[j] as string;
      if (/^[;|&)`]$/.test(arg)) break;
      out.push(arg.startsWith("/") ? posix.normalize(arg) : arg);
    }
    i = j - 1;
  }
  return out.join(" ");
}

/** Expands `~`, `~user`, `$HOME` and `${HOME}` at the start of a word. */
export function expandHome(s: string, home: string): string {
  if (!s.includes("~") && !s.includes("HOME")) return s;
  return s
    .replace(/\$\{HOME\}|\$HOME\b/g, home)
    .replace(/(^|[\s=:'"])~([a-z_][a-z0-9_-]*)?(?=\/|$|\s)/g, (_m, pre: string, user?: string) =>
      `${pre}${user === undefined ? home : user === "root" ? "/root" : `/home/${user}`}`,
    );
}

/** A path as the kernel resolves it: `file://` dropped, `.`/`..`/`//` folded, relative made absolute. */
export function normalisePath(p: string, cwd: string): string {
  const path = p.startsWith("file://") ? p.slice("file://".length) : p;
  // Fast path: nothing to fold (no `.`/`..` segment, no `//`), the common case.
  if (!DOT_SEGMENT_RE.test(path)) return path.startsWith("/") ? path : `${cwd}/${path}`;
  return path.startsWith("/") ? posix.normalize(path) : posix.resolve(cwd, path);
}

const NO_PAYLOADS: readonly string[] = Object.freeze([]);

/** Printable texts hidden in base64 or hex tokens of s (flags: its charFlags). */
function encodedPayloads(s: string, flags: number): readonly string[] {
  // Real base64 of text mixes upper and lower case or pads with "="; hex of text has digits.
  const maybeBase64 = (flags & F_EQUALS) !== 0 || (flags & (F_UPPER | F_LOWER)) === (F_UPPER | F_LOWER);
  const maybeHex = (flags & F_DIGIT) !== 0;
  if (!maybeBase64 && !maybeHex) return NO_PAYLOADS;
  const found: string[] = [];
  if (maybeBase64) for (const m of s.matchAll(BASE64_TOKEN_RE)) {
    const tok = m[0];
    // Plain words and lower-case paths also fit the alphabet; real base64 mixes case or pads.
    if (!tok.endsWith("=") && !(/[A-Z]/.test(tok) && /[a-z]/.test(tok))) continue;
    const text = printable(Buffer.from(tok, "base64"));
    if (text !== undefined) found.push(text);
  }
  if (maybeHex) for (const m of s.matchAll(HEX_TOKEN_RE)) {
    const text = printable(Buffer.from(m[0], "hex"));
    if (text !== undefined) found.push(text);
  }
  return found;
}

function printable(bytes: Buffer): string | undefined {
  if (bytes.length < 4) return undefined;
  const text = bytes.toString("utf8");
  let ok = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 0x20 && c < 0x7f) || c === 0x09 || c === 0x0a || c === 0x0d) ok++;
  }
  return ok / text.length >= 0.9 ? text : undefined;
}
