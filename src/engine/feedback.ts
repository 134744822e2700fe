// The feedback an iteration hands to the next: the failing validator's reasoning and signals.
import type { ValidatorRecord } from "../api/types.js";
import { fmt } from "./validators/outcome.js";

// Enough for a model to act on; more only burns its context.
const FEEDBACK_LIMIT = 8000;

/** Feedback text for the iteration after `iteration`, from the validator that failed it. */
export function feedbackFrom(iteration: number, failed: ValidatorRecord): string {
  const lines = [
    `Iteration ${iteration} failed validator ${failed.index} (${failed.type}) with score ${fmt(failed.score)} and confidence ${fmt(failed.confidence)}.`,
    failed.reasoning,
  ];
  const signals = failed.signals ?? [];
  if (signals.length > 0) {
    lines.push("Signals:");
    for (const s of signals) lines.push(`- ${s.category} (${fmt(s.score)}): ${s.message}`);
  }
  const text = lines.join("\n");
  return text.length > FEEDBACK_LIMIT ? `${text.slice(0, FEEDBACK_LIMIT)}\n[feedback truncated]` : text;
}

/** Feedback for the iteration after one whose worker did not finish in time or was stopped. */
export function feedbackFromWorker(iteration: number, reason: string): string {
  return `Iteration ${iteration} failed: ${reason}.`;
}
