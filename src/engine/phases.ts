// Execution phases: which are final, and the one mapping between a judge's outcome and the
// phase (plus verdict or rejection) its child Execution and ChildRef show, both ways.
import type { ExecutionPhase, ExecutionStatus, JudgeRejectionReason } from "../api/types.js";
import type { JudgeOutcome } from "./gradient.js";

const TERMINAL: ReadonlySet<ExecutionPhase> = new Set(["Succeeded", "Failed", "Cancelled", "TimedOut"]);

/** Whether a phase is final. */
export function isTerminal(phase: ExecutionPhase | undefined): boolean {
  return phase !== undefined && TERMINAL.has(phase);
}

/** The phase a judge ends in: Succeeded with a verdict; TimedOut, Cancelled or Failed without. */
export function phaseOfOutcome(outcome: JudgeOutcome): ExecutionPhase {
  if (outcome.ok) return "Succeeded";
  return outcome.rejection === "timed_out" ? "TimedOut" : outcome.rejection === "cancelled" ? "Cancelled" : "Failed";
}

/** The rejection a final phase without a verdict stands for. */
export function rejectionOfPhase(phase: ExecutionPhase): JudgeRejectionReason {
  return phase === "TimedOut" ? "timed_out" : phase === "Cancelled" ? "cancelled" : "failed";
}

/** A finished judge's outcome from its status (verdict or rejection); undefined while it runs. */
export function outcomeOfStatus(status: ExecutionStatus | undefined): JudgeOutcome | undefined {
  if (status === undefined || !isTerminal(status.phase)) return undefined;
  const phase = status.phase as ExecutionPhase;
  if (phase === "Succeeded" && status.verdict !== undefined) return { ok: true, result: status.verdict };
  return { ok: false, rejection: status.rejection ?? rejectionOfPhase(phase), detail: status.message ?? `the judge child ended ${phase}` };
}

/** The final status of a judge for an outcome: verdict and score, or rejection and why. */
export function judgeStatus(current: ExecutionStatus | undefined, outcome: JudgeOutcome, now: Date): ExecutionStatus {
  const base: ExecutionStatus = { ...current, completionTime: now.toISOString() };
  if (base.startTime === undefined) base.startTime = base.completionTime;
  if (outcome.ok) {
    return { ...base, phase: "Succeeded", verdict: outcome.result, score: outcome.result.score, message: "verdict parsed from the judge's output" };
  }
  return { ...base, phase: phaseOfOutcome(outcome), rejection: outcome.rejection, message: outcome.detail };
}
