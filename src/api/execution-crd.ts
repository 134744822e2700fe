// The Execution resource (one run of an Agent; a judge run is a child Execution): its CRD
// schema, the one declaration from which its TypeScript types are read
// (docs/adr/0060-api-types-derived-from-the-crd-schemas.md).
import { arr, bool, cel, int, obj, str, threshold, typed, type Static } from "./schema-dsl.js";
import { conditions, type API_VERSION, type JsonObject, type JsonValue, type ObjectMeta } from "./meta.js";
import { crd, type CrdDocument } from "./crd-document.js";
import { VALIDATOR_TYPES } from "./validation-rules.js";

// Judges' signals are parsed with the strict GradientResult schema, so gavel always writes all three fields.
const signal = obj(
  "One signal.",
  { category: str("Category."), score: threshold("Score."), message: str("Message.") },
  { written: ["category", "score", "message"] },
);

const gradient = obj(
  "A GradientResult: score and confidence in [0, 1] with reasoning.",
  {
    score: threshold("Score from 0.0 to 1.0."),
    confidence: threshold("Confidence from 0.0 to 1.0."),
    reasoning: str("Why."),
    signals: arr("Per-category signals.", signal),
    metadata: typed<JsonObject>({ type: "object", description: "Free-form metadata.", "x-kubernetes-preserve-unknown-fields": true }),
  },
  { required: ["score", "confidence", "reasoning"] },
);
/** A transition rule: the field cannot change once set. Offline there is no old object, so its twin always holds. */
const immutable = (field: string) =>
  cel("self == oldSelf", `${field} is immutable: create a new Execution instead of changing it`, () => true);

const phase = (description: string) =>
  str(description, { enum: ["Pending", "Running", "Refining", "Succeeded", "Failed", "Cancelled", "TimedOut"] });
const purpose = str("validation (outer loop) or tool_validation (a tool call).", { enum: ["validation", "tool_validation"] });
const validatorType = str("Validator type.", { enum: [...VALIDATOR_TYPES] });

const executionObjectSpec = obj(
  "One run of an Agent. A judge run is a child Execution with spec.parent set.",
  {
    agentRef: obj(
      "The Agent to run (same namespace). Immutable.",
      { name: str("Agent name.", { minLength: 1, maxLength: 253 }) },
      { required: ["name"], "x-kubernetes-validations": [immutable("spec.agentRef")] },
    ),
    input: typed<JsonValue>({
      description: "Input handed to the agent; validated against its input_schema when it declares one.",
      "x-kubernetes-preserve-unknown-fields": true,
    }),
    parent: obj(
      "Set on judge children: what they judge and for whom. Immutable.",
      {
        name: str("Parent Execution name."),
        uid: str("Parent Execution uid."),
        purpose,
        iteration: int("Parent iteration being judged.", { minimum: 1 }),
        validatorIndex: int("Index of the validator (validation) or tool_validation entry.", { minimum: 0 }),
        toolCallId: str("Idempotency key of the judged tool call (tool_validation only)."),
        depth: int("Depth in the judge tree: a worker's judge is 1; at most 3.", { minimum: 1, maximum: 3 }),
      },
      { required: ["name", "uid", "purpose", "iteration", "validatorIndex"], "x-kubernetes-validations": [immutable("spec.parent")] },
    ),
    timeoutSeconds: int("Deadline of this Execution in seconds; overrides the Agent's execution.timeout_seconds.", { minimum: 1 }),
  },
  { required: ["agentRef"] },
);

const executionStatus = obj("Observed state of the Execution, written by the controller.", {
  phase: phase("Pending, Running, Refining, Succeeded, Failed, Cancelled or TimedOut."),
  iteration: int("Current (or last) iteration, from 1.", { minimum: 0 }),
  score: threshold("Lowest validator score of the last finished iteration."),
  message: str("Human-readable summary."),
  observedGeneration: int("metadata.generation last acted on.", { format: "int64" }),
  startTime: str("When the Execution started.", { format: "date-time" }),
  completionTime: str("When it finished.", { format: "date-time" }),
  rejection: str("Why a judge produced no verdict.", { enum: ["malformed_output", "failed", "cancelled", "timed_out"] }),
  verdict: gradient,
  rawOutput: obj(
    "A finished judge's own output, bounded (its tails), kept so a rejected verdict can be read back (gavel describe, kubectl get -o yaml).",
    {
      stdout: str("The last 16 KiB of its stdout (where the verdict is read from)."),
      stderr: str("The last 4 KiB of its stderr; empty where the runtime merges stderr into stdout."),
      exitCode: int("Its exit code."),
      stdoutBytes: int("Length of its whole stdout in bytes.", { minimum: 0 }),
      truncated: bool("True when stdout or stderr was longer than kept here."),
      streamsMerged: str(
        "Set when stderr could not be kept apart from stdout (its pod did not run under gavel-launch: the image's program is unknown, declare spec.runtime.command): why.",
      ),
    },
    { written: ["stdout", "stderr", "exitCode", "stdoutBytes", "truncated"] },
  ),
  iterations: arr(
    "One record per iteration.",
    obj(
      "One iteration.",
      {
        number: int("Iteration number, from 1.", { minimum: 1 }),
        phase: str("Running, Validating, Passed, Refining or Failed.", { enum: ["Running", "Validating", "Passed", "Refining", "Failed"] }),
        exitCode: int("Exit code of the worker run."),
        startTime: str("Start.", { format: "date-time" }),
        completionTime: str("End.", { format: "date-time" }),
        feedback: str("Feedback handed to this iteration from the previous one."),
        toolCalls: obj(
          "The tool calls the gate decided in this iteration: counts of all of them and the last 20, without argument values.",
          {
            proposed: int("Calls proposed (decided or being decided).", { minimum: 0 }),
            allowed: int("Calls allowed.", { minimum: 0 }),
            blockedByGuard: int("Calls the deterministic guard blocked.", { minimum: 0 }),
            blockedByJudge: int("Calls a tool_validation judge blocked.", { minimum: 0 }),
            blockedByApproval: int("Calls a person denied, or whose approval timed out (ToolApprovals).", { minimum: 0 }),
            recent: arr(
              "The most recent decided calls, in step order.",
              obj(
                "One decided call.",
                {
                  step: int("Position of the call in the iteration.", { minimum: 1 }),
                  tool: str("Tool name."),
                  server: str("The MCP server whose tool it is (tool is <server>.<name>); absent for a built-in tool."),
                  toolCallId: str("The call's idempotency key."),
                  allowed: bool("Whether the call was allowed."),
                  blockedBy: str("none, guard, judge or approval.", { enum: ["none", "guard", "judge", "approval"] }),
                  check: str("The guard check that denied or flagged it."),
                  reason: str("Why it was blocked (rule names or judge reasoning, never argument values)."),
                  judges: arr("Tool-judge child Executions that judged it.", str("Execution name.")),
                },
                { required: ["step", "tool", "toolCallId", "allowed", "blockedBy"] },
              ),
              { maxItems: 20 },
            ),
          },
          { required: ["proposed", "allowed", "blockedByGuard", "blockedByJudge"] },
        ),
        validators: arr(
          "Validator results, in declared order (stops at the first failure).",
          obj(
            "One validator result.",
            {
              index: int("Validator index.", { minimum: 0 }),
              type: validatorType,
              passed: bool("score >= min_score and confidence >= min_confidence."),
              score: threshold("Score."),
              confidence: threshold("Confidence."),
              reasoning: str("Reasoning."),
              signals: arr("Signals.", signal),
              children: arr("Judge child Executions.", str("Execution name.")),
            },
            { required: ["index", "type", "passed", "score", "confidence", "reasoning"] },
          ),
        ),
      },
      { required: ["number", "phase"] },
    ),
  ),
  children: arr(
    "Judge child Executions.",
    obj(
      "One child.",
      {
        name: str("Child Execution name."),
        purpose,
        iteration: int("Iteration judged.", { minimum: 1 }),
        validatorIndex: int("Validator index.", { minimum: 0 }),
        judge: str("Judge Agent name."),
        toolCallId: str("Tool call id (tool_validation)."),
        phase: phase("Child phase."),
      },
      { required: ["name", "purpose", "iteration", "validatorIndex", "judge"] },
    ),
  ),
  toolCalls: obj(
    "Tool calls of every iteration, counted.",
    {
      proposed: int("Calls proposed.", { minimum: 0 }),
      allowed: int("Calls allowed.", { minimum: 0 }),
      blocked: int("Calls blocked by the guard, a judge or a person's approval.", { minimum: 0 }),
    },
    { written: ["proposed", "allowed", "blocked"] },
  ),
  conditions,
});

/** The Execution CRD. */
export const executionCrd: CrdDocument = crd("Execution", "executions", ["ex"], {
  columns: [
    { name: "Agent", type: "string", jsonPath: ".spec.agentRef.name" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Iteration", type: "integer", jsonPath: ".status.iteration" },
    { name: "Score", type: "number", jsonPath: ".status.score" },
    { name: "Calls", type: "integer", jsonPath: ".status.toolCalls.proposed", description: "Tool calls proposed to the gate." },
    { name: "Blocked", type: "integer", jsonPath: ".status.toolCalls.blocked", description: "Tool calls the guard or a judge blocked." },
    { name: "Parent", type: "string", jsonPath: ".spec.parent.name" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  required: ["spec"],
  spec: executionObjectSpec,
  status: executionStatus,
});

/** One run of an Agent; a judge run has spec.parent set. */
export interface Execution {
  apiVersion: typeof API_VERSION;
  kind: "Execution";
  metadata: ObjectMeta;
  spec: ExecutionObjectSpec;
  status?: ExecutionStatus;
}

export type ExecutionObjectSpec = Static<typeof executionObjectSpec>;
/** Set on judge children: what they judge and for whom. */
export type ParentRef = NonNullable<ExecutionObjectSpec["parent"]>;
export type JudgePurpose = ParentRef["purpose"];
export type ExecutionStatus = Static<typeof executionStatus>;
export type ExecutionPhase = NonNullable<ExecutionStatus["phase"]>;
/** The bounded output of a finished judge run, kept in its child Execution's status. */
export type JudgeRawOutput = NonNullable<ExecutionStatus["rawOutput"]>;
export type IterationRecord = NonNullable<ExecutionStatus["iterations"]>[number];
/** The tool calls of one iteration: counts of all of them, and the most recent ones. */
export type ToolCallSummary = NonNullable<IterationRecord["toolCalls"]>;
/** One decided tool call as the status shows it: names and outcome, never argument values. */
export type ToolCallEntry = NonNullable<ToolCallSummary["recent"]>[number];
export type ValidatorRecord = NonNullable<IterationRecord["validators"]>[number];
export type ChildRef = NonNullable<ExecutionStatus["children"]>[number];
/** A judge's or validator's verdict: a score and a confidence in [0, 1], with reasons. */
export type GradientResult = Static<typeof gradient>;
export type Signal = Static<typeof signal>;
/** Why a judge produced no verdict. */
export type JudgeRejectionReason = NonNullable<ExecutionStatus["rejection"]>;
