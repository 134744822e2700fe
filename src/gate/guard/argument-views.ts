// The texts the guard searches for one call: every string value and key nested anywhere in
// the arguments, plus decoded (decode.ts), shell-normalised (shell-normalise.ts), path
// (paths.ts) and shell-read (shell/) views of each (docs/guard.md).
import type { JsonObject, JsonValue } from "../../api/types.js";
import { deobfuscate, encodedPayloads } from "./decode.js";
import { expandHome, forEachPathToken, normalisePath, PATH_SPLIT_RE } from "./paths.js";
import { analyseShell } from "./shell/interpreter.js";
import { globTargets } from "./shell/glob.js";
import { shellQuote } from "./shell/quoting.js";
import { plainCommandLog } from "./shell/command-words.js";
import type { CommandLog } from "./shell/records.js";
import { shellNormalise } from "./shell-normalise.js";
import { charFlags, F_ENCODED, F_GLOB, F_NONWORD, F_SHELL, F_SPACE, F_TILDE, F_UPPER, hasShellSyntax } from "./text-flags.js";

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
  /** The commands read from each command field (what the effect model reads), with the field's key. */
  commands: { key: string; log: CommandLog }[];
}

const FUNCTION_DEF_RE = /\(\s*\)\s*\{/;

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
  let unresolved: string | undefined;
  const commands: CallViews["commands"] = [];
  let rest = args;
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    const cwd = commandDirectory(args, ctx.cwd);
    const read: string[] = [];
    for (const { key, line } of commandFields(args)) {
      const r = shellLine(line, cwd, ctx, (log) => commands.push({ key, log }));
      if (shellTool) unresolved ??= r.unresolved;
      // A shell tool's command read in full is viewed as the reading renders it: text it only
      // prints (echo's arguments, a here-document fed to cat) is data, not a command line.
      // A function definition is kept as written too: the reading does not render its body as the shell would.
      if (shellTool && r.read && r.unresolved === undefined && !FUNCTION_DEF_RE.test(line)) read.push(key);
    }
    if (read.length > 0) rest = Object.fromEntries(Object.entries(args).filter(([k]) => !read.includes(k)));
  }
  walk(rest, ctx, 0);
  return unresolved === undefined ? { views: ctx.out, commands } : { views: ctx.out, unresolved, commands };
}

/** The command lines of a call's command fields (an argv array quoted word by word), with their keys. */
export function commandFields(args: JsonObject): { key: string; line: string }[] {
  const out: { key: string; line: string }[] = [];
  for (const key of SHELL_FIELDS) {
    const v = args[key];
    let line: string | undefined;
    if (typeof v === "string") line = v;
    else if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string")) line = v.map(shellQuote).join(" ");
    if (line !== undefined && line.length <= LARGE_TEXT) out.push({ key, line });
  }
  return out;
}

/** The directory a call's command runs in: its first absolute `cwd`-like field, else `fallback`. */
export function commandDirectory(args: JsonObject, fallback: string): string {
  for (const f of CWD_FIELDS) {
    const v = args[f];
    if (typeof v === "string" && v.startsWith("/")) return normalisePath(v, fallback);
  }
  return fallback;
}

/**
 * Views a command line as the shell would run it (shell/interpreter.ts): each expanded line, with its
 * paths resolved against the command's directory. Returns what could not be resolved, if anything.
 */
function shellLine(line: string, cwd: string, ctx: Ctx, onLog: (log: CommandLog) => void): { unresolved: string | undefined; read: boolean } {
  const decoded = deobfuscate(line);
  let unresolved: string | undefined;
  let read = false;
  for (const text of decoded === line ? [line] : [line, decoded]) {
    const flags = charFlags(text);
    if ((flags & (F_SHELL | F_GLOB | F_TILDE)) === 0 && cwd === ctx.cwd) {
      // Plain words: nothing to view beyond the text, but the effect model reads its command.
      onLog(plainCommandLog(text, cwd));
      continue;
    }
    const analysis = analyseShell(text, { home: ctx.home, cwd });
    onLog(analysis.log);
    unresolved ??= analysis.unresolved;
    if (text === line) read = true;
    const saved = ctx.cwd;
    ctx.cwd = cwd;
    try {
      for (const t of analysis.texts) {
        if (t.length > LARGE_TEXT) continue;
        add(t, ctx);
        // Already expanded as sh would: not shell-normalised again (that would strip the quotes echo's data keeps).
        viewsOf(t, charFlags(t), ctx, MAX_DECODE_DEPTH - 1, false);
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
  return { unresolved, read };
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
  else if (Array.isArray(v)) return walkArray(v, ctx, level);
  else if (v !== null && typeof v === "object") walkObject(v, ctx, level);
  return undefined;
}

/** An array's items; an array of strings is also an argv line (vaglio joins a list-valued command with spaces). */
function walkArray(v: JsonValue[], ctx: Ctx, level: number): string | undefined {
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
  if (!allStrings || line === undefined) return undefined;
  if (v.length > 1) {
    flags |= F_SPACE | F_NONWORD;
    addJoined(line, flags, ctx);
  }
  ctx.lineFlags = flags;
  return line;
}

/** An object's keys and values, its string values joined into one line, and its split paths. */
function walkObject(v: JsonObject, ctx: Ctx, level: number): void {
  let line: string | undefined;
  let words = 0;
  let flags = F_SPACE | F_NONWORD;
  const split: SplitPath = {};
  for (const k of Object.keys(v)) {
    addString(k, ctx, 0);
    const item = v[k] as JsonValue;
    const w = walk(item, ctx, level + 1);
    if (w === undefined) continue;
    line = line === undefined ? w : `${line} ${w}`;
    flags |= ctx.lineFlags;
    words += typeof item === "string" ? 1 : (item as JsonValue[]).length;
    if (typeof item === "string" && (ctx.lineFlags & (F_SPACE | F_SHELL)) === 0) splitPathPart(item, split);
  }
  // A command split into fields ({cmd: "rm", args: ["-rf", "/"]}) is read as one line too.
  if (line !== undefined && words > 1) addJoined(line, flags, ctx);
  // A path split into fields ({dir: "/etc", file: "passwd"}) is read joined too.
  if (split.dirs !== undefined && split.names !== undefined) {
    for (const d of split.dirs.slice(0, 8)) {
      const dir = expandHome(d, ctx.home);
      for (const n of split.names.slice(0, 8)) add(normalisePath(`${dir}/${n}`, ctx.cwd), ctx);
    }
  }
}

/** One-word values of an object: directories and names a tool may join into one path. */
interface SplitPath {
  dirs?: string[];
  names?: string[];
}

function splitPathPart(item: string, split: SplitPath): void {
  if (item.length > 256 || item === "") return;
  if (item.startsWith("/") || item.startsWith("~")) (split.dirs ??= []).push(item);
  else if (!item.startsWith("-") && !item.includes("://")) (split.names ??= []).push(item);
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
function viewsOf(base: string, flags: number, ctx: Ctx, depth: number, normalise = true): void {
  let text = base;
  if (normalise && hasShellSyntax(base, flags)) {
    text = shellNormalise(base);
    if (text !== base) add(text, ctx);
  }
  if ((flags & F_TILDE) !== 0 || ((flags & F_UPPER) !== 0 && text.includes("HOME"))) {
    const expanded = expandHome(text, ctx.home);
    if (expanded !== text) add(expanded, ctx);
    text = expanded;
  }
  if (text.includes("/")) {
    forEachPathToken(text, (tok) => add(normalisePath(tok, ctx.cwd), ctx));
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
