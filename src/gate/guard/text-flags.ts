// What one pass over a text's characters learns, so that each later step of the argument views
// is a bit test instead of a regex scan of its own (most values need none of the steps).

export const F_NONWORD = 1; // anything but [A-Za-z0-9_.-]: the text is not a plain word
export const F_ENCODED = 2; // non-ASCII, %, \ or &: deobfuscate may change it
export const F_SHELL = 4; // quotes, $, `, (){};|&<>, tab, CR, LF: shell syntax
export const F_SLASH = 8;
export const F_TILDE = 16;
export const F_UPPER = 32;
export const F_LOWER = 64;
export const F_DIGIT = 128;
export const F_EQUALS = 256;
export const F_SPACE = 512;
export const F_GLOB = 1024; // * ? [ {: glob or brace expansion

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
export function charFlags(s: string): number {
  let f = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    f |= c < 128 ? (CHAR_FLAGS[c] as number) : F_NONWORD | F_ENCODED;
  }
  return f;
}

const SPACE_RE = /\s/;

/**
 * Whether `word` stands in s as /\bword\s/ would find it (word starts with a word character):
 * a native substring search first, so most texts never reach a regex (this runs on every
 * spaced view of every call).
 */
function hasWord(s: string, word: string): boolean {
  for (let i = s.indexOf(word); i !== -1; i = s.indexOf(word, i + 1)) {
    const before = i === 0 ? 32 : s.charCodeAt(i - 1);
    const end = i + word.length;
    if (end < s.length && !isWordChar(before) && SPACE_RE.test(s.charAt(end))) return true;
  }
  return false;
}

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

/** Whether a text has anything shellNormalise would change (shell syntax, a double space, `rm` or `chmod` as a word). */
export function hasShellSyntax(s: string, flags = charFlags(s)): boolean {
  return (flags & F_SHELL) !== 0 || ((flags & F_SPACE) !== 0 && (s.includes("  ") || hasWord(s, "rm") || hasWord(s, "chmod")));
}
