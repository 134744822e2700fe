// The judged remainder of a tool call: each semantic tool_validation judge in order, each in its
// invoke_agent span when the call is traced; the first rejected or failing judge blocks the call.
import type { JudgeVerdictRecord, ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { GradientResult, JudgeRejectionReason, SemanticValidatorSpec } from "../api/types.js";
import { applyThresholds, fmt, thresholdsOf, TOOL_MIN_SCORE } from "../engine/validators.js";
import { messageOf } from "../errors.js";
import type { TraceSpan, Tracing } from "../telemetry/tracing.js";
import { endJudgeSpan, judgeSpan } from "./gate-spans.js";

/** What one judge child execution produced: a verdict or a rejection, and the child's name. */
export interface JudgeRunResult {
  result?: GradientResult;
  rejection?: JudgeRejectionReason;
  /** Why it was rejected (malformed output, exit code, deadline). */
  detail?: string;
  child: string;
}

/**
 * Runs one tool_validation judge for a proposal (the driver starts the child execution with
 * the reference payload). `index` is the entry's position in tool_validation.
 */
export type JudgeRunner = (
  entry: SemanticValidatorSpec,
  proposal: ToolCallProposal,
  policyViolations: readonly string[],
  index: number,
) => Promise<JudgeRunResult>;

/** A decision's fields the judges settle; the gate adds the call's id, the guard's result and the latency. */
export type JudgedFields = Omit<ToolCallDecision, "toolCallId" | "latencyMs" | "guard">;

/** The judges of one agent: who runs them, the agent's tool_validation entries, and traces. */
export interface ToolJudges {
  judgeRunner: JudgeRunner;
  /** All tool_validation entries (a judge's index is its position here). */
  entries: readonly SemanticValidatorSpec[];
  tracing?: Tracing;
}

/** Runs one tool_validation judge (entry `index`), in its invoke_agent span when the call is traced; a throw is a failed judge. */
async function runToolJudge(
  judges: ToolJudges,
  index: number,
  entry: SemanticValidatorSpec,
  p: ToolCallProposal,
  violations: string[],
  call: TraceSpan | undefined,
): Promise<JudgeRunResult> {
  const span = call === undefined || judges.tracing === undefined ? undefined : judgeSpan(judges.tracing, call, entry.judge_agent);
  let run: JudgeRunResult;
  try {
    run = await judges.judgeRunner(entry, p, violations, index);
  } catch (err) {
    run = { rejection: "failed", detail: messageOf(err), child: "" };
  }
  if (span !== undefined && call !== undefined) {
    const passed = run.result === undefined ? false : applyThresholds(run.result, thresholdsOf(entry, TOOL_MIN_SCORE)).passed;
    endJudgeSpan(span, call, entry.judge_agent, run, passed);
  }
  return run;
}

/** Asks each semantic judge in order; the first rejection or failed threshold blocks, else all passed allow the call. */
export async function judgeCall(
  judges: ToolJudges,
  p: ToolCallProposal,
  violations: string[],
  done: (d: JudgedFields) => ToolCallDecision,
  span: TraceSpan | undefined,
): Promise<ToolCallDecision> {
  const verdicts: JudgeVerdictRecord[] = [];
  for (const entry of judges.entries) {
    if (entry.type !== "semantic") continue;
    const run = await runToolJudge(judges, judges.entries.indexOf(entry), entry, p, violations, span);
    if (run.result === undefined) {
      const rejection = run.rejection ?? "malformed_output";
      verdicts.push({ judge: entry.judge_agent, child: run.child, passed: false, rejection });
      const reason = `judge ${entry.judge_agent}: rejected (${rejection})${run.detail ? `: ${run.detail}` : ""}`;
      return done({ allowed: false, blocked_by: "judge", reason, skippedJudges: false, judges: verdicts });
    }
    const outcome = applyThresholds(run.result, thresholdsOf(entry, TOOL_MIN_SCORE));
    verdicts.push({ judge: entry.judge_agent, child: run.child, passed: outcome.passed, result: run.result });
    if (!outcome.passed) {
      return done({
        allowed: false,
        blocked_by: "judge",
        reason: `judge ${entry.judge_agent}: ${outcome.reasoning}`,
        skippedJudges: false,
        judges: verdicts,
      });
    }
  }
  const scores = verdicts.map((j) => `${j.judge} ${fmt(j.result?.score ?? 0)}`).join(", ");
  return done({
    allowed: true,
    blocked_by: "none",
    reason: `approved by the guard and ${verdicts.length} judge(s): ${scores}`,
    skippedJudges: false,
    judges: verdicts,
  });
}
