// The input a judge child execution receives: the reference's canonical fields mapped onto
// the property names the judge declares in spec.input_schema (docs/judges.md).
import type { Agent, ExecutionStatus, JsonObject, JsonValue, MultiJudgeValidatorSpec, SemanticValidatorSpec } from "../api/types.js";
import type { ToolCallProposal } from "../api/protocol.js";
import { compileUserSchema } from "./validators/json-schema.js";
import { messageOf } from "../errors.js";

/** validation_context of every inner-loop (tool-call) judge, fixed by the reference. */
export const INNER_LOOP_VALIDATION_CONTEXT = "semantic_judge_pre_execution_inner_loop";

/** Longest serialized preview of a proposed call sent as `output`; longer ones are cut with a marker. */
export const TOOL_CALL_PREVIEW_LIMIT = 64 * 1024;

/**
 * A tool call as the outer-loop judge sees it in `tool_call_history`. The drivers send no
 * `args`: gavel keeps no argument values after deciding a call (gate/tool-call-summary.ts).
 */
export type ToolCallHistoryEntry = Pick<ToolCallProposal, "tool"> & {
  args?: ToolCallProposal["args"];
  step?: number;
  intent?: string;
  /** Whether the gate let the call through. */
  allowed?: boolean;
  /** Why the gate blocked it, when it did. */
  reason?: string;
};

/**
 * The tool calls of iteration N as its validation judges get them (`tool_call_history`): the
 * decided calls the status keeps, in step order, with their outcome and why a blocked one was
 * blocked. Argument values are not kept anywhere (the audit stores key names only), so they
 * are not sent; undefined when the iteration has no recorded calls.
 */
export function toolCallHistoryOf(status: ExecutionStatus | undefined, iteration: number): ToolCallHistoryEntry[] | undefined {
  const recent = status?.iterations?.find((it) => it.number === iteration)?.toolCalls?.recent;
  if (recent === undefined || recent.length === 0) return undefined;
  return recent.map((e) => ({ tool: e.tool, step: e.step, allowed: e.allowed, ...(e.reason !== undefined ? { reason: e.reason } : {}) }));
}

/** Everything an outer-loop (validation) judge may be told about the iteration it judges. */
export interface ValidationPayloadInput {
  judge: Agent;
  validator: SemanticValidatorSpec | MultiJudgeValidatorSpec;
  /** The worker's task (its `task.instruction`), when it has one. */
  task?: string;
  /** The content evaluated: the worker's final output. */
  output: string;
  /** Paths of the worker's volumes, mounted read-only at the same paths in the judge. */
  workerMounts: string[];
  toolCallHistory?: readonly ToolCallHistoryEntry[];
  /** The worker Execution's `spec.input`. */
  input?: JsonValue;
  deploymentResult?: JsonValue;
}

/** Everything an inner-loop (tool-call) judge is told about a proposed call. */
export interface ToolCallPayloadInput {
  judge: Agent;
  validator: SemanticValidatorSpec;
  task?: string;
  proposal: ToolCallProposal;
  availableTools: string[];
  workerMounts: string[];
  /** Tools blocked by platform policy earlier in the same iteration. */
  policyViolations: string[];
}

/** A judge's input_schema asks for something gavel cannot give, or rejects what it gives. */
export class JudgePayloadError extends Error {
  override readonly name = "JudgePayloadError";
  constructor(
    message: string,
    /** The judge Agent's name. */
    readonly judge: string,
    /** Required properties gavel cannot fill (empty when the payload failed the schema instead). */
    readonly unfillable: string[],
  ) {
    super(message);
  }
}

/** Canonical field name → value; `undefined` means gavel has nothing to send for it. */
type Canonical = Record<string, JsonValue | undefined>;

function declaredProperties(judge: Agent): Record<string, unknown> | undefined {
  const props = judge.spec.input_schema?.properties;
  if (typeof props !== "object" || props === null || Array.isArray(props)) return undefined;
  return Object.keys(props).length > 0 ? props : undefined;
}

function declaredRequired(judge: Agent): string[] {
  const req = judge.spec.input_schema?.required;
  return Array.isArray(req) ? req.filter((r): r is string => typeof r === "string") : [];
}

/**
 * Keeps the canonical fields the judge declares, checks that every required one is filled,
 * and validates the result against the judge's input_schema so a type mismatch is caught
 * here, naming the property, rather than inside the judge.
 */
function mapOntoSchema(judge: Agent, props: Record<string, unknown>, canonical: Canonical): JsonObject {
  const name = judge.metadata.name;
  const payload: JsonObject = {};
  for (const key of Object.keys(props)) {
    const value = Object.hasOwn(canonical, key) ? canonical[key] : undefined;
    if (value !== undefined) payload[key] = value;
  }
  const unfillable = declaredRequired(judge).filter((r) => !Object.hasOwn(payload, r));
  if (unfillable.length > 0) {
    throw new JudgePayloadError(
      `judge ${name}: spec.input_schema requires ${unfillable.join(", ")}, which gavel cannot fill here (it can send: ${Object.keys(
        canonical,
      )
        .filter((k) => canonical[k] !== undefined)
        .join(", ")})`,
      name,
      unfillable,
    );
  }
  let validate;
  try {
    // The draft the schema names (2020-12, 2019-09, else draft-07), as json_schema validators do.
    validate = compileUserSchema(judge.spec.input_schema);
  } catch (err) {
    throw new JudgePayloadError(`judge ${name}: spec.input_schema is not a valid JSON Schema: ${messageOf(err)}`, name, []);
  }
  if (!validate(payload)) {
    const errors = (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`).join("; ");
    throw new JudgePayloadError(`judge ${name}: the payload gavel builds does not match spec.input_schema: ${errors}`, name, []);
  }
  return payload;
}

function historyJson(history: readonly ToolCallHistoryEntry[]): JsonValue[] {
  return history.map((h) => {
    const entry: JsonObject = { tool: h.tool };
    if (h.args !== undefined) entry.args = h.args;
    if (h.step !== undefined) entry.step = h.step;
    if (h.intent !== undefined) entry.intent = h.intent;
    if (h.allowed !== undefined) entry.allowed = h.allowed;
    if (h.reason !== undefined) entry.reason = h.reason;
    return entry;
  });
}

/**
 * The payload of an outer-loop judge. With a declared input_schema (non-empty
 * `properties`) only the declared canonical fields are sent; without one the judge gets
 * `{content, intent}`: the raw output and the criteria.
 */
export function buildValidationPayload(p: ValidationPayloadInput): JsonObject {
  const props = declaredProperties(p.judge);
  const criteria = p.validator.criteria;
  if (props === undefined) return { content: p.output, intent: criteria ?? "" };
  const canonical: Canonical = {
    output: p.output,
    generated_manifest: p.output,
    generated_workflow: p.output,
    task: p.task,
    user_objective: p.task,
    criteria,
    worker_mounts: [...p.workerMounts],
    validation_context: p.judge.metadata.name,
    tool_call_history: p.toolCallHistory === undefined ? undefined : historyJson(p.toolCallHistory),
    deployment_result: p.deploymentResult,
    input: p.input,
  };
  return mapOntoSchema(p.judge, props, canonical);
}

/** The `output` compatibility field of a tool-call judge: the proposed call, serialized and capped. */
export function toolCallPreview(proposal: Pick<ToolCallProposal, "tool" | "args">): string {
  const text = JSON.stringify({ tool: proposal.tool, args: proposal.args });
  if (text.length <= TOOL_CALL_PREVIEW_LIMIT) return text;
  return `${text.slice(0, TOOL_CALL_PREVIEW_LIMIT)}…[truncated ${text.length - TOOL_CALL_PREVIEW_LIMIT} chars]`;
}

/**
 * The payload of an inner-loop judge about a proposed tool call. Without an input_schema
 * the judge gets the whole tool-judge contract of the reference (its eight fields); with
 * one, the declared fields only.
 */
export function buildToolCallPayload(p: ToolCallPayloadInput): JsonObject {
  const proposed: JsonObject = { tool: p.proposal.tool, args: p.proposal.args };
  if (p.proposal.intent !== undefined) proposed.intent = p.proposal.intent;
  // An MCP tool's listing (ADR 0051): the judge reads what the server says the tool is and does, as the server's claim.
  const mcp = p.proposal.mcp;
  if (mcp !== undefined) {
    proposed.mcp = {
      server: mcp.server,
      tool: mcp.tool,
      description: mcp.description ?? "",
      input_schema: mcp.inputSchema,
      annotations: { ...mcp.annotations },
      pinned: mcp.pinned,
    };
  }
  const output = toolCallPreview(p.proposal);
  const contract: Canonical = {
    task: p.task ?? "",
    proposed_tool_call: proposed,
    available_tools: [...p.availableTools],
    worker_mounts: [...p.workerMounts],
    output,
    criteria: p.validator.criteria ?? "",
    validation_context: INNER_LOOP_VALIDATION_CONTEXT,
    policy_violations: [...p.policyViolations],
  };
  const props = declaredProperties(p.judge);
  if (props === undefined) return contract as JsonObject;
  return mapOntoSchema(p.judge, props, {
    ...contract,
    task: p.task,
    criteria: p.validator.criteria,
    user_objective: p.task,
    generated_manifest: output,
  });
}
