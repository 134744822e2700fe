// What every validator returns, and the threshold rule they share: a validator passes when
// score >= min_score and confidence >= min_confidence.
import type { GradientResult, Signal } from "../../api/types.js";

/** A validator's result: a GradientResult plus whether it met its thresholds. */
export interface ValidatorOutcome {
  score: number;
  confidence: number;
  reasoning: string;
  signals: Signal[];
  passed: boolean;
}

/** The pass thresholds of one validator, defaults applied. */
export interface Thresholds {
  min_score: number;
  min_confidence: number;
}

/** Default min_score of an outer-loop validator. */
export const OUTER_MIN_SCORE = 1.0;
/** Default min_score of a tool_validation entry. */
export const TOOL_MIN_SCORE = 0.7;
/** Default min_confidence of every validator. */
export const MIN_CONFIDENCE = 0.0;

/** The thresholds of a validator spec, with the outer-loop (or given) defaults. */
export function thresholdsOf(spec: { min_score?: number; min_confidence?: number }, defaultMinScore = OUTER_MIN_SCORE): Thresholds {
  return { min_score: spec.min_score ?? defaultMinScore, min_confidence: spec.min_confidence ?? MIN_CONFIDENCE };
}

/** Formats a score or confidence the same way everywhere in reasoning and feedback. */
export function fmt(n: number): string {
  return n.toFixed(2);
}

/**
 * Applies thresholds to a verdict. A confidence below min_confidence fails even a perfect
 * score, and the reasoning says so; the judge is not asked again within the iteration.
 */
export function applyThresholds(result: GradientResult, t: Thresholds): ValidatorOutcome {
  const scoreOk = result.score >= t.min_score;
  const confidenceOk = result.confidence >= t.min_confidence;
  const notes: string[] = [];
  if (!scoreOk) notes.push(`score ${fmt(result.score)} is below min_score ${fmt(t.min_score)}`);
  if (!confidenceOk) {
    notes.push(
      `confidence ${fmt(result.confidence)} is below min_confidence ${fmt(t.min_confidence)}, so the score is treated as failing (the judge is not re-run in this iteration)`,
    );
  }
  const reasoning = notes.length === 0 ? result.reasoning : `${notes.join("; ")}. ${result.reasoning}`.trim();
  return {
    score: result.score,
    confidence: result.confidence,
    reasoning,
    signals: result.signals ?? [],
    passed: scoreOk && confidenceOk,
  };
}

/** The outcome of a deterministic check: score 1 or 0 with full confidence. */
export function deterministic(passed: boolean, reasoning: string, signals: Signal[] = []): ValidatorOutcome {
  return { score: passed ? 1 : 0, confidence: 1, reasoning, signals, passed };
}

/** Content of a file read for a validator, or why it could not be read. */
export type FileContent = { ok: true; content: string } | { ok: false; reason: "missing" | "unreadable"; detail: string };
