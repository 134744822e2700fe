// The verdict candidate in a judge's output: of the brace regions that parse as a JSON object
// naming a verdict field, the one that ends last (docs/judges.md states the rules).
import { lastSpan, looksLikeObject, spansLastFirst, type Span } from "./brace-spans.js";
import { hasVerdictKey, verdictKeys } from "./verdict-keys.js";
import { messageOf } from "../errors.js";

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export type Candidate = { ok: true; value: Record<string, unknown>; span: Span } | { ok: false; detail: string };

function brokenDetail(broken: { span: Span; error: string }): Candidate {
  return { ok: false, detail: `the last verdict-like block (offset ${broken.span.start}) is not valid JSON: ${broken.error}` };
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
export function lastJsonObject(text: string): Candidate {
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
        brokenVerdict = { span, error: messageOf(err) };
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
