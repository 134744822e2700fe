// The seven deterministic checks of guardian-checks.txt, each a pure function of the call and
// its context that returns a denial or undefined. guard.ts runs them in order.
import type { GuardDecision, McpToolDescriptor } from "../../api/protocol.js";
import type { JsonObject } from "../../api/types.js";
import { callViews, NestingTooDeep, type CallViews } from "./argument-views.js";
import { declaredTool, type GuardContext } from "./context.js";
import { mcpDeclaration, mcpToolName } from "../mcp-tools.js";
import { callFindings } from "./effects/read-call.js";
import { findingAction } from "./effects/threat-policy.js";

export { findingAction };
import type { Candidates } from "./pattern-set.js";
import type { EnforcementAction } from "./policy.js";
import { waived } from "./waivers.js";

/** The part of a proposal the guard reads. */
export interface GuardCall {
  tool: string;
  args: JsonObject;
  /** 1-based position of the call in its iteration. */
  step: number;
  /** The MCP tool's listing when the call is for one (its digest is the live hash of check 2). */
  mcp?: McpToolDescriptor;
}

/** Per-call values computed at most once and shared by the checks that need them. */
export class CallState {
  private cachedViews: CallViews | undefined;
  private cachedCandidates: readonly Candidates[] | undefined;
  /** Would-be denials of rules in `warn` mode, and of rules in `dryrun` mode (their reasons). */
  warnings: string[] | undefined;
  dryrun: string[] | undefined;
  /** Threat classes the policy flags rather than denies, found in this call (their reasons). */
  flags: string[] | undefined;
  constructor(
    readonly call: GuardCall,
    readonly ctx: GuardContext,
  ) {}

  /**
   * A rule's denial under its enforcement action: `deny` returns it; `warn` and `dryrun`
   * note its reason and return undefined, so the call goes on to the next rule and check.
   */
  enforce(enforcement: EnforcementAction, denial: Denial): Denial | undefined {
    if (enforcement === "deny") return denial;
    const reason = denial.reason ?? denial.check ?? "";
    if (enforcement === "warn") (this.warnings ??= []).push(reason);
    else (this.dryrun ??= []).push(reason);
    return undefined;
  }

  /** The texts patterns are searched in (argument-views.ts). */
  get views(): string[] {
    return this.callViews.views;
  }

  /** The views and, for a shell-capable tool, what its command leaves unresolved. */
  get callViews(): CallViews {
    this.cachedViews ??= callViews(this.call.args, this.ctx.views ?? {}, isShellTool(this.call.tool, this.ctx));
    return this.cachedViews;
  }

  /** Prefilter candidates over the views: [destructive patterns, `args` adaptive rules, watched destructive patterns], one scan. */
  get viewCandidates(): readonly Candidates[] {
    this.cachedCandidates ??= this.ctx.policy.viewScan.candidates(this.views);
    return this.cachedCandidates;
  }
}

/** Tool names that run a shell: `cmd.run`, `shell_exec`, `bash`, `terminal.exec`, ... */
const SHELL_TOOL_RE = /(^|[._-])(cmd|shell|bash|sh|zsh|terminal)([._-]|$)/i;

/**
 * Whether a tool runs its command through a shell: by name, or by a `shell:*` / `code:exec`
 * capability in its manifest entry or the policy (vaglio applies its shell patterns to
 * `shell_exec` and to `code:exec`).
 */
export function isShellTool(tool: string, ctx: Pick<GuardContext, "scope" | "policy">): boolean {
  if (SHELL_TOOL_RE.test(tool)) return true;
  const caps = `${declaredTool(ctx.scope, tool)?.capability ?? ""}|${ctx.policy.requiredCapabilities.get(tool)?.capability ?? ""}|${mcpDeclaration(ctx.policy.mcpServers, tool)?.tool?.capability ?? ""}`;
  return /(^|\|)\s*(shell:|code:exec)/.test(caps);
}

type Denial = GuardDecision & { approved: false };
const FIELDS = ["tool", "args", "hash"] as const;
/** A check: a denial, or undefined to pass the call on. */
export type Check = (state: CallState) => Denial | undefined;

/** 1. The revocation list: an O(1) map lookup. */
export const revocation: Check = (state) => {
  const r = state.ctx.policy.revoked.get(state.call.tool);
  return r === undefined
    ? undefined
    : state.enforce(r.enforcement, { approved: false, check: "revocation", reason: `tool_revoked: ${r.reason}` });
};

/**
 * 2. Tool hash: a registered tool's live code (as the worker hashed it) must hash to the
 * registry's SHA-256. The reason names the tool; no live hash at all is a mismatch too.
 */
export const hash: Check = (state) => {
  const { call, ctx } = state;
  const entry = ctx.policy.registry.get(call.tool);
  const live = ctx.liveHashes?.get(call.tool);
  // An MCP tool that appeared or changed after the run listed its tools is refused until a registration covers its digest.
  if (call.mcp?.pinned === false && (entry === undefined || live?.toLowerCase() !== entry.sha256)) {
    return { approved: false, check: "hash", reason: `hash_mismatch: ${call.tool} (appeared or changed since the run listed its tools)` };
  }
  if (entry === undefined) return undefined;
  if (live?.toLowerCase() === entry.sha256) return undefined;
  const reason = live === undefined ? `hash_mismatch: ${call.tool} (no live hash of its code)` : `hash_mismatch: ${call.tool}`;
  return state.enforce(entry.enforcement, { approved: false, check: "hash", reason });
};

/**
 * 3. Capability boundary: the tool must be in the agent's `spec.tools`, and each capability
 * it requires (manifest `capability`, policy `required_capabilities`; `a|b` = either) must be
 * in the execution's scope.
 */
export const capability: Check = (state) => {
  const { call, ctx } = state;
  const declared = declaredTool(ctx.scope, call.tool);
  if (declared === undefined) return { approved: false, check: "capability", reason: `capability_boundary: missing tool:${call.tool}` };
  // An MCP tool comes with its listing, and the listing must be the named tool's: its pin and skip_judge are read from it.
  if (call.mcp === undefined && !ctx.scope.tools.has(call.tool))
    return { approved: false, check: "capability", reason: `capability_boundary: ${call.tool} proposed without its MCP listing` };
  if (call.mcp !== undefined && mcpToolName(call.mcp.server, call.mcp.tool) !== call.tool) {
    return {
      approved: false,
      check: "capability",
      reason: `capability_boundary: ${call.tool} proposed with the listing of ${mcpToolName(call.mcp.server, call.mcp.tool)}`,
    };
  }
  const fromPolicy = ctx.policy.requiredCapabilities.get(call.tool);
  const fromMcp = mcpDeclaration(ctx.policy.mcpServers, call.tool)?.tool?.capability;
  // The manifest's own capability and the MCP declaration always deny; the policy's map follows its enforcement action.
  for (const [required, enforcement] of [
    [declared.capability, "deny"],
    [fromPolicy?.capability, fromPolicy?.enforcement ?? "deny"],
    [fromMcp, "deny"],
  ] as const) {
    if (required === undefined || required === "") continue;
    const alternatives = required.split("|").map((c) => c.trim());
    if (!alternatives.some((c) => ctx.scope.capabilities.has(c))) {
      const denial = state.enforce(enforcement, {
        approved: false,
        check: "capability",
        reason: `capability_boundary: missing ${required}`,
      });
      if (denial !== undefined) return denial;
    }
  }
  return undefined;
};

/**
 * 4. Threat classes (the effect model: what the call's commands do), then destructive patterns
 * and forbidden paths over every argument view.
 */
export const destructivePattern: Check = (state) => {
  const set = state.ctx.policy.destructive;
  let views: string[];
  try {
    views = state.views;
  } catch (err) {
    if (err instanceof NestingTooDeep)
      return { approved: false, check: "destructive_pattern", reason: `destructive_pattern: ${err.message}` };
    throw err;
  }
  const threat = threatClasses(state);
  if (threat !== undefined) return threat;
  // Patterns in warn or dryrun mode are noted whatever else matches: they measure the pattern.
  const watch = state.ctx.policy.destructiveWatch;
  for (const w of watch.allMatches(views, state.viewCandidates[2])) {
    const e = watch.entries[w];
    if (e !== undefined)
      state.enforce(e.enforcement ?? "deny", { approved: false, check: "destructive_pattern", reason: `destructive_pattern: ${e.label}` });
  }
  let i = set.firstMatch(views, state.viewCandidates[0]);
  // A built-in pattern that names a token the effect model has read as harmless here is passed over (waivers.ts).
  if (i >= 0 && isWaived(state, i, views)) i = set.allMatches(views, state.viewCandidates[0]).find((j) => !isWaived(state, j, views)) ?? -1;
  if (i >= 0) return { approved: false, check: "destructive_pattern", reason: `destructive_pattern: ${set.entries[i]?.label ?? ""}` };
  // What a static reading cannot resolve is denied, not guessed (vaglio: a false positive costs
  // a reformulated request, a false negative a leaked key).
  const unresolved = state.callViews.unresolved;
  if (unresolved !== undefined)
    return { approved: false, check: "destructive_pattern", reason: `destructive_pattern: unresolved shell (${unresolved})` };
  return undefined;
};

/** Whether the destructive set's entry i is a built-in pattern waived for this call. */
function isWaived(state: CallState, i: number, views: readonly string[]): boolean {
  const e = state.ctx.policy.destructive.entries[i];
  if (e === undefined || e.builtin !== true) return false;
  const where = { home: state.ctx.views?.home ?? "/root", workspace: state.ctx.views?.cwd ?? "/workspace" };
  return waived(e.label, views, state.callViews, where, isShellTool(state.call.tool, state.ctx));
}

/** The first finding of a class the policy denies; findings of flagged classes are noted in state.flags. */
function threatClasses(state: CallState): Denial | undefined {
  const { call, ctx } = state;
  const where = { home: ctx.views?.home ?? "/root", workspace: ctx.views?.cwd ?? "/workspace" };
  const findings = callFindings(call.tool, call.args, state.callViews, where, isShellTool(call.tool, ctx));
  for (const f of findings) {
    const reason = `${f.class}: ${f.what} [${f.key}]`;
    // Code written to run later is denied when what it would do is (a reverse shell planted in cron under permissive).
    if (findingAction(f, ctx.policy.threats) === "deny") return { approved: false, check: "destructive_pattern", reason };
    if (!(state.flags ??= []).includes(reason)) state.flags.push(reason);
  }
  return undefined;
}

/** 5. Sequence contracts: `requires_prior` must have been allowed within the last `within_steps` steps. */
export const sequenceContract: Check = (state) => {
  const { call, ctx } = state;
  for (const c of ctx.policy.sequenceContracts) {
    if (c.triggers_for !== call.tool) continue;
    const from = call.step - c.within_steps;
    const met = ctx.history.some((h) => h.tool === c.requires_prior && h.step < call.step && h.step >= from);
    if (!met) {
      const denial = state.enforce(c.enforcement, { approved: false, check: "sequence_contract", reason: `sequence_contract: ${c.name}` });
      if (denial !== undefined) return denial;
    }
  }
  return undefined;
};

/** 6. Signature: a registered tool's registration must carry a valid Ed25519 signature (verified at policy load). */
export const signature: Check = (state) => {
  const entry = state.ctx.policy.registry.get(state.call.tool);
  return entry === undefined || entry.signatureValid
    ? undefined
    : state.enforce(entry.enforcement, { approved: false, check: "signature", reason: "signature_invalid" });
};

/** 7. Adaptive rules: the first matching `deny` (in declaration order) blocks; `flag` rules are listed. */
export function adaptiveRules(state: CallState): GuardDecision {
  const { policy, liveHashes } = state.ctx;
  let matched: { order: number; name: string; action: "deny" | "flag" }[] | undefined;
  for (const field of FIELDS) {
    const { rules, patterns } = policy.adaptive[field];
    if (rules.length === 0) continue;
    const hits =
      field === "args"
        ? patterns.allMatches(state.views, state.viewCandidates[1])
        : patterns.allMatches([
            field === "tool" ? state.call.tool : (liveHashes?.get(state.call.tool) ?? policy.registry.get(state.call.tool)?.sha256 ?? ""),
          ]);
    for (const i of hits) {
      const rule = rules[i];
      if (rule === undefined) continue;
      // A deny rule in warn or dryrun mode only notes what it would have denied.
      if (rule.action === "deny" && rule.enforcement !== "deny")
        state.enforce(rule.enforcement, { approved: false, check: "adaptive_rule", reason: `adaptive_rule: ${rule.name}` });
      else (matched ??= []).push({ order: rule.order, name: rule.name, action: rule.action });
    }
  }
  if (matched === undefined) return { approved: true };
  matched.sort((a, b) => a.order - b.order);
  const flags = matched.filter((m) => m.action === "flag").map((m) => m.name);
  const deny = matched.find((m) => m.action === "deny");
  if (deny !== undefined)
    return { approved: false, check: "adaptive_rule", reason: `adaptive_rule: ${deny.name}`, ...(flags.length ? { flags } : {}) };
  return { approved: true, check: "adaptive_rule", flags };
}
