// Undoing the encodings a model or an attacker may wrap argument text in: lookalike letters,
// invisible characters, %XX, \xHH and &#NN; escapes, and base64 or hex payloads.
import { charFlags, F_DIGIT, F_ENCODED, F_EQUALS, F_LOWER, F_UPPER } from "./text-flags.js";

/** Lookalike letters (Cyrillic, Greek, Latin variants) that NFKC leaves alone, folded to ASCII. */
const CONFUSABLES: Record<string, string> = {
  "\u0430": "a",
  "\u0435": "e",
  "\u043e": "o",
  "\u0440": "p",
  "\u0441": "c",
  "\u0443": "y",
  "\u0445": "x",
  "\u0455": "s",
  "\u0456": "i",
  "\u0458": "j",
  "\u04bb": "h",
  "\u0501": "d",
  "\u0261": "g",
  "\u043a": "k",
  "\u043c": "m",
  "\u0442": "t",
  "\u0433": "r",
  "\u0410": "A",
  "\u0415": "E",
  "\u041e": "O",
  "\u0420": "P",
  "\u0421": "C",
  "\u0425": "X",
  "\u041c": "M",
  "\u0422": "T",
  "\u041a": "K",
  "\u0392": "B",
  "\u0395": "E",
  "\u039f": "O",
  "\u03bf": "o",
  "\u03c1": "p",
  "\u03b1": "a",
  "\u03b9": "i",
  "\u03ba": "k",
  "\u03bd": "v",
  "\u0131": "i",
  "\u017f": "s",
  "\u2044": "/",
  "\u2215": "/",
  "\u29f8": "/",
  "\uff0f": "/",
  "\u2010": "-",
  "\u2011": "-",
  "\u2012": "-",
  "\u2013": "-",
  "\u2014": "-",
  "\u2212": "-",
  "\ufe63": "-",
  "\uff0d": "-",
};
const CONFUSABLE_RE = new RegExp(`[${Object.keys(CONFUSABLES).join("")}]`, "g");
// Zero-width and other format characters: invisible, so a lookalike of "rm" may hide one.
const FORMAT_CHARS_RE = /[\p{Cf}\u00ad]/gu;
const NON_ASCII_RE = /[^\x00-\x7f]/;
const PERCENT_RE = /%[0-9a-fA-F]{2}/;
const ESCAPE_RE = /\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]{1,6}\}|[0-7]{3})/;
const ENTITY_RE = /&#(?:[0-9]{1,7}|x[0-9a-fA-F]{1,6});/;
const BASE64_TOKEN_RE = /[A-Za-z0-9+/_-]{12,}={0,2}/g;
const HEX_TOKEN_RE = /\b(?:[0-9a-fA-F]{2}){6,}\b/g;

/** Undoes the encodings a model or an attacker may wrap text in: lookalikes, %XX, \xHH, &#NN;. */
export function deobfuscate(s: string): string {
  if ((charFlags(s) & F_ENCODED) === 0) return s;
  let t = s;
  if (NON_ASCII_RE.test(t)) {
    t = t
      .normalize("NFKC")
      .replace(FORMAT_CHARS_RE, "")
      .replace(CONFUSABLE_RE, (c) => CONFUSABLES[c] ?? c);
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
  return s.replace(
    /\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]{1,6})\}|([0-7]{3}))/g,
    (m, x?: string, u?: string, ub?: string, o?: string) => {
      const n =
        x !== undefined ? parseInt(x, 16) : u !== undefined ? parseInt(u, 16) : ub !== undefined ? parseInt(ub, 16) : parseInt(o ?? "", 8);
      return codePoint(n) ?? m;
    },
  );
}

const NO_PAYLOADS: readonly string[] = Object.freeze([]);

/** Printable texts hidden in base64 or hex tokens of s (flags: its charFlags). */
export function encodedPayloads(s: string, flags: number): readonly string[] {
  // Real base64 of text mixes upper and lower case or pads with "="; hex of text has digits.
  const maybeBase64 = (flags & F_EQUALS) !== 0 || (flags & (F_UPPER | F_LOWER)) === (F_UPPER | F_LOWER);
  const maybeHex = (flags & F_DIGIT) !== 0;
  if (!maybeBase64 && !maybeHex) return NO_PAYLOADS;
  const found: string[] = [];
  // exec with lastIndex, not matchAll, which copies the regex on every call (every view of every call).
  if (maybeBase64) {
    BASE64_TOKEN_RE.lastIndex = 0;
    for (let m = BASE64_TOKEN_RE.exec(s); m !== null; m = BASE64_TOKEN_RE.exec(s)) {
      const tok = m[0];
      // Plain words and lower-case paths also fit the alphabet; real base64 mixes case or pads.
      if (!tok.endsWith("=") && !(/[A-Z]/.test(tok) && /[a-z]/.test(tok))) continue;
      const text = printable(Buffer.from(tok, "base64"));
      if (text !== undefined) found.push(text);
    }
  }
  if (maybeHex) {
    HEX_TOKEN_RE.lastIndex = 0;
    for (let m = HEX_TOKEN_RE.exec(s); m !== null; m = HEX_TOKEN_RE.exec(s)) {
      const text = printable(Buffer.from(m[0], "hex"));
      if (text !== undefined) found.push(text);
    }
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
