// The escalation ladder's last tier (issue 25, ADR 0067): when a call the guard allowed goes to
// a person, and what the worker is told once the person (or nobody, in time) answered. Pure:
// the driver's Approver does the asking and the waiting (a ToolApproval object on a cluster).
import { createHash } from "node:crypto";
import type { ApprovalRecord, GuardDecision, JudgeVerdictRecord, ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { ApprovalMode, ApprovalOnTimeout, ApprovalTrigger, JsonObject, JsonValue } from "../api/types.js";
import { agreementOf } from "../engine/consensus.js";
import { parseDurationSeconds } from "../engine/durations.js";
import { fmt } from "../engine/validators.js";
import { canonical } from "../transport/codec.js";
import { declaredTool, type AgentScope } from "./guard/context.js";
import type { CompiledPolicy } from "./guard/policy.js";
import { mcpToolDigest } from "./mcp-tools.js";
import type { JudgedFields } from "./tool-judges.js";

/** How long a call waits for a person when its tool does not say (approval_timeout). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 300_000;

/** How near a judge's score to its min_score is uncertain when the tool does not say (approval_margin). */
export const DEFAULT_APPROVAL_MARGIN = 0.1;

/** When a tool's calls go to a person, for how long, and what an unanswered one does. */
export interface ApprovalRule {
  /** The strictest of `modes` (never when empty). */
  mode: ApprovalMode;
  /** Every trigger in force: the Agent's own and the GuardPolicies' floors (each asks on its own). */
  modes: ReadonlySet<ApprovalTrigger>;
  timeoutMs: number;
  onTimeout: ApprovalOnTimeout;
  /** on_uncertain: a judge's score within this of its min_score. */
  margin: number;
  /** on_uncertain: the judges' agreement below this (min_agreement_confidence); none when unset. */
  minAgreement?: number;
}

/** What the ladder found that on_flag and on_uncertain ask about: why, or undefined when nothing. */
export interface LadderFindings {
  flagged?: string;
  uncertain?: string;
}

/** Why a person is asked about one call. */
export type { ApprovalTrigger };

/** What the driver's Approver is asked: the call, its digest, why, what the ladder found before, how long to wait. */
export interface ApprovalRequest {
  proposal: ToolCallProposal;
  digest: string;
  /** The digest of the call as it repeats in its Execution (repeatDigest): what a decision --for-execution covers. */
  repeatDigest: string;
  trigger: ApprovalTrigger;
  /** What on_flag or on_uncertain found, shown to the person. */
  findings?: string;
  /** The decision of the guard and the judges, which the person may overturn. */
  pending: ToolCallDecision;
  timeoutMs: number;
  onTimeout: ApprovalOnTimeout;
}

/** How the asking ended: the person's answer (the authenticated user), or nobody in time. */
export type ApprovalAnswer = Omit<ApprovalRecord, "failIteration">;

/** Asks a person about one call and waits (a driver's port; the cluster's keeps the state in the API server). */
export type Approver = (request: ApprovalRequest) => Promise<ApprovalAnswer>;

const STRICTNESS: Record<ApprovalMode, number> = { never: 0, on_flag: 1, on_uncertain: 1, on_judge_reject: 1, always: 2 };

/**
 * The approval rule of a tool: the Agent's tools[].approval, raised to the least the
 * operators set for it (GuardPolicy approval, by tool name or "*"); never lowered.
 */
export function approvalRule(tool: string, scope: AgentScope, policy: Pick<CompiledPolicy, "approval" | "approvalBounds">): ApprovalRule {
  const own = declaredTool(scope, tool);
  let mode: ApprovalMode = own?.approval ?? "never";
  const modes = new Set<ApprovalTrigger>(mode === "never" ? [] : [mode]);
  // The operators' triggers for this tool and for every tool: each adds to the Agent's, none removes one.
  for (const floor of [...(policy.approval?.get(tool) ?? []), ...(policy.approval?.get("*") ?? [])]) {
    modes.add(floor);
    if (STRICTNESS[floor] > STRICTNESS[mode]) mode = floor;
  }
  const seconds = parseDurationSeconds(own?.approval_timeout);
  // on_uncertain's bounds: the operators' are the least (a wider margin, a higher agreement ask more).
  const bounds = [policy.approvalBounds?.get(tool), policy.approvalBounds?.get("*")];
  const minAgreement = [own?.min_agreement_confidence, ...bounds.map((b) => b?.minAgreement)].filter((v) => v !== undefined);
  return {
    mode,
    modes,
    timeoutMs: seconds !== undefined && seconds > 0 ? seconds * 1000 : DEFAULT_APPROVAL_TIMEOUT_MS,
    onTimeout: own?.approval_on_timeout ?? "deny",
    margin: Math.max(own?.approval_margin ?? DEFAULT_APPROVAL_MARGIN, ...bounds.map((b) => b?.margin ?? 0)),
    ...(minAgreement.length > 0 ? { minAgreement: Math.max(...minAgreement) } : {}),
  };
}

/** Why the rule asks a person about a call the ladder decided so far, or undefined when it does not. */
export function approvalTrigger(
  rule: ApprovalRule,
  pending: Pick<ToolCallDecision, "allowed" | "blocked_by">,
  found: LadderFindings = {},
): ApprovalTrigger | undefined {
  // A guard denial is the non-negotiable core (vaglio-two-phase-evaluator.txt): never put to a person.
  if (pending.blocked_by === "guard") return undefined;
  if (rule.modes.has("always")) return "always";
  if (rule.modes.has("on_judge_reject") && !pending.allowed && pending.blocked_by === "judge") return "on_judge_reject";
  if (rule.modes.has("on_flag") && found.flagged !== undefined) return "on_flag";
  if (rule.modes.has("on_uncertain") && found.uncertain !== undefined) return "on_uncertain";
  return undefined;
}

/** What the guard flagged about a call it allowed (flag rules, flagged threat classes, rules in warn mode), or undefined. */
export function guardFlags(guard: GuardDecision): string | undefined {
  const found = [...(guard.flags ?? []).map((f) => `flagged: ${f}`), ...(guard.warnings ?? []).map((w) => `warned: ${w}`)];
  return found.length === 0 ? undefined : `the guard ${found.join("; ")}`;
}

/**
 * Why the judges' verdicts on a call are uncertain: a judge's score within `margin` of its
 * min_score (either side: a narrow pass or a narrow rejection), or, with two judges or more,
 * their agreement (1 - score spread, as multi_judge measures it) below min_agreement_confidence.
 * `minScores[i]` is the min_score of the i-th judge asked (the verdicts come in that order).
 */
export function judgeUncertainty(
  judges: readonly JudgeVerdictRecord[],
  minScores: readonly number[],
  rule: Pick<ApprovalRule, "margin" | "minAgreement">,
): string | undefined {
  const why: string[] = [];
  judges.forEach((j, i) => {
    const min = minScores[i];
    if (j.result === undefined || min === undefined) return;
    if (Math.abs(j.result.score - min) <= rule.margin + 1e-9)
      why.push(`judge ${j.judge}'s score ${fmt(j.result.score)} is within ${fmt(rule.margin)} of its min_score ${fmt(min)}`);
  });
  const scores = judges.flatMap((j) => (j.result !== undefined ? [j.result.score] : []));
  if (rule.minAgreement !== undefined && scores.length >= 2) {
    const agreement = agreementOf(scores);
    if (agreement < rule.minAgreement)
      why.push(`the judges' agreement ${fmt(agreement)} is below min_agreement_confidence ${fmt(rule.minAgreement)}`);
  }
  return why.length === 0 ? undefined : why.join("; ");
}

/** sha256 of the exact call: who proposes it (execution, iteration, step), the tool, every argument, the tool's code or listing. */
export function callDigest(p: ToolCallProposal): string {
  const code = p.mcp !== undefined ? mcpToolDigest(p.mcp) : p.toolHash;
  const text = canonical({ n: p.namespace, e: p.execution, i: p.iteration, s: p.step, t: p.tool, a: p.args, ...(code ? { h: code } : {}) });
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}

/** sha256 of the call as it repeats within its Execution: callDigest without the iteration and step (a decision --for-execution). */
export function repeatDigest(p: ToolCallProposal): string {
  const code = p.mcp !== undefined ? mcpToolDigest(p.mcp) : p.toolHash;
  const text = canonical({ n: p.namespace, e: p.execution, t: p.tool, a: p.args, ...(code ? { h: code } : {}) });
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}

/** The decision's fields once the person answered (or nobody did): allowed only when approved. */
export function afterApproval(pending: ToolCallDecision, answer: ApprovalAnswer, rule: ApprovalRule): JudgedFields {
  const base = { skippedJudges: pending.skippedJudges, judges: pending.judges };
  const why = `${answer.reason !== undefined && answer.reason !== "" ? `: ${answer.reason}` : ""}${answer.standing === true ? ` (standing decision for this execution, ToolApproval ${answer.name})` : ""}`;
  switch (answer.outcome) {
    case "approved":
      return {
        ...base,
        allowed: true,
        blocked_by: "none",
        reason: `approved by ${answer.decidedBy ?? "?"}${why} (${pending.reason})`,
        approval: answer,
      };
    case "denied":
      return { ...base, allowed: false, blocked_by: "approval", reason: `denied by ${answer.decidedBy ?? "?"}${why}`, approval: answer };
    case "timed_out": {
      const fail = rule.onTimeout === "fail";
      return {
        ...base,
        allowed: false,
        blocked_by: "approval",
        reason: `approval timed out: nobody decided ToolApproval ${answer.name} within ${Math.round(rule.timeoutMs / 1000)}s (onTimeout: ${rule.onTimeout}${fail ? ", the iteration fails" : ""})`,
        approval: { ...answer, ...(fail ? { failIteration: true } : {}) },
      };
    }
    case "withdrawn":
      return {
        ...base,
        allowed: false,
        blocked_by: "approval",
        reason: `approval withdrawn: ${answer.reason ?? "the run ended"} while ToolApproval ${answer.name} waited for a person`,
        approval: answer,
      };
  }
}

/** The denial when a call needs a person and the driver has none to ask (local mode): fail closed. */
export function noApprover(pending: ToolCallDecision, trigger: ApprovalTrigger): JudgedFields {
  return {
    skippedJudges: pending.skippedJudges,
    judges: pending.judges,
    allowed: false,
    blocked_by: "approval",
    reason: `approval required (${trigger}) but this driver cannot ask a person (approvals need the cluster's ToolApprovals)`,
  };
}

/** The arguments a person is shown: every value, long strings cut to 1024 characters (the digest covers the whole call). */
export function shownArguments(args: JsonObject): JsonObject {
  const cut = (v: JsonValue): JsonValue => {
    if (typeof v === "string") return v.length > 1024 ? `${v.slice(0, 1021)}...` : v;
    if (Array.isArray(v)) return v.map(cut);
    if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]));
    return v;
  };
  return cut(args) as JsonObject;
}
