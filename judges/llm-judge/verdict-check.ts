// The llm judge's own check of a model reply: finds the JSON object and holds it to the
// GradientResult shape the engine enforces, so a bad reply is retried here, not rejected later.
import type { Verdict } from "../shared/judge-io.js";
import { messageOf } from "../../src/errors.js";

/** A reply that is a verdict, or why it is not. */
export type ReplyCheck = { ok: true; verdict: Verdict } | { ok: false; problem: string };

const inUnit = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1;

/** The JSON text of a reply: a ```json fence's body if there is one, else the outermost {...}. */
export function extractJson(reply: string): string | undefined {
  const fences = [...reply.matchAll(/```(?:json)?\s*\n([\s\S]*?)```/g)];
  const last = fences[fences.length - 1];
  if (last !== undefined) return (last[1] as string).trim();
  const start = reply.indexOf("{");
  const end = reply.lastIndexOf("}");
  return start >= 0 && end > start ? reply.slice(start, end + 1) : undefined;
}

/** Checks a model reply strictly: score and confidence in [0, 1], reasoning a string, signals well-formed. */
export function checkReply(reply: string): ReplyCheck {
  const text = extractJson(reply);
  if (text === undefined) return { ok: false, problem: "the reply contains no JSON object" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `the reply's JSON does not parse: ${messageOf(err)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, problem: "the reply's JSON is not an object" };
  const v = value as Record<string, unknown>;
  if (!inUnit(v.score)) return { ok: false, problem: `"score" must be a number in [0, 1], got ${JSON.stringify(v.score)}` };
  if (!inUnit(v.confidence)) return { ok: false, problem: `"confidence" must be a number in [0, 1], got ${JSON.stringify(v.confidence)}` };
  if (typeof v.reasoning !== "string") return { ok: false, problem: `"reasoning" must be a string` };
  const verdict: Verdict = { score: v.score, confidence: v.confidence, reasoning: v.reasoning };
  if (v.signals !== undefined) {
    if (!Array.isArray(v.signals)) return { ok: false, problem: `"signals" must be an array` };
    for (const [i, s] of (v.signals as unknown[]).entries()) {
      const sig = s as Record<string, unknown> | null;
      if (
        typeof sig !== "object" ||
        sig === null ||
        typeof sig.category !== "string" ||
        !inUnit(sig.score) ||
        typeof sig.message !== "string"
      ) {
        return { ok: false, problem: `signals[${i}] must be {category: string, score: number in [0, 1], message: string}` };
      }
    }
    verdict.signals = v.signals as Verdict["signals"];
  }
  if (v.metadata !== undefined) {
    if (typeof v.metadata !== "object" || v.metadata === null || Array.isArray(v.metadata))
      return { ok: false, problem: `"metadata" must be an object` };
    verdict.metadata = v.metadata as Record<string, unknown>;
  }
  return { ok: true, verdict };
}
