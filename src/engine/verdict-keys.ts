// Where a judge's output names a verdict field (`"score":`, `{confidence:` ...): found in one
// pass, so that whether a region names one is a binary search rather than a rescan.
import type { Span } from "./brace-spans.js";

const QUOTE = 0x22;
const APOSTROPHE = 0x27;
const OPEN = 0x7b;
const COMMA = 0x2c;
const COLON = 0x3a;

// An object is a verdict candidate when it names a verdict field anywhere in its text; an
// object that names none (`{}`, `{"retries": 3}`) is prose and is passed over, insides and all.
// A later block that names one but does not parse is a broken verdict, not prose: it must
// not let an earlier (possibly injected) verdict win. A wrapped verdict
// (`{"verdict": {...}}`) names one too, so it is a candidate that fails the shape check.
// Keys in single quotes or bare (`{score: 1}`) count too: such a block is not JSON and never
// wins, but it shows the judge meant a verdict there, so an earlier one must not be used.
export const VERDICT_KEY = /(?:["'](?:score|confidence|reasoning)["']|[{,]\s*(?:score|confidence|reasoning))\s*:/;

// The field names alone: the regex engine finds these literals far faster than VERDICT_KEY,
// whose first character (a quote, brace or comma) is everywhere in JSON-like output.
const VERDICT_WORD = /score|confidence|reasoning/g;

// `\s` of a JavaScript regex, so that the context check below reads blanks as VERDICT_KEY does.
function isRegexSpace(c: number): boolean {
  return (
    c === 0x20 ||
    (c >= 0x09 && c <= 0x0d) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Where VERDICT_KEY matches around the field name at [word, wordEnd), or undefined. */
function keyAround(text: string, word: number, wordEnd: number): { start: number; end: number } | undefined {
  let after = wordEnd;
  const before = text.charCodeAt(word - 1);
  let start: number;
  if (before === QUOTE || before === APOSTROPHE) {
    const close = text.charCodeAt(wordEnd);
    if (close !== QUOTE && close !== APOSTROPHE) return undefined;
    start = word - 1;
    after++;
  } else {
    start = word - 1;
    while (start >= 0 && isRegexSpace(text.charCodeAt(start))) start--;
    const c = text.charCodeAt(start);
    if (c !== OPEN && c !== COMMA) return undefined;
  }
  while (after < text.length && isRegexSpace(text.charCodeAt(after))) after++;
  return text.charCodeAt(after) === COLON ? { start, end: after + 1 } : undefined;
}

/**
 * Every VERDICT_KEY match that starts at or after `from`, in order, as two offset lists.
 * Matches never overlap (one field name each, and a key's closing quote or `:` cannot open
 * the next), so each field name is checked on its own. Fields named inside a longer word
 * (`scoreasoning`) have a letter before them and are never keys.
 */
export function findVerdictKeys(text: string, from = 0, limit = Infinity): { starts: number[]; ends: number[] } {
  const starts: number[] = [];
  const ends: number[] = [];
  const re = new RegExp(VERDICT_WORD.source, "g");
  // A key starts before its field name, so no field name before `from` can start a key after it.
  re.lastIndex = from;
  for (let m = re.exec(text); m !== null && starts.length < limit; m = re.exec(text)) {
    const key = keyAround(text, m.index, m.index + m[0].length);
    if (key !== undefined && key.start >= from) {
      starts.push(key.start);
      ends.push(key.end);
    }
  }
  return { starts, ends };
}

/** Whether the text names a verdict field (VERDICT_KEY matches somewhere in it). */
export function hasVerdictKey(text: string): boolean {
  return findVerdictKeys(text, 0, 1).starts.length > 0;
}

/**
 * Every place the text names a verdict field, found in one regex pass, so that whether a
 * region names one is a binary search rather than a rescan of the region. Matches cannot
 * overlap (a key's closing quote is followed by a blank or `:`), so a match lies inside a
 * region exactly when the region's own text would match (a bare key's `{` or `,` is the
 * region's own opening brace or lies inside it).
 */
export function verdictKeys(text: string): { first(): number | undefined; within(span: Span): boolean } {
  const { starts, ends } = findVerdictKeys(text);
  return {
    first: () => starts[0],
    within(span: Span): boolean {
      let lo = 0;
      let hi = starts.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((starts[mid] as number) < span.start) lo = mid + 1;
        else hi = mid;
      }
      return lo < starts.length && (ends[lo] as number) <= span.end;
    },
  };
}

/**
 * Where a verdict field is named after `from`, or -1. A verdict that is cut short (output
 * capped mid-verdict) or mangled past recognition (a BOM after its brace) leaves no span to
 * parse, so without this an earlier, possibly injected, verdict would win.
 */
export function verdictKeyAfter(text: string, from: number): number {
  return findVerdictKeys(text, from, 1).starts[0] ?? -1;
}
