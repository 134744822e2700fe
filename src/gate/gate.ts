// The inner-loop gate: for one proposed tool call, the guard, then (unless skip_judge) each
// semantic tool_validation judge in order; audited without values. Stateless: the tool-call
// service owns idempotency and tells the gate what the iteration already did.
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent } from "../api/types.js";
import type { Logger } from "../telemetry/logger.js";
import type { Tracing } from "../telemetry/tracing.js";
import {
  afterApproval,
  approvalRule,
  approvalTrigger,
  callDigest,
  guardFlags,
  judgeUncertainty,
  noApprover,
  repeatDigest,
  type ApprovalRule,
  type Approver,
} from "./approval.js";
import { auditRecord, recordDecision, scrubArgValues, type AuditSink } from "./audit.js";
import { endToolSpan, toolSpan } from "./gate-spans.js";
import type { ViewOptions } from "./guard/argument-views.js";
import { agentScope, workerViews, type AgentScope, type HistoryEntry } from "./guard/context.js";
import { runGuard } from "./guard/guard.js";
import type { CompiledPolicy } from "./guard/policy.js";
import { mcpToolDigest } from "./mcp-tools.js";
import { thresholdsOf, TOOL_MIN_SCORE } from "../engine/validators.js";
import { guardAlternatives } from "./refusal.js";
import { skipJudge } from "./skip-judge.js";
import { judgeCall, type JudgedFields, type JudgeRunner, type ToolJudges } from "./tool-judges.js";

/** The approval tier's port and types, for the drivers that ask a person. */
export type { ApprovalAnswer, ApprovalRequest, Approver } from "./approval.js";

/** Who decided a call and the deciding check, for metrics and spans alike. */
export { decidedBy, decidingCheck } from "./gate-spans.js";

/** The judge step's types, for the drivers that run judges. */
export type { JudgeRunner, JudgeRunResult } from "./tool-judges.js";

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
  /** Asks a person about a call whose tool's approval says so (ADR 0067); without one such calls are denied. */
  approver?: Approver;
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
  // The min_score of each judge in the order they are asked (on_uncertain compares each verdict with its own).
  const minScores = semantic.map((e) => thresholdsOf(e, TOOL_MIN_SCORE).min_score);
  const judges: ToolJudges = {
    judgeRunner: options.judgeRunner,
    entries: allEntries,
    ...(options.tracing !== undefined ? { tracing: options.tracing } : {}),
  };

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
    const done = (d: JudgedFields): ToolCallDecision => ({
      toolCallId: p.toolCallId,
      guard,
      ...d,
      reason: scrubArgValues(d.reason, p.args),
      latencyMs: clock() - started,
    });
    if (!guard.approved) {
      const instead = guardAlternatives(p.tool, p.args, guard, scope, options.agent);
      const denied = done({ allowed: false, blocked_by: "guard", reason: guard.reason ?? "guard", skippedJudges: false, judges: [] });
      return endToolSpan(span, instead !== undefined ? { ...denied, instead } : denied);
    }
    const rule = approvalRule(p.tool, scope, policy);
    // The person, when the tool's approval asks for one, after the guard and the judges (ADR 0067).
    const ladder = async (d: ToolCallDecision): Promise<ToolCallDecision> => endToolSpan(span, await ask(p, d, rule, done));
    if (skipJudge(p.tool, scope, policy, p.mcp) || semantic.length === 0) {
      const skipped = semantic.length > 0;
      const d = done({
        allowed: true,
        blocked_by: "none",
        reason: skipped ? "approved by the guard (skip_judge)" : "approved by the guard",
        skippedJudges: skipped,
        judges: [],
      });
      // Without judges only always and on_flag (the guard's flags) can ask: the rest go on at once.
      return rule.modes.has("always") || (rule.modes.has("on_flag") && guardFlags(guard) !== undefined)
        ? { judged: () => ladder(d) }
        : endToolSpan(span, d);
    }
    const violations = [...ctx.iteration.violations];
    return { judged: async () => ladder(await judgeCall(judges, p, violations, done, span)) };
  }

  async function ask(
    p: ToolCallProposal,
    d: ToolCallDecision,
    rule: ApprovalRule,
    done: (f: JudgedFields) => ToolCallDecision,
  ): Promise<ToolCallDecision> {
    const found = { flagged: guardFlags(d.guard), uncertain: judgeUncertainty(d.judges, minScores, rule) };
    const trigger = approvalTrigger(rule, d, found);
    if (trigger === undefined) return d;
    if (options.approver === undefined) return done(noApprover(d, trigger));
    const findings = trigger === "on_flag" ? found.flagged : trigger === "on_uncertain" ? found.uncertain : undefined;
    const request = {
      ...{ proposal: p, digest: callDigest(p), repeatDigest: repeatDigest(p), trigger, pending: d },
      ...{ timeoutMs: rule.timeoutMs, onTimeout: rule.onTimeout, ...(findings !== undefined ? { findings } : {}) },
    };
    return done(afterApproval(d, await options.approver(request), rule));
  }

  async function record(p: ToolCallProposal, d: ToolCallDecision): Promise<void> {
    await recordDecision(auditRecord(p, d, now(), options.policyStore.version), options.audit, options.logger);
  }

  return { decide, record };
}
