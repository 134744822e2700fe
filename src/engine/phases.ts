// Execution phases: which are final, and the one mapping between a judge's outcome and the
// phase (plus verdict or rejection) its child Execution and ChildRef show, both ways.
import type { ExecutionPhase, ExecutionStatus, JudgeRawOutput, JudgeRejectionReason } from "../api/types.js";
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

/** Bytes of a judge's stdout and stderr kept in its status (the tails: a verdict is printed last). */
export const RAW_STDOUT_BYTES = 16 * 1024;
export const RAW_STDERR_BYTES = 4 * 1024;

/** The last `max` bytes of a text, cut on a character boundary. */
function tail(text: string, max: number): { text: string; cut: boolean } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= max) return { text, cut: false };
  // A continuation byte (10xxxxxx) cannot start a character: move past it.
  let start = bytes.length - max;
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  return { text: bytes.subarray(start).toString("utf8"), cut: true };
}

/** What a judge run printed, bounded for its status. */
export function rawOutputOf(end: { stdout: string; stderr?: string; exitCode: number; streamsMerged?: string }): JudgeRawOutput {
  const out = tail(end.stdout, RAW_STDOUT_BYTES);
  const err = tail(end.stderr ?? "", RAW_STDERR_BYTES);
  return {
    stdout: out.text,
    stderr: err.text,
    exitCode: end.exitCode,
    stdoutBytes: Buffer.byteLength(end.stdout),
    truncated: out.cut || err.cut,
    ...(end.streamsMerged !== undefined ? { streamsMerged: end.streamsMerged } : {}),
  };
}

/**
 * The final status of a judge for an outcome: verdict and score, or rejection and why; with
 * what its run printed (`raw`, see rawOutputOf) when it ran.
 */
export function judgeStatus(current: ExecutionStatus | undefined, outcome: JudgeOutcome, now: Date, raw?: JudgeRawOutput): ExecutionStatus {
  const base: ExecutionStatus = { ...current, completionTime: now.toISOString(), ...(raw !== undefined ? { rawOutput: raw } : {}) };
  if (base.startTime === undefined) base.startTime = base.completionTime;
  if (outcome.ok) {
    return {
      ...base,
      phase: "Succeeded",
      verdict: outcome.result,
      score: outcome.result.score,
      message: "verdict parsed from the judge's output",
    };
  }
  return { ...base, phase: phaseOfOutcome(outcome), rejection: outcome.rejection, message: outcome.detail };
}
