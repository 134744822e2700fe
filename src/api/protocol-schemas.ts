// The JSON Schemas of the tool-call wire format (the types are in protocol.ts): what a
// worker may propose, what a gate may answer, and the error reply. The codec
// (src/transport/codec.ts) compiles them once and checks both sides with them.
import { GRADIENT_RESULT_SCHEMA } from "./gradient-result-schema.js";

const k8sName = { type: "string", minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" } as const;

/** The idempotency key must be one NATS subject token (it names the stored decision). */
export const TOOL_CALL_ID_PATTERN = "^[A-Za-z0-9_-]{1,128}$";

/** Schema of a proposal; unknown fields are refused so a typo never passes silently. */
export const TOOL_CALL_PROPOSAL_SCHEMA = {
  $id: "gavel:ToolCallProposal",
  type: "object",
  additionalProperties: false,
  required: ["namespace", "execution", "iteration", "step", "toolCallId", "tool", "args"],
  properties: {
    namespace: k8sName,
    execution: k8sName,
    iteration: { type: "integer", minimum: 0 },
    step: { type: "integer", minimum: 1 },
    toolCallId: { type: "string", pattern: TOOL_CALL_ID_PATTERN },
    tool: { type: "string", minLength: 1, maxLength: 256 },
    args: { type: "object" },
    intent: { type: "string", maxLength: 16384 },
    toolHash: { type: "string", pattern: "^[0-9a-f]{64}$" },
    mcp: {
      type: "object",
      additionalProperties: false,
      required: ["server", "tool", "inputSchema", "pinned"],
      properties: {
        server: { type: "string", pattern: "^[a-z0-9]([-a-z0-9_]*[a-z0-9])?$", maxLength: 32 },
        tool: { type: "string", pattern: "^[A-Za-z0-9_.-]{1,128}$" },
        description: { type: "string", maxLength: 16384 },
        inputSchema: { type: "object" },
        annotations: {
          type: "object",
          properties: {
            title: { type: "string", maxLength: 1024 },
            readOnlyHint: { type: "boolean" },
            destructiveHint: { type: "boolean" },
            idempotentHint: { type: "boolean" },
            openWorldHint: { type: "boolean" },
          },
        },
        pinned: { type: "boolean" },
      },
    },
  },
} as const;

const guardChecks = ["revocation", "hash", "capability", "destructive_pattern", "sequence_contract", "signature", "adaptive_rule"];

/** Schema of a decision; extra fields are allowed so a newer gate can add some. */
export const TOOL_CALL_DECISION_SCHEMA = {
  $id: "gavel:ToolCallDecision",
  type: "object",
  required: ["toolCallId", "allowed", "blocked_by", "reason", "guard", "skippedJudges", "judges", "latencyMs"],
  properties: {
    toolCallId: { type: "string", pattern: TOOL_CALL_ID_PATTERN },
    allowed: { type: "boolean" },
    blocked_by: { enum: ["guard", "judge", "approval", "none"] },
    reason: { type: "string" },
    guard: {
      type: "object",
      required: ["approved"],
      properties: {
        approved: { type: "boolean" },
        check: { enum: guardChecks },
        reason: { type: "string" },
        flags: { type: "array", items: { type: "string" } },
        warnings: { type: "array", items: { type: "string" } },
        dryrun: { type: "array", items: { type: "string" } },
      },
    },
    skippedJudges: { type: "boolean" },
    judges: {
      type: "array",
      items: {
        type: "object",
        required: ["judge", "child", "passed"],
        properties: {
          judge: { type: "string" },
          child: { type: "string" },
          passed: { type: "boolean" },
          result: GRADIENT_RESULT_SCHEMA,
          rejection: { enum: ["malformed_output", "failed", "cancelled", "timed_out"] },
        },
      },
    },
    approval: {
      type: "object",
      required: ["name", "outcome"],
      properties: {
        name: { type: "string" },
        outcome: { enum: ["approved", "denied", "timed_out", "withdrawn"] },
        decidedBy: { type: "string" },
        reason: { type: "string" },
        standing: { type: "boolean" },
        failIteration: { type: "boolean" },
      },
    },
    instead: {
      type: "object",
      properties: {
        tools: { type: "array", items: { type: "string" } },
        paths: { type: "array", items: { type: "string" } },
        commands: { type: "array", items: { type: "string" } },
      },
    },
    latencyMs: { type: "number", minimum: 0 },
  },
  // An allowed call is blocked by nothing; a blocked one names who blocked it.
  if: { properties: { allowed: { const: true } } },
  then: { properties: { blocked_by: { const: "none" } } },
  else: { properties: { blocked_by: { enum: ["guard", "judge", "approval"] } } },
} as const;

/** Schema of the error reply. */
export const TOOL_CALL_ERROR_SCHEMA = {
  $id: "gavel:ToolCallErrorReply",
  type: "object",
  required: ["error"],
  properties: {
    toolCallId: { type: "string" },
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { enum: ["invalid_proposal", "forbidden", "conflict", "internal"] },
        field: { type: "string" },
        message: { type: "string" },
      },
    },
  },
} as const;
