// The ToolApproval resource: one tool call waiting for a person (the escalation ladder's last
// tier, issue 25, docs/adr/0067-tool-approvals.md). The gate creates it, owned by the Execution;
// a person decides it with `gavel approve|deny`, which writes status.decision through the
// status subresource. The API server itself checks who decides (the admission policy the chart
// ships, tool-approval-policy.ts): the decider is the authenticated user holding the
// `approve` verb, a decision names the digest it was made for, and it is never changed.
import { arr, bool, int, num, obj, str, typed, type Static } from "./schema-dsl.js";
import { conditions, type API_VERSION, type JsonObject, type ObjectMeta } from "./meta.js";
import { crd, type CrdDocument } from "./crd-document.js";

/** When a tool's calls go to a person (an Agent's tools[].approval; a GuardPolicy's approval sets the least). */
export const APPROVAL_MODES = ["never", "always", "on_judge_reject", "on_flag", "on_uncertain"] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
/** What asks a person: every approval mode but never (what a GuardPolicy's approval may name). */
export const APPROVAL_TRIGGERS = ["always", "on_judge_reject", "on_flag", "on_uncertain"] as const;
export type ApprovalTrigger = (typeof APPROVAL_TRIGGERS)[number];
/** What an unanswered approval does at its deadline: the call is denied, or denied and the iteration fails. Never allowed. */
export const APPROVAL_ON_TIMEOUT = ["deny", "fail"] as const;
export type ApprovalOnTimeout = (typeof APPROVAL_ON_TIMEOUT)[number];
/** Where an approval stands: waiting, or how it ended. */
export const APPROVAL_PHASES = ["Pending", "Approved", "Denied", "TimedOut", "Withdrawn"] as const;
export type ApprovalPhase = (typeof APPROVAL_PHASES)[number];

/** The verb of `toolapprovals` a decider needs (as `approve` on certificatesigningrequests/approval). */
export const APPROVE_VERB = "approve";

const judgeVerdict = obj(
  "One tool_validation judge's verdict on the call.",
  {
    judge: str("Judge Agent."),
    child: str("Its child Execution."),
    passed: bool("Whether the call passed this judge's thresholds."),
    score: num("Score in [0, 1]."),
    confidence: num("Confidence in [0, 1]."),
    reasoning: str("The judge's reasoning."),
    rejection: str("Why the judge gave no verdict (malformed_output, failed, cancelled, timed_out)."),
  },
  { required: ["judge", "passed"] },
);

const toolApprovalSpec = obj(
  "The proposed tool call waiting for a person, as the gate saw it. Written once by the gate; never changed.",
  {
    execution: str("The Execution whose worker proposed the call.", { minLength: 1 }),
    executionUID: str("That Execution's uid (a re-created Execution of the same name is another run)."),
    toolCallId: str("The call's idempotency key.", { minLength: 1 }),
    iteration: int("Iteration of the call.", { minimum: 1 }),
    step: int("Position of the call in its iteration.", { minimum: 1 }),
    tool: str("Tool name.", { minLength: 1 }),
    arguments: typed<JsonObject>({
      type: "object",
      description: "The call's arguments (long strings cut to 1024 characters; the digest covers the whole call).",
      "x-kubernetes-preserve-unknown-fields": true,
    }),
    intent: str("The model's stated reason for the call."),
    digest: str(
      "sha256 of the exact call (execution, iteration, step, tool, arguments, tool code): a decision applies to this digest only.",
      {
        pattern: "^sha256:[0-9a-f]{64}$",
      },
    ),
    repeatDigest: str(
      "sha256 of the call without its iteration and step (execution, tool, arguments, tool code): a decision for the execution applies to every call of this Execution with this digest.",
      { pattern: "^sha256:[0-9a-f]{64}$" },
    ),
    trigger: str(
      "Why a person is asked: always (the tool's approval), on_judge_reject (a judge rejected it), on_flag (the guard flagged it without denying), or on_uncertain (a judge's score near its threshold, or judges that disagree).",
      { enum: ["always", "on_judge_reject", "on_flag", "on_uncertain"] },
    ),
    reason: str("What the ladder found before asking: the guard's and the judges' outcome."),
    guardFindings: arr(
      "What the guard flagged or warned about (it allowed the call: a guard denial is never escalated).",
      str("A finding."),
    ),
    judges: arr("Each tool_validation judge's verdict, in order.", judgeVerdict),
    deadline: str("When the approval expires unanswered.", { format: "date-time" }),
    onTimeout: str("At the deadline: deny (the call is denied) or fail (denied, and the worker's iteration fails). Never allow.", {
      enum: [...APPROVAL_ON_TIMEOUT],
    }),
  },
  { required: ["execution", "toolCallId", "iteration", "step", "tool", "digest", "trigger", "deadline", "onTimeout"] },
);

const toolApprovalStatus = obj("The decision and how the approval ended.", {
  decision: obj(
    "A person's decision, written once through the status subresource (gavel approve|deny); the API server checks decidedBy and the verb.",
    {
      approved: bool("true: the call runs; false: it is denied."),
      decidedBy: str("The authenticated user who decided (the API server checks it is the request's user)."),
      reason: str("Why (told to the worker with a denial)."),
      digest: str("The digest the decider saw: must equal spec.digest.", { pattern: "^sha256:[0-9a-f]{64}$" }),
      decidedAt: str("When.", { format: "date-time" }),
      forExecution: bool(
        "gavel approve|deny --for-execution: the decision stands for the identical calls of this Execution (same spec.repeatDigest) that follow, without asking again.",
      ),
    },
    { required: ["approved", "decidedBy", "digest"] },
  ),
  phase: str("Pending, or how it ended: Approved, Denied, TimedOut, Withdrawn (its run ended while it waited); written by the gate.", {
    enum: [...APPROVAL_PHASES],
  }),
  message: str("What the worker was told."),
  conditions,
});

/** The ToolApproval CRD. */
export const toolApprovalCrd: CrdDocument = crd("ToolApproval", "toolapprovals", ["ta", "approvals"], {
  columns: [
    { name: "Execution", type: "string", jsonPath: ".spec.execution" },
    { name: "Tool", type: "string", jsonPath: ".spec.tool" },
    { name: "Trigger", type: "string", jsonPath: ".spec.trigger" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Decided-By", type: "string", jsonPath: ".status.decision.decidedBy" },
    { name: "Deadline", type: "string", jsonPath: ".spec.deadline", priority: 1 },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  required: ["spec"],
  spec: toolApprovalSpec,
  status: toolApprovalStatus,
});

export type ToolApprovalSpec = Static<typeof toolApprovalSpec>;
export type ToolApprovalStatus = Static<typeof toolApprovalStatus>;
export type ApprovalDecision = NonNullable<ToolApprovalStatus["decision"]>;

/** A tool call waiting for a person. */
export interface ToolApproval {
  apiVersion: typeof API_VERSION;
  kind: "ToolApproval";
  metadata: ObjectMeta;
  spec: ToolApprovalSpec;
  status?: ToolApprovalStatus;
}
