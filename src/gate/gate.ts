// The inner-loop gate: for one proposed tool call, the guard, then (unless skip_judge) each
// semantic tool_validation judge in order; audited without values. Stateless: the tool-call
// service owns idempotency and tells the gate what the iteration already did.
import type { JudgeVerdictRecord, ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, GradientResult, JudgeRejectionReason, SemanticValidatorSpec } from "../api/types.js";
import { applyThresholds, fmt, thresholdsOf, TOOL_MIN_SCORE } from "../engine/validators.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { TraceSpan, Tracing } from "../telemetry/tracing.js";
import { auditRecord, scrubArgValues, type AuditSink } from "./audit.js";
import { endJudgeSpan, endToolSpan, judgeSpan, toolSpan } from "./gate-spans.js";
import type { ViewOptions } from "./guard/argument-views.js";
import { agentScope, workerViews, type AgentScope, type HistoryEntry } from "./guard/context.js";
import { runGuard } from "./guard/guard.js";
import type { CompiledPolicy } from "./guard/policy.js";
import { mcpToolDigest } from "./mcp-tools.js";
import { skipJudge } from "./skip-judge.js";

/** Who decided a call and the deciding check, for metrics and spans alike. */
export { decidedBy, decidingCheck } from "./gate-spans.js";

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

/** Where the gate reads its policy: the PolicyStore, or anything that answers per namespace. */
export interface PolicySource {
  get(namespace: string): CompiledPolicy;
  readonly version?: number;
}

/** What the gate is told about the proposal's iteration (the tool-call store's view). */
export interface IterationContext {
  iteration: {
    /** Decided calls of the iteration with fromStep <= step < beforeStep, in step order. */
    calls(fromStep: number, beforeStep: number): readonly { step: number; tool: string; allowed: boolean }[];
    /** Tools the guard blocked earlier in the iteration (policy_violations). */
    readonly violations: readonly string[];
  };
  /** The proposal's W3C traceparent (its NATS header): the worker's iteration span. */
  traceParent?: string;
}

/** A decision made by the guard alone, or the judged remainder (run by the gate holding the call's claim). */
export type GateOutcome = ToolCallDecision | { judged: () => Promise<ToolCallDecision> };

export interface GateOptions {
  policyStore: PolicySource;
  agent: Pick<Agent, "spec">;
  judgeRunner: JudgeRunner;
  audit?: AuditSink;
  /** Milliseconds, monotonic; default performance.now. */
  clock?: () => number;
  /** Wall clock for audit timestamps; default new Date(). */
  now?: () => Date;
  /** The execution's capability scope when narrower than the agent's `security.capabilities`. */
  capabilities?: readonly string[];
  views?: ViewOptions;
  logger?: Logger;
  /** Traces: an execute_tool span per decided call, an invoke_agent span per judge (docs/adr/0036-traces.md). */
  tracing?: Tracing;
}

/** Runs one tool_validation judge (entry `index`), in its invoke_agent span when the call is traced; a throw is a failed judge. */
async function runToolJudge(options: GateOptions, index: number, entry: SemanticValidatorSpec, p: ToolCallProposal, violations: string[], call: TraceSpan | undefined): Promise<JudgeRunResult> {
  const span = call === undefined || options.tracing === undefined ? undefined : judgeSpan(options.tracing, call, entry.judge_agent);
  let run: JudgeRunResult;
  try {
    run = await options.judgeRunner(entry, p, violations, index);
  } catch (err) {
    run = { rejection: "failed", detail: messageOf(err), child: "" };
  }
  if (span !== undefined && call !== undefined) {
    const passed = run.result === undefined ? false : applyThresholds(run.result, thresholdsOf(entry, TOOL_MIN_SCORE)).passed;
    endJudgeSpan(span, call, entry.judge_agent, run, passed);
  }
  return run;
}

/**
 * The gate of one agent's executions. It keeps no state: what the iteration did comes in
 * the context, and idempotency (one decision per toolCallId) is the tool-call service's.
 */
export interface Gate {
  decide(proposal: ToolCallProposal, context: IterationContext): GateOutcome;
  /** Audits a decision once it is stored (the service calls it once per call). */
  record(proposal: ToolCallProposal, decision: ToolCallDecision): Promise<void>;
}

/** Builds a gate: the guard, then skip_judge, then each semantic tool_validation judge in order. */
export function createGate(options: GateOptions): Gate {
  const clock = options.clock ?? (() => performance.now());
  const now = options.now ?? (() => new Date());
  const base = agentScope(options.agent);
  // `~`, `$HOME` and relative paths as the worker reads them: its declared home and workspace.
  const views = options.views ?? workerViews(options.agent);
  const scope: AgentScope = options.capabilities ? { ...base, capabilities: new Set(options.capabilities) } : base;
  const allEntries = options.agent.spec.execution?.tool_validation ?? [];
  const semantic = allEntries.filter((e) => e.type === "semantic");

  function decide(p: ToolCallProposal, ctx: IterationContext): GateOutcome {
    const started = clock();
    const span = options.tracing === undefined ? undefined : toolSpan(options.tracing, p, ctx.traceParent);
    const policy = options.policyStore.get(p.namespace);
    const history: HistoryEntry[] = [];
    for (const c of ctx.iteration.calls(1, p.step)) if (c.allowed) history.push({ tool: c.tool, step: c.step });
    // Check 2 compares the registration with the hash the worker computed of the code it runs, or for an MCP tool the digest of its listing.
    const live = p.mcp !== undefined ? mcpToolDigest(p.mcp) : p.toolHash;
    const guard = runGuard(
      { tool: p.tool, args: p.args, step: p.step, ...(p.mcp !== undefined ? { mcp: p.mcp } : {}) },
      { policy, scope, history, ...(live !== undefined ? { liveHashes: new Map([[p.tool, live]]) } : {}), views },
    );
    const done = (d: Omit<ToolCallDecision, "toolCallId" | "latencyMs" | "guard">): ToolCallDecision => ({
      toolCallId: p.toolCallId,
      guard,
      ...d,
      reason: scrubArgValues(d.reason, p.args),
      latencyMs: clock() - started,
    });
    if (!guard.approved) return endToolSpan(span, done({ allowed: false, blocked_by: "guard", reason: guard.reason ?? "guard", skippedJudges: false, judges: [] }));
    if (skipJudge(p.tool, scope, policy, p.mcp) || semantic.length === 0) {
      const skipped = semantic.length > 0;
      return endToolSpan(span, done({ allowed: true, blocked_by: "none", reason: skipped ? "approved by the guard (skip_judge)" : "approved by the guard", skippedJudges: skipped, judges: [] }));
    }
    const violations = [...ctx.iteration.violations];
    return { judged: async () => endToolSpan(span, await judge(p, violations, done, span)) };
  }

  async function judge(p: ToolCallProposal, violations: string[], done: (d: Omit<ToolCallDecision, "toolCallId" | "latencyMs" | "guard">) => ToolCallDecision, span: TraceSpan | undefined): Promise<ToolCallDecision> {
    const judges: JudgeVerdictRecord[] = [];
    for (const entry of semantic) {
      const run = await runToolJudge(options, allEntries.indexOf(entry), entry, p, violations, span);
      if (run.result === undefined) {
        const rejection = run.rejection ?? "malformed_output";
        judges.push({ judge: entry.judge_agent, child: run.child, passed: false, rejection });
        const reason = `judge ${entry.judge_agent}: rejected (${rejection})${run.detail ? `: ${run.detail}` : ""}`;
        return done({ allowed: false, blocked_by: "judge", reason, skippedJudges: false, judges });
      }
      const outcome = applyThresholds(run.result, thresholdsOf(entry, TOOL_MIN_SCORE));
      judges.push({ judge: entry.judge_agent, child: run.child, passed: outcome.passed, result: run.result });
      if (!outcome.passed) {
        return done({ allowed: false, blocked_by: "judge", reason: `judge ${entry.judge_agent}: ${outcome.reasoning}`, skippedJudges: false, judges });
      }
    }
    const scores = judges.map((j) => `${j.judge} ${fmt(j.result?.score ?? 0)}`).join(", ");
    return done({ allowed: true, blocked_by: "none", reason: `approved by the guard and ${judges.length} judge(s): ${scores}`, skippedJudges: false, judges });
  }

  async function record(p: ToolCallProposal, d: ToolCallDecision): Promise<void> {
    const r = auditRecord(p, d, now(), options.policyStore.version);
    try {
      await options.audit?.record(r);
    } catch (err) {
      // Fail-safe like vaglio's log: a broken audit sink never blocks or flips a decision.
      options.logger?.warn({ err: messageOf(err), toolCallId: p.toolCallId }, "audit record failed");
    }
    // Guardian logs a threat event TOOL_HASH_MISMATCH with the denial.
    if (r.check === "hash") options.logger?.warn({ threat: "TOOL_HASH_MISMATCH", tool: r.tool, toolCallId: r.toolCallId, execution: `${r.namespace}/${r.execution}` }, "tool code differs from its registration");
    // A call worth a look (blocked, judged, flagged, warned) at info; a plain allowed one at debug: a
    // busy worker's every call at info cost 4 % of the controller's time in the gate bench, and
    // gavel_tool_calls_total counts them all.
    const notable = !r.allowed || r.judges.length > 0 || (r.flags?.length ?? 0) > 0 || (r.warnings?.length ?? 0) > 0;
    options.logger?.[notable ? "info" : "debug"]({ execution: `${r.namespace}/${r.execution}`, iteration: r.iteration, toolCallId: r.toolCallId, tool: r.tool, arg_keys: r.arg_keys, allowed: r.allowed, blocked_by: r.blocked_by, check: r.check, flags: r.flags, warnings: r.warnings, dryrun: r.dryrun, latency_ms: r.latency_ms }, "tool call decided");
  }

  return { decide, record };
}
