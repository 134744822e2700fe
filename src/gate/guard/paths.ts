// Paths in argument text as the kernel would read them: path tokens found without split
// arrays, `~`/`$HOME` expanded, `file://`, `.`, `..` and `//` folded, relative ones made absolute.
import { posix } from "node:path";

/** Characters that end a path token (ASCII; other spaces via \s). */
const PATH_SEPARATORS = separatorTable(" \t\n\r\v\f'\"`=,:;|&<>(){}[]");
const UNICODE_SPACE_RE = /\s/;
/** The same separators as a regex, for splitting a line into words. */
export const PATH_SPLIT_RE = /[\s'"`=,:;|&<>(){}[\]]+/;
const DOT_SEGMENT_RE = /(^|\/)\.\.?(\/|$)|\/\//;

function separatorTable(chars: string): Uint8Array {
  const t = new Uint8Array(128);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  return t;
}

/** The path tokens of a text (tokens containing "/"), as the path views read them. */
export function pathTokens(text: string): string[] {
  const out: string[] = [];
  forEachPathToken(text, (t) => out.push(t));
  return out;
}

/** Calls fn with each token of text (split at the separators) that contains a "/", without building an array. */
export function forEachPathToken(text: string, fn: (tok: string) => void): void {
  let start = 0;
  let slash = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32;
    const sep = c < 128 ? PATH_SEPARATORS[c] === 1 : UNICODE_SPACE_RE.test(text.charAt(i));
    if (!sep) {
      if (c === 47) slash = true;
      continue;
    }
    if (slash) fn(text.slice(start, i));
    start = i + 1;
    slash = false;
  }
}

/** Expands `~`, `~user`, `$HOME` and `${HOME}` at the start of a word. */
export function expandHome(s: string, home: string): string {
  if (!s.includes("~") && !s.includes("HOME")) return s;
  return s
    .replace(/\$\{HOME\}|\$HOME\b/g, home)
    .replace(
      /(^|[\s=:'"])~([a-z_][a-z0-9_-]*)?(?=\/|$|\s)/g,
      (_m, pre: string, user?: string) => `${pre}${user === undefined ? home : user === "root" ? "/root" : `/home/${user}`}`,
    );
}

/** A path as the kernel resolves it: `file://` dropped, `.`/`..`/`//` folded, relative made absolute. */
export function normalisePath(p: string, cwd: string): string {
  const path = p.startsWith("file://") ? p.slice("file://".length) : p;
  // Fast path: nothing to fold (no `.`/`..` segment, no `//`), the common case.
  if (!DOT_SEGMENT_RE.test(path)) return path.startsWith("/") ? path : `${cwd}/${path}`;
  return path.startsWith("/") ? posix.normalize(path) : posix.resolve(cwd, path);
}
