// The views of one text: what it decodes to, its shell-normalised, home-expanded and path
// views, the paths a glob value could name, and the payloads encoded in it; a long text is
// viewed in pieces.
import { deobfuscate, encodedPayloads } from "../decode.js";
import { expandHome, forEachPathToken, normalisePath } from "../paths.js";
import { globTargets } from "../shell/glob.js";
import { shellNormalise } from "../shell-normalise.js";
import { charFlags, F_ENCODED, F_GLOB, F_NONWORD, F_SHELL, F_SPACE, F_TILDE, F_UPPER, hasShellSyntax } from "../text-flags.js";
import { add, type ViewSet } from "./view-set.js";

/** Texts longer than this are split into lines and windows (see pieces). */
export const LARGE_TEXT = 4096;
const WINDOW_OVERLAP = 256;

/** How deep encoded payloads (base64, hex) are unwrapped inside each other. */
export const MAX_DECODE_DEPTH = 2;

/**
 * A line joined from several values: its words, paths and payloads were already viewed one by
 * one, so only what spans the values (a command and its flags) is new.
 */
export function addJoined(s: string, flags: number, ctx: ViewSet): void {
  if (s.length > LARGE_TEXT || ctx.seen.has(s)) return;
  ctx.seen.add(s);
  ctx.out.push(s);
  const decoded = (flags & F_ENCODED) === 0 ? s : deobfuscate(s);
  if (decoded !== s) add(decoded, ctx);
  if (decoded === s ? hasShellSyntax(s, flags) : hasShellSyntax(decoded)) add(shellNormalise(decoded), ctx);
}

/** Views one value (and what it decodes to); returns its charFlags (all set for a large text). */
export function addString(s: string, ctx: ViewSet, depth: number): number {
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
export function viewsOf(base: string, flags: number, ctx: ViewSet, depth: number, normalise = true): void {
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
