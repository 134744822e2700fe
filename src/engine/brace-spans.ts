// The brace regions of a judge's output: balanced `{...}` spans found by a forward and a
// backward scan (each thrown off by different stray quotes), linear in the text.

/** A balanced `{...}` region of the output, as offsets [start, end). */
export interface Span {
  start: number;
  end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const LF = 0x0a;
const CR = 0x0d;

// A JSON-ish string as the forward scan reads one inside braces: from a quote to the next
// unescaped quote or a raw line end (a backslash before a line end escapes nothing).
const STRING = String.raw`"[^"\\\n\r]*(?:\\[^\n\r][^"\\\n\r]*)*(?:["\n\r]|\\[\n\r])`;

/** A brace region nested at most `depth` deep, read exactly as the forward scan reads it. */
function regionSource(depth: number): string {
  const inner = depth === 0 ? STRING : `(?:${STRING}|${regionSource(depth - 1)})`;
  return String.raw`\{[^{}"]*(?:${inner}[^{}"]*)*\}`;
}

// A brace region with no nested region. Each character has one reading (a string starts
// with a quote, a nested region with a brace), so a failed match costs no more than the
// text it read. The regex engine reads such regions many times faster than a loop over
// charCodeAt, and most brace regions in a transcript are flat.
const FLAT_REGION = new RegExp(regionSource(0), "y");

// Prose and regions nested up to 4 deep in a row, read in one call: it stops at a `{` whose
// region nests deeper or does not close before the end of the text it is given. Regions
// skipped this way are not recorded, so their nesting need not be followed.
const PROSE_AND_REGIONS = new RegExp(`[^{]*(?:${regionSource(4)}[^{]*)*`, "y");

/**
 * Where the prose and regions starting at `from` in `head` end: the offset of the next `{`
 * that needs the character loop, or the end of `head`.
 */
function skipProseAndRegions(head: string, from: number): number {
  PROSE_AND_REGIONS.lastIndex = from;
  try {
    return PROSE_AND_REGIONS.test(head) ? PROSE_AND_REGIONS.lastIndex : from;
  } catch {
    // A region too long for the regex engine's backtrack stack: the character loop reads it.
    return from;
  }
}

/** Where the flat region opening at `open` ends (exclusive), or -1 when the region nests or never closes. */
function flatRegionEnd(text: string, open: number): number {
  FLAT_REGION.lastIndex = open;
  try {
    return FLAT_REGION.test(text) ? FLAT_REGION.lastIndex : -1;
  } catch {
    // A region too long for the regex engine's backtrack stack: the character loop reads it.
    return -1;
  }
}

/**
 * Finds balanced brace regions in one forward pass, in order of their end. Quotes are
 * honoured only inside braces (prose outside may contain stray quotes), and a raw newline
 * ends a string because JSON strings cannot contain one. An unmatched `{` never closes, so
 * the regions after it are still found. Linear in the length of the text. With `endAfter`,
 * only regions ending at or after that offset are returned (the rest are still scanned).
 */
export function scanBraceSpans(text: string, endAfter = 0): Span[] {
  const spans: Span[] = [];
  const stack: number[] = [];
  let inString = false;
  // Regions ending before `endAfter` are not returned, so they may be skipped unrecorded. A
  // slice is a view in V8, not a copy; a regex run on it cannot read a region ending later.
  const head = text.slice(0, Math.max(0, endAfter - 1));
  for (let i = 0; i < text.length; i++) {
    if (!inString && stack.length === 0) {
      // Outside every brace only `{` matters: let the native searches skip the prose, and
      // the flat regions that end too early to be returned.
      if (i < head.length) i = skipProseAndRegions(head, i);
      i = text.indexOf("{", i);
      if (i < 0) break;
    }
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) {
        // An escape never swallows a raw line end: that still ends the (invalid) string.
        const next = text.charCodeAt(i + 1);
        if (next !== LF && next !== CR) i++;
      } else if (c === QUOTE || c === LF || c === CR) inString = false;
      continue;
    }
    if (c === OPEN) {
      const end = flatRegionEnd(text, i);
      if (end < 0) stack.push(i);
      else {
        // The whole flat region is one span and leaves the stack as it was.
        if (end >= endAfter) spans.push({ start: i, end });
        i = end - 1;
      }
    } else if (c === CLOSE) {
      const start = stack.pop();
      if (start !== undefined && i + 1 >= endAfter) spans.push({ start, end: i + 1 });
    } else if (c === QUOTE && stack.length > 0) inString = true;
  }
  return spans;
}

/**
 * The same regions found by scanning from the end, in order of their end, last first.
 * A forward scan can be thrown off by a stray quote in prose before the verdict on the same
 * line, a backward scan by one after it; the verdict is found if either scan finds it.
 * With `stopBelow`, the scan may stop once every region ending after that offset is found.
 */
export function scanBraceSpansBackward(text: string, stopBelow = 0): Span[] {
  // Each `}` is met in order of decreasing end; its start is filled in when its `{` is met.
  const starts: number[] = [];
  const ends: number[] = [];
  const stack: number[] = [];
  let inString = false;
  for (let i = text.length - 1; i >= 0; i--) {
    if (!inString && stack.length === 0) {
      // Outside every brace only `}` matters; below `stopBelow` no region that is still to be
      // found can end after it, so the caller has everything it wants.
      i = text.lastIndexOf("}", i);
      if (i < stopBelow) break;
    }
    const c = text.charCodeAt(i);
    if (inString) {
      if (opensStringBackward(text, i, c)) inString = false;
      continue;
    }
    if (c === CLOSE) {
      stack.push(ends.length);
      ends.push(i + 1);
      starts.push(-1);
    } else if (c === OPEN) {
      const k = stack.pop();
      if (k !== undefined) starts[k] = i;
    } else if (c === QUOTE && stack.length > 0) inString = true;
  }
  const spans: Span[] = [];
  for (let k = 0; k < ends.length; k++) {
    const start = starts[k] as number;
    if (start >= 0) spans.push({ start, end: ends[k] as number });
  }
  return spans;
}

/** Both scans merged, last end first; on equal ends the longer region first. */
export function spansLastFirst(text: string, endAfter: number): Span[] {
  const forward = scanBraceSpans(text, endAfter);
  const backward = scanBraceSpansBackward(text, endAfter);
  const merged: Span[] = [];
  let f = forward.length - 1;
  let b = 0;
  while (f >= 0 || b < backward.length) {
    const x = forward[f];
    const y = backward[b];
    const takeForward = y === undefined || (x !== undefined && (x.end > y.end || (x.end === y.end && x.start <= y.start)));
    const next = (takeForward ? x : y) as Span;
    if (takeForward) f--;
    else b++;
    const prev = merged[merged.length - 1];
    if (prev === undefined || prev.start !== next.start || prev.end !== next.end) merged.push(next);
  }
  return merged;
}

// A span is worth handing to JSON.parse only if it starts like a JSON object: `{` then
// whitespace then `"` or `}`. This keeps `{{{{` floods and prose braces cheap.
export function looksLikeObject(text: string, span: Span): boolean {
  for (let i = span.start + 1; i < span.end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === LF || c === CR) continue;
    return c === QUOTE || c === CLOSE;
  }
  return false;
}

/**
 * Read backwards inside a string, whether the character c at i is where that string began:
 * a raw line end (a string cannot span one) or an unescaped quote.
 */
function opensStringBackward(text: string, i: number, c: number): boolean {
  if (c === LF || c === CR) return true;
  if (c !== QUOTE) return false;
  let backslashes = 0;
  while (i - 1 - backslashes >= 0 && text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
  return backslashes % 2 === 0;
}

/**
 * The span the full search would try first: the region the backward scan closes for the
 * last `}` of the text. Only the end of the text is scanned, so a verdict printed last (the
 * contract) is found without reading the rest of a large output.
 */
export function lastSpan(text: string): Span | undefined {
  const last = text.lastIndexOf("}");
  if (last < 0) return undefined;
  // Past the last `}` the backward scan's stack is empty and it ignores quotes, so its state
  // here is fresh; it pairs this `}` exactly as the full scan does.
  let depth = 0;
  let inString = false;
  for (let i = last; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (opensStringBackward(text, i, c)) inString = false;
      continue;
    }
    if (c === CLOSE) depth++;
    else if (c === OPEN) {
      depth--;
      if (depth === 0) return { start: i, end: last + 1 };
    } else if (c === QUOTE) inString = true;
  }
  return undefined;
}
