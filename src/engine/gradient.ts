// GradientResult parsing: finds a judge's verdict in its final text output and validates
// it strictly. The controller, local mode and `gavel verdict` all go through here.
import { Ajv, type ValidateFunction } from "ajv";
import type { GradientResult, JudgeRejectionReason, JudgeValidationSpec, JsonObject } from "../api/types.js";
import { compileUserSchema } from "./validators/json-schema.js";

/** What a finished judge run amounts to: a verdict, or a rejection with its reason. */
export type JudgeOutcome =
  | { ok: true; result: GradientResult }
  | { ok: false; rejection: JudgeRejectionReason; detail: string };

/** A finished judge run as a driver observes it. */
export interface JudgeRun {
  exitCode: number;
  stdout: string;
  timedOut?: boolean;
  cancelled?: boolean;
  /** The judge's own `execution.validation` (judge form), when it declares one. */
  validation?: JudgeValidationSpec;
}

const unitInterval = { type: "number", minimum: 0, maximum: 1 } as const;

/** The strict shape of a verdict; extra top-level fields are allowed but not kept. */
export const GRADIENT_RESULT_SCHEMA = {
  type: "object",
  required: ["score", "confidence", "reasoning"],
  properties: {
    score: unitInterval,
    confidence: unitInterval,
    reasoning: { type: "string" },
    signals: {
      type: "array",
      items: {
        type: "object",
        required: ["category", "score", "message"],
        properties: {
          category: { type: "string" },
          score: unitInterval,
          message: { type: "string" },
        },
      },
    },
    metadata: { type: "object" },
  },
} as const;

// One compiled validator for the fixed verdict schema; judge-declared schemas are compiled
// per call in their own Ajv of the draft they name, so that their $ids can never collide.
const validateGradientShape: ValidateFunction = new Ajv({ allErrors: true, strict: false }).compile(
  GRADIENT_RESULT_SCHEMA,
);

/** A balanced `{...}` region of the output, as offsets [start, end). */
interface Span {
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
      if (c === LF || c === CR) inString = false;
      else if (c === QUOTE) {
        let backslashes = 0;
        while (i - 1 - backslashes >= 0 && text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) inString = false;
      }
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
function spansLastFirst(text: string, endAfter: number): Span[] {
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
function looksLikeObject(text: string, span: Span): boolean {
  for (let i = span.start + 1; i < span.end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === LF || c === CR) continue;
    return c === QUOTE || c === CLOSE;
  }
  return false;
}

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
    c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/** Where VERDICT_KEY matches around the field name at [word, wordEnd), or undefined. */
function keyAround(text: string, word: number, wordEnd: number): { start: number; end: number } | undefined {
  let after = wordEnd;
  const before = text.charCodeAt(word - 1);
  let start: number;
  if (before === QUOTE || before === 0x27) {
    const close = text.charCodeAt(wordEnd);
    if (close !== QUOTE && close !== 0x27) return undefined;
    start = word - 1;
    after++;
  } else {
    start = word - 1;
    while (start >= 0 && isRegexSpace(text.charCodeAt(start))) start--;
    const c = text.charCodeAt(start);
    if (c !== OPEN && c !== 0x2c) return undefined;
  }
  while (after < text.length && isRegexSpace(text.charCodeAt(after))) after++;
  return text.charCodeAt(after) === 0x3a ? { start, end: after + 1 } : undefined;
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
function hasVerdictKey(text: string): boolean {
  return findVerdictKeys(text, 0, 1).starts.length > 0;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

type Candidate = { ok: true; value: Record<string, unknown>; span: Span } | { ok: false; detail: string };

function brokenDetail(broken: { span: Span; error: string }): Candidate {
  return { ok: false, detail: `the last verdict-like block (offset ${broken.span.start}) is not valid JSON: ${broken.error}` };
}

/**
 * The span the full search would try first: the region the backward scan closes for the
 * last `}` of the text. Only the end of the text is scanned, so a verdict printed last (the
 * contract) is found without reading the rest of a large output.
 */
function lastSpan(text: string): Span | undefined {
  const last = text.lastIndexOf("}");
  if (last < 0) return undefined;
  // Past the last `}` the backward scan's stack is empty and it ignores quotes, so its state
  // here is fresh; it pairs this `}` exactly as the full scan does.
  let depth = 0;
  let inString = false;
  for (let i = last; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === LF || c === CR) inString = false;
      else if (c === QUOTE) {
        let backslashes = 0;
        while (i - 1 - backslashes >= 0 && text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) inString = false;
      }
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

/**
 * Fast path: when the region closed by the last `}` parses as an object naming a verdict
 * field, the full search would pick it too. No span ends later, and a longer span ending at
 * the same place that parsed would have been paired by the backward scan instead, so every
 * span tried before it fails to parse and cannot count as a later broken verdict.
 */
function lastObjectFast(text: string): Candidate | undefined {
  const span = lastSpan(text);
  if (span === undefined) return undefined;
  const slice = text.slice(span.start, span.end);
  if (!hasVerdictKey(slice)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(slice);
  } catch {
    return undefined;
  }
  return isPlainObject(value) ? { ok: true, value, span } : undefined;
}

/**
 * The verdict candidate: of the balanced regions that parse as a JSON object naming a
 * verdict field, the one that ends last (an enclosing object ends after its members, so it
 * wins over them). Objects naming no verdict field are prose and are passed over.
 */
function lastJsonObject(text: string): Candidate {
  const fast = lastObjectFast(text);
  if (fast !== undefined) return fast;
  const keys = verdictKeys(text);
  const first = keys.first();
  if (first === undefined) return { ok: false, detail: NO_VERDICT };
  // A candidate contains a key, so regions ending before the first key need not be found.
  const spans = spansLastFirst(text, first);
  // Parse work is capped at a few times the text length so that adversarial nesting
  // (every level valid until its last byte) cannot make this quadratic.
  let budget = 4 * text.length + 1024;
  let brokenVerdict: { span: Span; error: string } | undefined;
  for (const span of spans) {
    // A region naming no verdict field is prose whether or not it parses: never parsed.
    if (!keys.within(span)) continue;
    if (!looksLikeObject(text, span)) continue;
    const length = span.end - span.start;
    if (length > budget) {
      return { ok: false, detail: "output has too many nested JSON-like blocks to search for a verdict" };
    }
    budget -= length;
    const slice = text.slice(span.start, span.end);
    let value: unknown;
    try {
      value = JSON.parse(slice);
    } catch (err) {
      if (brokenVerdict === undefined || span.start > brokenVerdict.span.start) {
        brokenVerdict = { span, error: err instanceof Error ? err.message : String(err) };
      }
      continue;
    }
    if (!isPlainObject(value)) continue;
    // Only a broken block wholly after this object counts; one around it (prose braces)
    // or overlapping it (a scan thrown off by stray quotes) is not a later verdict.
    if (brokenVerdict !== undefined && brokenVerdict.span.start >= span.end) return brokenDetail(brokenVerdict);
    return { ok: true, value, span };
  }
  if (brokenVerdict !== undefined) return brokenDetail(brokenVerdict);
  return { ok: false, detail: NO_VERDICT };
}

const NO_VERDICT = "no verdict found: no JSON object naming score, confidence or reasoning";

/**
 * Every place the text names a verdict field, found in one regex pass, so that whether a
 * region names one is a binary search rather than a rescan of the region. Matches cannot
 * overlap (a key's closing quote is followed by a blank or `:`), so a match lies inside a
 * region exactly when the region's own text would match (a bare key's `{` or `,` is the
 * region's own opening brace or lies inside it).
 */
function verdictKeys(text: string): { first(): number | undefined; within(span: Span): boolean } {
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
function verdictKeyAfter(text: string, from: number): number {
  return findVerdictKeys(text, from, 1).starts[0] ?? -1;
}

function ajvErrors(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`).join("; ");
}

/**
 * Finds and validates the verdict in a judge's text output. Fenced (```json or ```) and
 * bare objects in prose are both found; the last JSON object naming a verdict field wins
 * (objects naming none are prose), and if it is not a valid GradientResult, or verdict-like
 * text follows it, the output is malformed: there is no fallback to earlier verdicts.
 * docs/judges.md states the rules.
 */
export function parseGradientResult(stdout: string, outputSchema?: JsonObject): JudgeOutcome {
  const text = stdout.charCodeAt(0) === 0xfeff ? stdout.slice(1) : stdout;
  const found = lastJsonObject(text);
  if (!found.ok) return { ok: false, rejection: "malformed_output", detail: found.detail };
  const later = verdictKeyAfter(text, found.span.end);
  if (later >= 0) {
    return {
      ok: false,
      rejection: "malformed_output",
      detail: `verdict-like text at offset ${later} follows the last complete verdict (offset ${found.span.start}); an earlier verdict is never used in its place`,
    };
  }
  const value = found.value;
  if (!validateGradientShape(value)) {
    return {
      ok: false,
      rejection: "malformed_output",
      detail: `verdict is not a valid GradientResult: ${ajvErrors(validateGradientShape)}`,
    };
  }
  if (outputSchema !== undefined) {
    let validate: ValidateFunction;
    try {
      validate = compileUserSchema(outputSchema);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      return { ok: false, rejection: "malformed_output", detail: `the judge's output schema is invalid: ${reason}` };
    }
    if (!validate(value)) {
      return {
        ok: false,
        rejection: "malformed_output",
        detail: `verdict does not match the judge's output schema: ${ajvErrors(validate)}`,
      };
    }
  }
  const result: GradientResult = {
    score: value.score as number,
    confidence: value.confidence as number,
    reasoning: value.reasoning as string,
  };
  if (value.signals !== undefined) result.signals = value.signals as GradientResult["signals"];
  if (value.metadata !== undefined) result.metadata = value.metadata as JsonObject;
  return { ok: true, result };
}

/**
 * Maps a finished judge run to its outcome. Cancellation and timeout win over anything the
 * judge printed; a non-zero exit is `failed` unless the judge declares
 * `system.must_succeed: false`; otherwise the verdict is parsed (and checked against the
 * judge's `output.schema` when its format is json).
 */
export function judgeOutcome(run: JudgeRun): JudgeOutcome {
  if (run.cancelled === true) return { ok: false, rejection: "cancelled", detail: "the judge was cancelled" };
  if (run.timedOut === true) return { ok: false, rejection: "timed_out", detail: "the judge ran past its deadline" };
  const mustSucceed = run.validation?.system?.must_succeed ?? true;
  if (mustSucceed && run.exitCode !== 0) {
    return { ok: false, rejection: "failed", detail: `the judge exited with code ${run.exitCode}` };
  }
  const output = run.validation?.output;
  const schema = output !== undefined && (output.format ?? "json") === "json" ? output.schema : undefined;
  return parseGradientResult(run.stdout, schema);
}

/** The GradientResult a validator records for an outcome: a rejection scores 0 with confidence 0. */
export function outcomeToGradient(outcome: JudgeOutcome): GradientResult {
  if (outcome.ok) return outcome.result;
  return {
    score: 0,
    confidence: 0,
    reasoning: `no verdict (${outcome.rejection}): ${outcome.detail}`,
    signals: [{ category: outcome.rejection, score: 0, message: outcome.detail }],
  };
}
