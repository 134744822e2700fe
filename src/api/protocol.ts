// The inner-loop protocol: what a worker proposes over NATS and what the gate answers.
// docs/protocol.md describes the subjects and the retry rules; the schemas are in protocol-schemas.ts.
import type { GradientResult, JsonObject } from "./types.js";

/** A tool call the worker wants to make; `toolCallId` is the idempotency key. */
export interface ToolCallProposal {
  namespace: string;
  execution: string;
  iteration: number;
  /** 1-based position of this call in the iteration's tool history. */
  step: number;
  toolCallId: string;
  tool: string;
  args: JsonObject;
  /** The model's stated reason for the call, if it gave one. */
  intent?: string;
  /**
   * SHA-256 (hex) of the code the worker runs for this tool, hashed just before proposing
   * (src/gate/tool-code.ts): guard check 2 compares it with the tool's `tool_registry` entry.
   * Absent when the worker has no code of its own for the tool.
   */
  toolHash?: string;
  /** The MCP tool this call is for, as its server listed it (ADR 0051); absent for a built-in tool. */
  mcp?: McpToolDescriptor;
}

/** An MCP tool's annotations: the server's claims, read only for servers a GuardPolicy trusts. */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * The MCP tool a proposal calls: `tool` is the server's own name (the proposal's `tool` is
 * `<server>.<tool>`). The gate hashes name, description and inputSchema into the tool's
 * digest (src/gate/mcp-tools.ts), its live hash for guard check 2; judges get all of it.
 */
export interface McpToolDescriptor {
  server: string;
  tool: string;
  description?: string;
  inputSchema: JsonObject;
  annotations?: McpToolAnnotations;
  /** False when the tool appeared, or its digest changed, after the worker listed its tools at start. */
  pinned: boolean;
}

/** Who blocked a call: the guard, a judge, or a person (or nobody answering in time) asked for approval. */
export type BlockedBy = "guard" | "judge" | "approval" | "none";

/** How a person's approval of a call ended (ADR 0067), told to the worker distinctly. */
export interface ApprovalRecord {
  /** The ToolApproval object. */
  name: string;
  /** withdrawn: the run ended (cancelled, deleted) while the call waited; nobody decided. */
  outcome: "approved" | "denied" | "timed_out" | "withdrawn";
  /** The authenticated user who decided; absent when nobody did. */
  decidedBy?: string;
  reason?: string;
  /** The decision was not asked for this call: a standing one (--for-execution) of an identical earlier call, ToolApproval `name`. */
  standing?: boolean;
  /** With timed_out: the iteration fails (onTimeout: fail), not only the call. */
  failIteration?: boolean;
}

/** The guard's answer for one call: the first failing check, or approval. */
export interface GuardDecision {
  approved: boolean;
  /** Which of the seven checks denied (or flagged) the call. */
  check?: "revocation" | "hash" | "capability" | "destructive_pattern" | "sequence_contract" | "signature" | "adaptive_rule";
  /** e.g. "tool_revoked: <reason>", "destructive_pattern: <pattern>". */
  reason?: string;
  /** Adaptive rules with action flag that matched; the call is still allowed. */
  flags?: string[];
  /** Reasons of what GuardPolicy rules in `warn` mode would have denied (the call went on). */
  warnings?: string[];
  /** Reasons of what rules in `dryrun` mode would have denied: recorded in the audit and events only. */
  dryrun?: string[];
}

/** One tool_validation judge's part in a decision. */
export interface JudgeVerdictRecord {
  judge: string;
  child: string;
  passed: boolean;
  result?: GradientResult;
  rejection?: "malformed_output" | "failed" | "cancelled" | "timed_out";
}

/** What the gate would allow instead of a denied call, when it knows (gate/refusal.ts). */
export interface RefusalAlternatives {
  /** Tools the Agent may call. */
  tools?: string[];
  /** Path prefixes its file tools may use (its volumes' mount paths). */
  paths?: string[];
  /** Command prefixes the tool's allowlist allows. */
  commands?: string[];
}

/** The gate's reply to a proposal. */
export interface ToolCallDecision {
  toolCallId: string;
  allowed: boolean;
  blocked_by: BlockedBy;
  reason: string;
  guard: GuardDecision;
  /** True when skip_judge bypassed the tool_validation judges. */
  skippedJudges: boolean;
  judges: JudgeVerdictRecord[];
  /** Present when a person was asked (the tool's approval, bounded by GuardPolicy). */
  approval?: ApprovalRecord;
  /** With a denial: what would be allowed instead, when known. */
  instead?: RefusalAlternatives;
  latencyMs: number;
}

/** Why the gate could not answer with a decision. */
export type ToolCallErrorCode =
  /** The proposal is malformed; `field` names the first offending field. Terminal. */
  | "invalid_proposal"
  /** The proposal claims another execution than the subject it came in on. Terminal. */
  | "forbidden"
  /** The toolCallId was already used for a different call. Terminal. */
  | "conflict"
  /** The gate failed to answer; the worker may re-send. */
  | "internal";

/** The gate's reply when it has no decision to give. */
export interface ToolCallErrorReply {
  toolCallId?: string;
  error: { code: ToolCallErrorCode; field?: string; message: string };
}
