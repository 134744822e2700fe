// The walk over a call's JSON arguments: every string value and key nested anywhere, the
// words of an array or an object read as one line, and a path split into fields read joined.
import type { JsonObject, JsonValue } from "../../../api/types.js";
import { expandHome, normalisePath } from "../paths.js";
import { F_NONWORD, F_SHELL, F_SPACE } from "../text-flags.js";
import { addJoined, addString } from "./text-views.js";
import { add, type ViewSet } from "./view-set.js";

/** Arguments nested deeper than this are refused rather than walked (no stack to exhaust). */
export const MAX_NESTING = 64;

/** Thrown for arguments nested deeper than MAX_NESTING; the guard denies such a call. */
export class NestingTooDeep extends Error {
  override readonly name = "NestingTooDeep";
}

/** Views v and everything in it; returns v's words as one line when v is a string or an array of strings. */
export function walk(v: JsonValue, ctx: ViewSet, level: number): string | undefined {
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
function walkArray(v: JsonValue[], ctx: ViewSet, level: number): string | undefined {
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
function walkObject(v: JsonObject, ctx: ViewSet, level: number): void {
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
