// The inner-loop gate: for one proposed tool call, the guard, then (unless skip_judge) each
// semantic tool_validation judge in order; idempotent by toolCallId, audited without values.
import type { JudgeVerdictRecord, ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, GradientResult, JudgeRejectionReason, SemanticValidatorSpec } from "../api/types.js";
import { applyThresholds, fmt, thresholdsOf, TOOL_MIN_SCORE } from "../engine/validators/outcome.js";
import type { Logger } from "../telemetry/logger.js";
import { auditRecord, scrubArgValues, type AuditSink } from "./audit.js";
import type { ViewOptions } from "./guard/argument-views.js";
import { agentScope, type AgentScope, type HistoryEntry } from "./guard/context.js";
import { runGuard } from "./guard/guard.js";
import type { CompiledPolicy } from "./guard/policy.js";
import { skipJudge } from "./skip-judge.js";

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

export interface GateOptions {
  policyStore: PolicySource;
  agent: Pick<Agent, "spec">;
  judgeRunner: JudgeRunner;
  audit?: AuditSink;
  /** Milliseconds, monotonic; default performance.now. */
  clock?: () => number;
  /** Wall clock for audit timestamps; default new Date(). */
  now?: () => Date;
  /** SHA-256 of each tool's live code (guard check 2); see tool-code.ts. */
  liveHashes?: () => ReadonlyMap<string, string>;
  /** The execution's capability scope when narrower than the agent's `security.capabilities`. */
  capabilities?: readonly string[];
  views?: ViewOptions;
  logger?: Logger;
  /** Decisions remembered for retries; the oldest finished ones are forgotten first. Default 10,000. */
  maxRemembered?: number;
}

/** The gate of one agent's executions. */
export interface Gate {
  decide(proposal: ToolCallProposal): Promise<ToolCallDecision>;
}

interface IterationState {
  history: HistoryEntry[];
  violations: string[];
}

/** Builds a gate: `decide` answers a re-sent proposal with the same decision (or the same judge still running). */
export function createGate(options: GateOptions): Gate {
  const clock = options.clock ?? (() => performance.now());
  const now = options.now ?? (() => new Date());
  const base = agentScope(options.agent);
  const scope: AgentScope = options.capabilities ? { tools: base.tools, capabilities: new Set(options.capabilities) } : base;
  const semantic = (options.agent.spec.execution?.tool_validation ?? []).filter((e) => e.type === "semantic");
  const decisions = new Map<string, { fingerprint: string; decision: Promise<ToolCallDecision> }>();
  const iterations = new Map<string, IterationState>();
  const max = options.maxRemembered ?? 10_000;

  const iterationOf = (p: ToolCallProposal): IterationState => {
    const key = `${p.namespace}/${p.execution}/${p.iteration}`;
    let s = iterations.get(key);
    if (s === undefined) {
      s = { history: [], violations: [] };
      iterations.set(key, s);
    }
    return s;
  };

  async function evaluate(p: ToolCallProposal): Promise<ToolCallDecision> {
    const started = clock();
    const policy = options.policyStore.get(p.namespace);
    const iteration = iterationOf(p);
    const guard = runGuard(
      { tool: p.tool, args: p.args, step: p.step },
      { policy, scope, history: iteration.history, ...(options.liveHashes ? { liveHashes: options.liveHashes() } : {}), ...(options.views ? { views: options.views } : {}) },
    );
    const done = (d: Omit<ToolCallDecision, "toolCallId" | "latencyMs" | "guard">): ToolCallDecision => ({
      toolCallId: p.toolCallId,
      guard,
      ...d,
      reason: scrubArgValues(d.reason, p.args),
      latencyMs: clock() - started,
    });
    if (!guard.approved) {
      if (!iteration.violations.includes(p.tool)) iteration.violations.push(p.tool);
      return done({ allowed: false, blocked_by: "guard", reason: guard.reason ?? "guard", skippedJudges: false, judges: [] });
    }
    if (skipJudge(p.tool, scope) || semantic.length === 0) {
      iteration.history.push({ tool: p.tool, step: p.step });
      const skipped = semantic.length > 0;
      return done({ allowed: true, blocked_by: "none", reason: skipped ? "approved by the guard (skip_judge)" : "approved by the guard", skippedJudges: skipped, judges: [] });
    }
    const judges: JudgeVerdictRecord[] = [];
    const allEntries = options.agent.spec.execution?.tool_validation ?? [];
    for (const entry of semantic) {
      const violations = [...iteration.violations];
      let run: JudgeRunResult;
      try {
        run = await options.judgeRunner(entry, p, violations, allEntries.indexOf(entry));
      } catch (err) {
        run = { rejection: "failed", detail: err instanceof Error ? err.message : String(err), child: "" };
      }
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
    iteration.history.push({ tool: p.tool, step: p.step });
    const scores = judges.map((j) => `${j.judge} ${fmt(j.result?.score ?? 0)}`).join(", ");
    return done({ allowed: true, blocked_by: "none", reason: `approved by the guard and ${judges.length} judge(s): ${scores}`, skippedJudges: false, judges });
  }

  async function record(p: ToolCallProposal, d: ToolCallDecision): Promise<void> {
    const r = auditRecord(p, d, now(), options.policyStore.version);
    try {
      await options.audit?.record(r);
    } catch (err) {
      // Fail-safe like vaglio's log: a broken audit sink never blocks or flips a decision.
      options.logger?.warn({ err: err instanceof Error ? err.message : String(err), toolCallId: p.toolCallId }, "audit record failed");
    }
    options.logger?.info({ tool: r.tool, arg_keys: r.arg_keys, allowed: r.allowed, blocked_by: r.blocked_by, check: r.check, toolCallId: r.toolCallId, latency_ms: r.latency_ms }, "tool call decided");
  }

  function forgetOldest(): void {
    if (decisions.size <= max) return;
    for (const key of decisions.keys()) {
      decisions.delete(key);
      if (decisions.size <= max) return;
    }
  }

  return {
    decide(p) {
      const fingerprint = `${p.namespace}\u0000${p.execution}\u0000${p.iteration}\u0000${p.tool}\u0000${JSON.stringify(p.args)}`;
      const known = decisions.get(p.toolCallId);
      if (known !== undefined) {
        if (known.fingerprint === fingerprint) return known.decision;
        // A retry is byte-identical; the same id on another call is a confused or hostile worker.
        return Promise.resolve({
          toolCallId: p.toolCallId,
          allowed: false,
          blocked_by: "guard",
          reason: "toolCallId reused for a different call",
          guard: { approved: false },
          skippedJudges: false,
          judges: [],
          latencyMs: 0,
        });
      }
      const decision = evaluate(p).then(async (d) => {
        await record(p, d);
        return d;
      });
      decisions.set(p.toolCallId, { fingerprint, decision });
      forgetOldest();
      return decision;
    },
  };
}
