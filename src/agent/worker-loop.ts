// The worker's model loop: asks the model, sends every tool call it wants through the gate
// and waits, executes allowed built-ins itself (and allowed MCP tools through their servers),
// hands denials back to the model as tool errors with the reasoning, and ends with the
// model's final answer.
import { randomBytes } from "node:crypto";
import type { McpToolDescriptor, ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { JsonValue, ToolEntry } from "../api/types.js";
import { BUILTIN_TOOLS, runBuiltin, toolEntry, toolName, type BuiltinLimits, type ToolSpec } from "./builtin-tools.js";
import type { Confinement } from "./confinement.js";
import { ModelError, type ChatMessage, type ChatModel, type ModelToolCall } from "./model.js";
import { messageOf } from "../errors.js";
import { refusalOf, refusalText } from "../gate/refusal.js";

/** The worker's side of the gate, where proposals go: the NATS client in a worker, its own tools' bounds in a judge, anything with the same shape in tests. */
export interface GateClient {
  propose(proposal: ToolCallProposal): Promise<ToolCallDecision>;
}

/** The Agent's MCP servers' tools (src/mcp/mcp-toolbox.ts): offered beside the built-ins, called only once the gate allowed a call. */
export interface McpTools {
  tools(): readonly ToolSpec[];
  /** Whether the name is `<server>.<tool>` of one of the Agent's servers. */
  owns(name: string): boolean;
  /** The tool's listing for the proposal (pinned or not); undefined when its server lists no such tool. */
  descriptor(name: string): McpToolDescriptor | undefined;
  /** Runs an allowed call; the result text, or a throw naming server and tool. */
  call(name: string, args: ToolCallProposal["args"]): Promise<string>;
}

/** Who this worker run is. */
export interface WorkerIdentity {
  namespace: string;
  execution: string;
  iteration: number;
}

/** What the worker is asked to do. */
export interface WorkerTask {
  instruction: string;
  input?: JsonValue;
  /** The previous iteration's validator reasoning, when this is a refinement. */
  feedback?: string;
}

export interface WorkerLoopOptions {
  identity: WorkerIdentity;
  task: WorkerTask;
  /** The agent's spec.tools: the only built-in tools offered to the model. */
  tools: ToolEntry[];
  /** The agent's MCP servers' tools, offered after the built-ins. */
  mcp?: McpTools;
  confinement: Confinement;
  model: ChatModel;
  gate: GateClient;
  limits: BuiltinLimits;
  /** Environment commands run with (secrets already removed). */
  commandEnv: NodeJS.ProcessEnv;
  /** Model turns before giving up; default 50. */
  maxTurns?: number;
  /** Structured progress lines (never argument values). */
  log?: (event: Record<string, unknown>) => void;
  /** Makes toolCallIds unique to this run; random by default. */
  runNonce?: string;
  /** The system prompt; default the worker's (a judge has its own, src/agent/judge-mode.ts). */
  systemPrompt?: string;
  /**
   * The live hashes of the tools' code (a ToolCodeHasher over `builtinToolFiles()`): refreshed
   * before each proposal, the proposed tool's hash goes with it (guard check 2).
   */
  toolCode?: { refresh(tools?: readonly string[]): Promise<void>; hashes(): ReadonlyMap<string, string> };
}

/** What happened to one proposed call. */
export interface CallRecord {
  step: number;
  toolCallId: string;
  tool: string;
  allowed: boolean;
  blockedBy: ToolCallDecision["blocked_by"];
  executed: boolean;
  error?: string;
}

/** The end of a run: the final answer and the calls made on the way. */
export interface WorkerOutcome {
  answer: string;
  calls: CallRecord[];
  turns: number;
}

const SYSTEM_PROMPT = [
  "You are a worker agent run by gavel.",
  "Every tool call you make is reviewed before it runs. A denied call comes back as a tool error with the reason: do not retry it unchanged; adapt and continue with the task.",
  "Files are available only inside the mounted volumes. Commands run without a shell: one command per call, no pipes or redirections.",
  "When the task is done, reply with the final answer and no tool calls.",
].join("\n");

/** The first user message: the task, its input and any feedback from the previous iteration. */
export function taskMessage(task: WorkerTask): string {
  const parts = [task.instruction];
  if (task.input !== undefined && task.input !== null)
    parts.push(`Input:\n${typeof task.input === "string" ? task.input : JSON.stringify(task.input, null, 2)}`);
  if (task.feedback !== undefined && task.feedback !== "")
    parts.push(`Feedback on the previous attempt (fix what it points out):\n${task.feedback}`);
  return parts.join("\n\n");
}

/** The tools offered to the model: the built-ins named in spec.tools, in its order. */
export function offeredTools(tools: ToolEntry[]): { offered: ToolSpec[]; unsupported: string[] } {
  const offered: ToolSpec[] = [];
  const unsupported: string[] = [];
  for (const t of tools) {
    const spec = BUILTIN_TOOLS[toolName(t)];
    if (spec !== undefined) offered.push(spec);
    else unsupported.push(toolName(t));
  }
  return { offered, unsupported };
}

/** Text the model gets back for a denied call: who denied it, why, and what would be allowed instead (gate/refusal.ts). */
export function denialText(d: ToolCallDecision, tool = ""): string {
  return refusalText(refusalOf(tool, d));
}

/** What the model gets back for an allowed call: the tool's output, after a person's approval when one was asked. */
function approvedText(d: ToolCallDecision, content: string): string {
  const a = d.approval;
  if (a?.outcome !== "approved") return content;
  const standing = a.standing === true ? ` (standing for this execution: ToolApproval ${a.name})` : "";
  return `[approved by ${a.decidedBy ?? "?"}${a.reason ? `: ${a.reason}` : ""}${standing}]\n${content}`;
}

/** An approval that timed out with onTimeout: fail ends the iteration (the worker fails), not only the call. */
export class ApprovalTimeoutError extends Error {
  override readonly name = "ApprovalTimeoutError";
}

function failIfTimedOut(d: ToolCallDecision): void {
  if (d.approval?.failIteration === true) throw new ApprovalTimeoutError(d.reason);
}

/** Runs the loop to the model's final answer; throws on an unrecoverable error (gate, model). */
export async function runWorker(o: WorkerLoopOptions): Promise<WorkerOutcome> {
  const { offered: builtins, unsupported } = offeredTools(o.tools);
  const offered = [
    ...builtins,
    ...(o.mcp?.tools() ?? []).map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
  ];
  if (unsupported.length > 0) o.log?.({ event: "tools_not_offered", tools: unsupported, why: "not a built-in tool of this runtime" });
  const nonce = o.runNonce ?? randomBytes(4).toString("hex");
  const messages: ChatMessage[] = [
    { role: "system", content: o.systemPrompt ?? SYSTEM_PROMPT },
    { role: "user", content: taskMessage(o.task) },
  ];
  const calls: CallRecord[] = [];
  const maxTurns = o.maxTurns ?? 50;
  for (let turn = 1; turn <= maxTurns; turn++) {
    const reply = await o.model.next(messages, offered);
    if (reply.toolCalls.length === 0) {
      o.log?.({ event: "final_answer", turns: turn, calls: calls.length });
      return { answer: reply.content ?? "", calls, turns: turn };
    }
    messages.push({ role: "assistant", content: reply.content ?? null, toolCalls: reply.toolCalls });
    for (const call of reply.toolCalls) {
      const record = await oneCall(o, call, calls.length + 1, nonce, offered);
      calls.push(record.record);
      messages.push({ role: "tool", toolCallId: call.id, name: call.name, content: record.content });
    }
  }
  throw new ModelError(`no final answer after ${maxTurns} model turns`);
}

async function oneCall(
  o: WorkerLoopOptions,
  call: ModelToolCall,
  step: number,
  nonce: string,
  offered: ToolSpec[],
): Promise<{ record: CallRecord; content: string }> {
  const toolCallId = `i${o.identity.iteration}-s${step}-${nonce}`;
  const mcp = o.mcp?.owns(call.name) === true ? o.mcp : undefined;
  if (mcp !== undefined) return mcpCall(o, mcp, call, step, toolCallId);
  // Re-read (only files whose size, mtime or inode changed) right before the call, as Guardian re-hashes at invocation.
  await o.toolCode?.refresh([call.name]);
  const toolHash = o.toolCode?.hashes().get(call.name);
  const proposal = proposalOf(o, call, step, toolCallId, toolHash !== undefined ? { toolHash } : {});
  // Every call goes to the gate, even one this worker could not run: the gate records it.
  const decision = await o.gate.propose(proposal);
  const base = { step, toolCallId, tool: call.name, allowed: decision.allowed, blockedBy: decision.blocked_by };
  o.log?.({ event: "tool_call", ...base, argKeys: Object.keys(call.args), check: decision.guard.check, latencyMs: decision.latencyMs });
  failIfTimedOut(decision);
  if (!decision.allowed) return { record: { ...base, executed: false }, content: denialText(decision, call.name) };
  const entry = toolEntry(o.tools, call.name);
  if (entry === undefined || !offered.some((t) => t.name === call.name)) {
    const error = `tool "${call.name}" is not available to this agent (offered: ${offered.map((t) => t.name).join(", ") || "none"})`;
    return { record: { ...base, executed: false, error }, content: `Error: ${error}` };
  }
  try {
    const content = await runBuiltin(call.name, call.args, { entry, confinement: o.confinement, limits: o.limits, env: o.commandEnv });
    return { record: { ...base, executed: true }, content: approvedText(decision, content) };
  } catch (err) {
    const error = messageOf(err);
    o.log?.({ event: "tool_error", step, tool: call.name, error });
    return { record: { ...base, executed: false, error }, content: `Error: ${error}` };
  }
}

/** The proposal of one model tool call: who, which step, the call, its intent (bounded), and what the tool's kind adds (its code hash, or its MCP listing). */
function proposalOf(
  o: WorkerLoopOptions,
  call: ModelToolCall,
  step: number,
  toolCallId: string,
  kind: Pick<ToolCallProposal, "toolHash" | "mcp">,
): ToolCallProposal {
  return {
    namespace: o.identity.namespace,
    execution: o.identity.execution,
    iteration: o.identity.iteration,
    step,
    toolCallId,
    tool: call.name,
    args: call.args,
    ...(call.intent !== undefined ? { intent: call.intent.slice(0, 16384) } : {}),
    ...kind,
  };
}

/** An MCP tool's call: proposed with its listing (the gate hashes and judges it), forwarded to its server only when allowed. */
async function mcpCall(
  o: WorkerLoopOptions,
  mcp: McpTools,
  call: ModelToolCall,
  step: number,
  toolCallId: string,
): Promise<{ record: CallRecord; content: string }> {
  const listing = mcp.descriptor(call.name);
  const proposal = proposalOf(o, call, step, toolCallId, listing !== undefined ? { mcp: listing } : {});
  const decision = await o.gate.propose(proposal);
  const base = { step, toolCallId, tool: call.name, allowed: decision.allowed, blockedBy: decision.blocked_by };
  o.log?.({
    event: "tool_call",
    ...base,
    mcpServer: listing?.server,
    argKeys: Object.keys(call.args),
    check: decision.guard.check,
    latencyMs: decision.latencyMs,
  });
  failIfTimedOut(decision);
  if (!decision.allowed) return { record: { ...base, executed: false }, content: denialText(decision, call.name) };
  try {
    return { record: { ...base, executed: true }, content: approvedText(decision, await mcp.call(call.name, call.args)) };
  } catch (err) {
    const error = messageOf(err);
    o.log?.({ event: "tool_error", step, tool: call.name, error });
    return { record: { ...base, executed: false, error }, content: `Error: ${error}` };
  }
}
