// Replay before enforce (issue 25 item 5, ADR 0076): a run's recorded calls put through a
// candidate GuardPolicy with the guard alone, and what would change. Pure: the caller reads the
// records (the tool-call store or an exported file) and the policy; nothing here calls a tool,
// and judges are not re-run: their recorded verdicts stand where the guard still lets a call through.
import type { GuardDecision, ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent } from "../api/types.js";
import { thresholdsOf, TOOL_MIN_SCORE } from "../engine/validators.js";
import { approvalRule, approvalTrigger, guardFlags, judgeUncertainty, type ApprovalTrigger } from "./approval.js";
import type { ViewOptions } from "./guard/argument-views.js";
import { agentScope, workerViews, type AgentScope, type HistoryEntry } from "./guard/context.js";
import { runGuard } from "./guard/guard.js";
import type { CompiledPolicy } from "./guard/policy.js";
import { mcpToolDigest } from "./mcp-tools.js";
import { skipJudge } from "./skip-judge.js";

/** One recorded call: what the worker proposed and what the gate decided then. */
export interface RecordedCall {
  proposal: ToolCallProposal;
  decision: ToolCallDecision;
}

/** A call's outcome as a replay names it. */
export type ReplayOutcome =
  | { kind: "allowed" }
  | { kind: "denied"; by: "guard"; check?: string }
  | { kind: "denied"; by: "judge" | "approval" }
  /** The guard lets it through to judges the replay does not run. */
  | { kind: "to_judges" }
  /** A person would be asked (the policy's or the Agent's approval). */
  | { kind: "asks"; trigger: ApprovalTrigger };

/** What the replay says of one call. */
export interface ReplayedCall {
  iteration: number;
  step: number;
  toolCallId: string;
  tool: string;
  recorded: ReplayOutcome;
  replayed: ReplayOutcome;
  changed: boolean;
  /** Why the outcome is what it is now: the guard's reason, the approval that asks, or that it still holds. */
  why: string;
  /** What the guard flagged under the candidate policy (allowed, shown). */
  flags?: string[];
}

/** The Agent whose calls are replayed and the policy they are replayed against. */
export interface ReplayTarget {
  agent: Pick<Agent, "spec">;
  policy: CompiledPolicy;
  views?: ViewOptions;
}

/** "allowed", "denied by guard (capability)", "to judges (not re-run)", "asks a person (always)". */
export function outcomeText(o: ReplayOutcome): string {
  switch (o.kind) {
    case "allowed":
      return "allowed";
    case "to_judges":
      return "to judges (not re-run)";
    case "asks":
      return `asks a person (${o.trigger})`;
    case "denied":
      return `denied by ${o.by}${o.by === "guard" && o.check !== undefined ? ` (${o.check})` : ""}`;
  }
}

/** How the gate decided a call when it was recorded. */
export function recordedOutcome(d: ToolCallDecision): ReplayOutcome {
  if (d.allowed) return { kind: "allowed" };
  if (d.blocked_by === "guard") return { kind: "denied", by: "guard", ...(d.guard.check !== undefined ? { check: d.guard.check } : {}) };
  return { kind: "denied", by: d.blocked_by === "judge" ? "judge" : "approval" };
}

/**
 * Each recorded call, in iteration and step order, through the candidate policy's guard: its
 * history (sequence contracts) is the calls of its iteration the replay still lets through.
 * A call the guard still lets through keeps its recorded judges' verdicts and person's answer,
 * unless the policy now asks a person where nobody was asked (or no longer asks).
 */
export function replayCalls(calls: readonly RecordedCall[], target: ReplayTarget): ReplayedCall[] {
  const scope = agentScope(target.agent);
  const views = target.views ?? workerViews(target.agent);
  const semantic = (target.agent.spec.execution?.tool_validation ?? []).filter((e) => e.type === "semantic");
  const minScores = semantic.map((e) => thresholdsOf(e, TOOL_MIN_SCORE).min_score);
  const sorted = [...calls].sort((a, b) => a.proposal.iteration - b.proposal.iteration || a.proposal.step - b.proposal.step);
  const history = new Map<number, HistoryEntry[]>();
  return sorted.map(({ proposal: p, decision: d }) => {
    const done = history.get(p.iteration) ?? [];
    history.set(p.iteration, done);
    const live = p.mcp !== undefined ? mcpToolDigest(p.mcp) : p.toolHash;
    const guard = runGuard(
      { tool: p.tool, args: p.args, step: p.step, ...(p.mcp !== undefined ? { mcp: p.mcp } : {}) },
      {
        policy: target.policy,
        scope,
        history: done.filter((h) => h.step < p.step),
        ...(live !== undefined ? { liveHashes: new Map([[p.tool, live]]) } : {}),
        views,
      },
    );
    const recorded = recordedOutcome(d);
    const { replayed, why } = guard.approved
      ? throughGuard(p, d, guard, recorded, { scope, minScores, judged: semantic.length > 0, policy: target.policy })
      : {
          replayed: { kind: "denied" as const, by: "guard" as const, ...(guard.check !== undefined ? { check: guard.check } : {}) },
          why: guard.reason ?? "denied by the guard",
        };
    // A call the replay lets through (or leaves to judges and people, as then) counts as done for later steps.
    if (replayed.kind === "allowed" || replayed.kind === "to_judges" || (replayed.kind === "asks" && d.allowed))
      done.push({ tool: p.tool, step: p.step });
    return {
      iteration: p.iteration,
      step: p.step,
      toolCallId: p.toolCallId,
      tool: p.tool,
      recorded,
      replayed,
      changed: outcomeText(recorded) !== outcomeText(replayed),
      why,
      ...(guard.flags !== undefined && guard.flags.length > 0 ? { flags: [...guard.flags] } : {}),
    };
  });
}

/** What a call the candidate's guard lets through comes to: its judges (not re-run), a person, or its recorded outcome. */
function throughGuard(
  p: ToolCallProposal,
  d: ToolCallDecision,
  guard: GuardDecision,
  recorded: ReplayOutcome,
  ctx: { scope: AgentScope; minScores: number[]; judged: boolean; policy: CompiledPolicy },
): { replayed: ReplayOutcome; why: string } {
  const rule = approvalRule(p.tool, ctx.scope, ctx.policy);
  const judged = ctx.judged && !skipJudge(p.tool, ctx.scope, ctx.policy, p.mcp);
  const judgesPassed = d.judges.every((j) => j.passed);
  // What the ladder held before a person was asked: the recorded judges' verdicts (none when the guard denied then).
  const pending = { allowed: judgesPassed, blocked_by: judgesPassed ? ("none" as const) : ("judge" as const) };
  const found = { flagged: guardFlags(guard), uncertain: judgeUncertainty(d.judges, ctx.minScores, rule) };
  const trigger = approvalTrigger(rule, pending, found);
  if (recorded.kind === "denied" && recorded.by === "guard")
    // Newly through the guard: its judges, which the replay does not run, come next.
    return {
      replayed: judged ? { kind: "to_judges" } : trigger !== undefined ? { kind: "asks", trigger } : { kind: "allowed" },
      why: `the guard now lets it through (it was denied by ${d.guard.check ?? "the guard"}: ${d.guard.reason ?? d.reason})`,
    };
  if (trigger !== undefined && d.approval === undefined)
    return {
      replayed: { kind: "asks", trigger },
      why: `approval for ${p.tool} is now ${[...rule.modes].join(", ")}${trigger === "on_flag" && found.flagged !== undefined ? `: ${found.flagged}` : ""}`,
    };
  if (trigger === undefined && d.approval !== undefined)
    return {
      replayed: judgesPassed ? { kind: "allowed" } : { kind: "denied", by: "judge" },
      why: `a person would no longer be asked (approval for ${p.tool}: ${rule.mode}); the recorded judges' verdicts stand`,
    };
  return {
    replayed: recorded,
    why:
      d.judges.length > 0 || d.approval !== undefined
        ? "the guard still lets it through; the recorded judges' and person's decisions stand"
        : "the guard still lets it through",
  };
}
