// Quoting and backslash escapes as the shell and its text commands read them: ANSI-C `$'..'`,
// printf's and `echo -e`'s escapes, and quoting a value back into one shell word.

/** A code point as a string, or "" when it is not one. */
export function safeCodePoint(n: number): string {
  return Number.isFinite(n) && n >= 0 && n <= 0x10ffff ? String.fromCodePoint(n) : "";
}

const SIMPLE_ANSI_C: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", e: "\x1b", f: "\f", v: "\v" };
const ANSI_C_ESCAPE_RE = /^(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)/s;

/**
 * Decodes the body of `$'...'` starting at `from` (just after the opening quote); returns the
 * decoded text and the index of the closing quote (or the end of src).
 */
export function decodeAnsiC(src: string, from: number): { text: string; end: number } {
  let j = from;
  let out = "";
  for (; j < src.length && src[j] !== "'"; j++) {
    if (src[j] !== "\\") {
      out += src[j];
      continue;
    }
    const e = ANSI_C_ESCAPE_RE.exec(src.slice(j + 1))?.[0] ?? "";
    j += e.length;
    if (/^[xuU]/.test(e)) out += safeCodePoint(parseInt(e.slice(1), 16));
    else if (/^[0-7]/.test(e)) out += safeCodePoint(parseInt(e, 8));
    else out += SIMPLE_ANSI_C[e] ?? e;
  }
  return { text: out, end: j };
}

const SIMPLE_PRINTF: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", f: "\f", v: "\v", "\\": "\\" };

/** printf's and echo -e's backslash escapes. */
export function unescapePrintf(s: string): string {
  return s.replace(/\\(0?[0-7]{1,3}|x[0-9a-fA-F]{1,2}|.)/gs, (_m, e: string) => {
    if (/^[0-7]/.test(e)) return safeCodePoint(parseInt(e, 8));
    if (e.startsWith("x") && e.length > 1) return safeCodePoint(parseInt(e.slice(1), 16));
    return SIMPLE_PRINTF[e] ?? `\\${e}`;
  });
}

/** A value as one shell word (argv elements are not re-split or expanded). */
export function shellQuote(s: string): string {
  return /^[\w./=:@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
