// The seam between the outer loop and multi_judge consensus: the engine asks this module to
// combine judge votes. The full consensus modes live in consensus.ts (another part of the
// engine); until it lands this is a plain average over valid verdicts.
import type { GradientResult, JudgeRejectionReason, MultiJudgeValidatorSpec, Signal } from "../api/types.js";
import { applyThresholds, thresholdsOf, type ValidatorOutcome } from "./validators/outcome.js";

/** One judge's part in a multi_judge validator: its verdict, or why it gave none. */
export interface Vote {
  judge: string;
  result?: GradientResult;
  rejection?: JudgeRejectionReason;
}

/** Combines the votes of a multi_judge validator into its outcome. */
export type VoteAggregator = (spec: MultiJudgeValidatorSpec, votes: Vote[], defaultMinScore?: number) => ValidatorOutcome;

/** Average of valid verdicts; fewer valid verdicts than min_judges_required fails. */
export const averageVotes: VoteAggregator = (spec, votes, defaultMinScore = 1.0) => {
  const valid = votes.filter((v): v is Vote & { result: GradientResult } => v.result !== undefined && v.rejection === undefined);
  const rejected: Signal[] = votes
    .filter((v) => v.rejection !== undefined)
    .map((v) => ({ category: v.rejection as string, score: 0, message: `judge ${v.judge} gave no verdict (${v.rejection})` }));
  const required = spec.min_judges_required ?? 1;
  if (valid.length < required) {
    return {
      score: 0,
      confidence: 0,
      reasoning: `only ${valid.length} of ${votes.length} judges returned a valid verdict; min_judges_required is ${required}`,
      signals: rejected,
      passed: false,
    };
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const outcome = applyThresholds(
    {
      score: mean(valid.map((v) => v.result.score)),
      confidence: mean(valid.map((v) => v.result.confidence)),
      reasoning: valid.map((v) => `${v.judge}: ${v.result.reasoning}`).join("\n"),
      signals: [...valid.flatMap((v) => v.result.signals ?? []), ...rejected],
    },
    thresholdsOf(spec, defaultMinScore),
  );
  return outcome;
};
