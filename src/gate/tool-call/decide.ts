// What the tool-call service asks of the gate's decide function and how it treats the
// answer: the context a decide gets, the judged remainder it may hand back, the refusal it
// may throw, and the denial (fail closed) that stands in for a decide that failed.
import type { ToolCallDecision, ToolCallErrorCode, ToolCallProposal } from "../../api/protocol.js";
import { checkDecision } from "../../transport/codec.js";
import type { IterationView } from "./iteration-index.js";

/** What the gate knows about the proposal's iteration when deciding it (any replica decided those calls). */
export interface DecideContext {
  iteration: IterationView;
  /** The proposal's W3C traceparent header (the worker's iteration span), when it carried one. */
  traceParent?: string;
}

/** The slow remainder of a decision (judges): run only by the gate that holds the call's claim. */
export interface Judged {
  judged: () => Promise<ToolCallDecision>;
}

/**
 * The gate's decision function (guard, skip_judge, judges); injected, never imported here.
 * It answers at once with a decision, or with the judged remainder, which the service runs
 * only after claiming the call in the store. Throwing a ToolCallRefusal refuses the proposal.
 */
export type Decide = (proposal: ToolCallProposal, context: DecideContext) => Promise<ToolCallDecision | Judged> | ToolCallDecision | Judged;

/** A proposal the gate will not decide (unknown or finished execution): a typed error reply. */
export class ToolCallRefusal extends Error {
  override readonly name = "ToolCallRefusal";
  constructor(
    readonly code: Exclude<ToolCallErrorCode, "internal">,
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** True when `decide` answered with the judged remainder, not a decision. */
export function isJudged(v: ToolCallDecision | Judged): v is Judged {
  return typeof (v as Judged).judged === "function";
}

// A decision that breaks the schema or answers another call denies the call (fail closed).
export function checked(p: ToolCallProposal, produced: ToolCallDecision): ToolCallDecision {
  const c = checkDecision(produced);
  if (!c.ok) return failClosed(p, `gate_error: ${c.error.message}`);
  if (c.value.toolCallId !== p.toolCallId)
    return failClosed(p, `gate_error: decide answered toolCallId ${c.value.toolCallId} for ${p.toolCallId}`);
  return c.value;
}

/** A denial by the gate itself (its decide failed or produced nothing valid): the call does not run. */
export function failClosed(p: ToolCallProposal, reason: string, latencyMs = 0): ToolCallDecision {
  return {
    toolCallId: p.toolCallId,
    allowed: false,
    blocked_by: "guard",
    reason,
    guard: { approved: false, reason },
    skippedJudges: false,
    judges: [],
    latencyMs,
  };
}
