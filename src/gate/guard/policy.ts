// A compiled guard policy: the built-in tables plus every GuardPolicy that applies, merged and
// compiled once (RE2, keys, signatures) so that a check at call time is lookups and searches.
import type { KeyObject } from "node:crypto";
import {
  APPROVAL_TRIGGERS,
  type ApprovalTrigger,
  GUARD_PROFILES,
  GUARD_THREAT_CLASSES,
  type EnforcementAction,
  type GuardPolicySpec,
  type GuardProfile,
  type GuardThreatClass,
} from "../../api/types.js";
import { DESTRUCTIVE_PATTERNS, FORBIDDEN_PATHS } from "./builtin-patterns.js";
import { threatActions, type ThreatAction, type ThreatActions } from "./effects/threat-policy.js";
import { JointScan, PatternSet, PolicyError, type PatternEntry } from "./pattern-set.js";
import { parsePublicKey, verifyRegistration } from "./signature.js";
import { compilePattern } from "../../engine/re2.js";
import { messageOf } from "../../errors.js";
import type { McpServerDeclaration } from "../mcp-tools.js";

/** A GuardPolicy as the store receives it: its name (for error messages) and spec. */
export interface NamedPolicy {
  name: string;
  namespace?: string;
  spec: GuardPolicySpec;
}

/**
 * What a rule does when it matches a call it would deny: `deny` blocks it; `warn` allows it
 * and lists the would-be denial in the decision (audit, events, Kubernetes Event); `dryrun`
 * allows it and records the would-be denial in the audit and the event stream only.
 */
export type { EnforcementAction };
const ENFORCEMENT_ACTIONS: readonly string[] = ["deny", "warn", "dryrun"];

/** A registered tool: expected code hash and whether its signature verified at compile time. */
export interface RegistryEntry {
  sha256: string;
  signatureValid: boolean;
  /** Policy that registered it. */
  from: string;
  enforcement: EnforcementAction;
}

/** One adaptive rule, ready to match. */
export interface AdaptiveRule {
  name: string;
  match_field: "tool" | "args" | "hash";
  action: "deny" | "flag";
  reason: string;
  /** Position among all adaptive rules of the merged policy: the first deny wins. */
  order: number;
  enforcement: EnforcementAction;
}

/** on_uncertain's bounds that operators set for a tool: each the least an Agent may use. */
export interface ApprovalBounds {
  margin?: number;
  minAgreement?: number;
}

/** Everything the seven checks read, immutable once compiled. */
export interface CompiledPolicy {
  /** Names of the merged policies, in merge order. */
  sources: string[];
  revoked: ReadonlyMap<string, { reason: string; enforcement: EnforcementAction }>;
  registry: ReadonlyMap<string, RegistryEntry>;
  requiredCapabilities: ReadonlyMap<string, { capability: string; enforcement: EnforcementAction }>;
  /** The operators' skip_judge per tool (GuardPolicy `skip_judge`), first policy winning. */
  skipJudge: ReadonlyMap<string, boolean>;
  /** The operators' approval triggers per tool ("*": every tool), of every policy together (GuardPolicy `approval`, ADR 0067). */
  approval?: ReadonlyMap<string, ReadonlySet<ApprovalTrigger>>;
  /** The operators' least on_uncertain bounds per tool ("*": every tool), the strictest of every policy (GuardPolicy `approval_margin`, `min_agreement_confidence`). */
  approvalBounds?: ReadonlyMap<string, ApprovalBounds>;
  /** The operators' MCP-server declarations by server name (GuardPolicy `mcp_servers`), first policy winning. */
  mcpServers: ReadonlyMap<string, McpServerDeclaration>;
  /** Destructive patterns then forbidden paths that deny, built-in first; the label is the reason text. */
  destructive: PatternSet;
  /** Policy destructive patterns and forbidden paths in `warn` or `dryrun` mode (each entry's `enforcement`). */
  destructiveWatch: PatternSet;
  sequenceContracts: readonly {
    name: string;
    requires_prior: string;
    triggers_for: string;
    within_steps: number;
    enforcement: EnforcementAction;
  }[];
  /** Adaptive rules per match field, in policy order; indices line up with the PatternSets. */
  adaptive: Record<AdaptiveRule["match_field"], { rules: AdaptiveRule[]; patterns: PatternSet }>;
  /** One prefilter pass over the argument views for `destructive`, `adaptive.args` and `destructiveWatch`. */
  viewScan: JointScan;
  trustedKeys: readonly KeyObject[];
  /** What each threat class does (deny or flag): the profile with its per-class overrides. */
  threats: ThreatActions;
  /** The profile in force (the first policy's that sets one; standard otherwise). */
  profile: GuardProfile;
  /** Conflicts resolved while merging (first policy wins), for the operator. */
  warnings: string[];
}

const FIELDS = ["tool", "args", "hash"] as const;
const SHA256_RE = /^[0-9a-f]{64}$/;

/**
 * Merges and compiles policies in order (callers put the cluster `default` first). Lists are
 * concatenated; for a tool registered or given a capability twice, the first policy wins.
 * Throws a PolicyError naming the policy and rule on any pattern RE2 refuses or bad key.
 */
export function compilePolicy(policies: readonly NamedPolicy[]): CompiledPolicy {
  const merged = new Merge();
  for (const p of policies) merged.add(`GuardPolicy ${p.namespace ? `${p.namespace}/` : ""}${p.name}`, p.spec);
  return merged.compile(policies.map((p) => p.name));
}

/**
 * Compiles every built-in pattern into compilePattern's cache now: PatternSets compile their
 * built-in entries at first search (ADR 0043), which suits a one-shot `gavel guard check`; a
 * gate calls this once at start so that no call pays for a compile (every later policy
 * version finds the programs in the cache).
 */
export function precompileBuiltinPatterns(): void {
  for (const p of [...DESTRUCTIVE_PATTERNS, ...FORBIDDEN_PATHS]) compilePattern(p.pattern);
}

type Registration = { tool: string; sha256: string; signature?: string; from: string; enforcement: EnforcementAction };

/** The enforcement action of an entry: its own, else its policy's, else deny. */
function enforcementOf(where: string, own: unknown, policy: EnforcementAction): EnforcementAction {
  if (own === undefined) return policy;
  if (typeof own !== "string" || !ENFORCEMENT_ACTIONS.includes(own))
    throw new PolicyError(`${where}: enforcementAction must be deny, warn or dryrun`);
  return own as EnforcementAction;
}

/** The policies merged so far, field by field, not yet compiled. */
class Merge {
  private readonly revoked = new Map<string, { reason: string; enforcement: EnforcementAction }>();
  private readonly registrations: Registration[] = [];
  private readonly requiredCapabilities = new Map<string, { capability: string; enforcement: EnforcementAction }>();
  private readonly skipJudge = new Map<string, boolean>();
  private readonly approval = new Map<string, Set<ApprovalTrigger>>();
  private readonly approvalBounds = new Map<string, ApprovalBounds>();
  private readonly mcpServers = new Map<string, McpServerDeclaration>();
  private readonly destructive: PatternEntry[] = [
    ...DESTRUCTIVE_PATTERNS.map((p) => ({ pattern: p.pattern, label: p.pattern, builtin: true as const })),
    ...FORBIDDEN_PATHS.map((p) => ({ pattern: p.pattern, label: p.pattern, builtin: true as const })),
  ];
  private readonly destructiveWatch: PatternEntry[] = [];
  private readonly sequenceContracts: CompiledPolicy["sequenceContracts"][number][] = [];
  private readonly adaptiveRules: Record<AdaptiveRule["match_field"], { rules: AdaptiveRule[]; entries: PatternEntry[] }> = {
    tool: { rules: [], entries: [] },
    args: { rules: [], entries: [] },
    hash: { rules: [], entries: [] },
  };
  private readonly trustedKeys: KeyObject[] = [];
  private readonly warnings: string[] = [];
  private profile: { value: GuardProfile; from: string } | undefined;
  private readonly threatOverrides = new Map<GuardThreatClass, { action: ThreatAction; from: string }>();
  private order = 0;

  /** Adds one policy's spec; `where` names it in errors and warnings. */
  add(where: string, s: GuardPolicySpec): void {
    const policy = enforcementOf(where, s.enforcementAction, "deny");
    this.addRevocations(where, s.revoked_tools ?? [], policy);
    this.addRegistrations(where, s.tool_registry ?? [], policy);
    this.addCapabilities(where, s.required_capabilities ?? {}, policy);
    this.addSkipJudge(where, s.skip_judge ?? {});
    this.addApproval(where, s.approval ?? {});
    this.addApprovalBound(where, "approval_margin", "margin", s.approval_margin ?? {});
    this.addApprovalBound(where, "min_agreement_confidence", "minAgreement", s.min_agreement_confidence ?? {});
    this.addMcpServers(where, s.mcp_servers ?? []);
    this.addThreatPolicy(where, s);
    for (const field of ["destructive_patterns", "forbidden_paths"] as const)
      this.addPatterns(`${where}: ${field}`, s[field] ?? [], policy);
    for (const [i, c] of (s.sequence_contracts ?? []).entries()) {
      const at = `${where}: sequence_contracts[${i}] (${c.name})`;
      const within = c.within_steps ?? 5;
      if (!Number.isInteger(within) || within < 1) throw new PolicyError(`${at}: within_steps must be a positive integer`);
      this.sequenceContracts.push({
        name: c.name,
        requires_prior: c.requires_prior,
        triggers_for: c.triggers_for,
        within_steps: within,
        enforcement: enforcementOf(at, c.enforcementAction, policy),
      });
    }
    for (const [i, r] of (s.adaptive_rules ?? []).entries()) this.addAdaptiveRule(`${where}: adaptive_rules[${i}] (${r.name})`, r, policy);
    for (const [i, k] of (s.trusted_keys ?? []).entries()) {
      try {
        this.trustedKeys.push(parsePublicKey(k.public_key));
      } catch (err) {
        throw new PolicyError(`${where}: trusted_keys[${i}] (${k.name}): ${messageOf(err)}`, { cause: err });
      }
    }
  }

  private addRevocations(where: string, list: NonNullable<GuardPolicySpec["revoked_tools"]>, policy: EnforcementAction): void {
    for (const [i, r] of list.entries()) {
      const enforcement = enforcementOf(`${where}: revoked_tools[${i}] (${r.tool})`, r.enforcementAction, policy);
      if (!this.revoked.has(r.tool)) this.revoked.set(r.tool, { reason: r.reason, enforcement });
    }
  }

  /** Destructive patterns or forbidden paths: those that deny, and those only watched (warn, dryrun). */
  private addPatterns(where: string, list: NonNullable<GuardPolicySpec["destructive_patterns"]>, policy: EnforcementAction): void {
    for (const [i, d] of list.entries()) {
      const at = `${where}[${i}]`;
      const enforcement = enforcementOf(at, d.enforcementAction, policy);
      if (enforcement === "deny") this.destructive.push({ pattern: d.pattern, label: d.pattern, where: at });
      else this.destructiveWatch.push({ pattern: d.pattern, label: d.pattern, where: at, enforcement });
    }
  }

  private addRegistrations(where: string, list: NonNullable<GuardPolicySpec["tool_registry"]>, policy: EnforcementAction): void {
    for (const [i, r] of list.entries()) {
      const at = `${where}: tool_registry[${i}] (${r.tool})`;
      if (!SHA256_RE.test(r.sha256.toLowerCase())) throw new PolicyError(`${at}: sha256 must be 64 hex digits`);
      const enforcement = enforcementOf(at, r.enforcementAction, policy);
      this.registrations.push({
        tool: r.tool,
        sha256: r.sha256.toLowerCase(),
        ...(r.signature !== undefined ? { signature: r.signature } : {}),
        from: where,
        enforcement,
      });
    }
  }

  private addCapabilities(where: string, caps: Record<string, string>, enforcement: EnforcementAction): void {
    for (const [tool, capability] of Object.entries(caps)) {
      const had = this.requiredCapabilities.get(tool);
      if (had === undefined) this.requiredCapabilities.set(tool, { capability, enforcement });
      else if (had.capability !== capability)
        this.warnings.push(`${where}: required_capabilities.${tool} ignored, already "${had.capability}"`);
    }
  }

  /** The operators' skip_judge per tool: the first policy's value wins, a different later one is a warning. */
  private addSkipJudge(where: string, skipJudge: Record<string, boolean>): void {
    for (const [tool, skip] of Object.entries(skipJudge)) {
      if (typeof skip !== "boolean") throw new PolicyError(`${where}: skip_judge.${tool} must be true or false`);
      const had = this.skipJudge.get(tool);
      if (had === undefined) this.skipJudge.set(tool, skip);
      else if (had !== skip) this.warnings.push(`${where}: skip_judge.${tool} ignored, already ${String(had)}`);
    }
  }

  /** The operators' approval triggers per tool: each policy's adds to the others' (each asks on its own), none removes one. */
  private addApproval(where: string, approval: Record<string, string>): void {
    for (const [tool, mode] of Object.entries(approval)) {
      if (!(APPROVAL_TRIGGERS as readonly string[]).includes(mode))
        throw new PolicyError(`${where}: approval.${tool} must be one of ${APPROVAL_TRIGGERS.join(", ")}, not ${JSON.stringify(mode)}`);
      const set = this.approval.get(tool) ?? new Set<ApprovalTrigger>();
      set.add(mode as ApprovalTrigger);
      this.approval.set(tool, set);
    }
  }

  /** One of on_uncertain's bounds per tool: the strictest (the highest) of every policy's counts. */
  private addApprovalBound(where: string, field: string, key: keyof ApprovalBounds, values: Record<string, number>): void {
    for (const [tool, v] of Object.entries(values)) {
      if (typeof v !== "number" || !(v >= 0 && v <= 1)) throw new PolicyError(`${where}: ${field}.${tool} must be a number from 0 to 1`);
      const bounds = this.approvalBounds.get(tool) ?? {};
      bounds[key] = Math.max(bounds[key] ?? 0, v);
      this.approvalBounds.set(tool, bounds);
    }
  }

  /** MCP-server declarations: the first policy that declares a server wins, a later one is a warning. */
  private addMcpServers(where: string, list: NonNullable<GuardPolicySpec["mcp_servers"]>): void {
    for (const [i, d] of list.entries()) {
      const at = `${where}: mcp_servers[${i}] (${d.server})`;
      const capabilities = new Map<string, { skip_judge?: boolean; capability?: string }>();
      for (const [tool, c] of Object.entries(d.capabilities ?? {})) {
        if (c.skip_judge !== undefined && typeof c.skip_judge !== "boolean")
          throw new PolicyError(`${at}: capabilities.${tool}.skip_judge must be true or false`);
        if (c.capability !== undefined && typeof c.capability !== "string")
          throw new PolicyError(`${at}: capabilities.${tool}.capability must be a string`);
        capabilities.set(tool, c);
      }
      const had = this.mcpServers.get(d.server);
      if (had === undefined) this.mcpServers.set(d.server, { trusted: d.trusted === true, capabilities, from: where });
      else this.warnings.push(`${at} ignored, already declared by ${had.from}`);
    }
  }

  /** The threat-class profile and per-class overrides: the first policy that sets each wins, a different later one is a warning. */
  private addThreatPolicy(where: string, s: GuardPolicySpec): void {
    if (s.profile !== undefined) {
      if (!GUARD_PROFILES.includes(s.profile))
        throw new PolicyError(`${where}: profile must be strict, standard or permissive, not "${String(s.profile)}"`);
      if (this.profile === undefined) this.profile = { value: s.profile, from: where };
      else if (this.profile.value !== s.profile)
        this.warnings.push(`${where}: profile ignored, already "${this.profile.value}" from ${this.profile.from}`);
    }
    for (const [cls, action] of Object.entries(s.threat_classes ?? {})) {
      if (!(GUARD_THREAT_CLASSES as readonly string[]).includes(cls))
        throw new PolicyError(`${where}: threat_classes.${cls}: not a threat class (${GUARD_THREAT_CLASSES.join(", ")})`);
      if (action !== "deny" && action !== "flag") throw new PolicyError(`${where}: threat_classes.${cls} must be deny or flag`);
      const had = this.threatOverrides.get(cls as GuardThreatClass);
      if (had === undefined) this.threatOverrides.set(cls as GuardThreatClass, { action, from: where });
      else if (had.action !== action) this.warnings.push(`${where}: threat_classes.${cls} ignored, already ${had.action} from ${had.from}`);
    }
  }

  private addAdaptiveRule(at: string, r: NonNullable<GuardPolicySpec["adaptive_rules"]>[number], policy: EnforcementAction): void {
    if (!FIELDS.includes(r.match_field)) throw new PolicyError(`${at}: match_field must be tool, args or hash`);
    if (r.action !== "deny" && r.action !== "flag") throw new PolicyError(`${at}: action must be deny or flag`);
    const enforcement = enforcementOf(at, r.enforcementAction, policy);
    if (r.enabled === false) {
      checkPattern(at, r.pattern);
      return;
    }
    this.adaptiveRules[r.match_field].rules.push({
      name: r.name,
      match_field: r.match_field,
      action: r.action,
      reason: r.reason,
      order: this.order++,
      enforcement,
    });
    this.adaptiveRules[r.match_field].entries.push({ pattern: r.pattern, label: r.name, where: at });
  }

  /** The compiled policy; `sources` are the merged policies' names. */
  compile(sources: string[]): CompiledPolicy {
    const adaptive = Object.fromEntries(
      FIELDS.map((f) => [f, { rules: this.adaptiveRules[f].rules, patterns: PatternSet.compile(this.adaptiveRules[f].entries) }]),
    ) as CompiledPolicy["adaptive"];
    const destructive = PatternSet.compile(this.destructive);
    const destructiveWatch = PatternSet.compile(this.destructiveWatch);
    return {
      sources,
      revoked: this.revoked,
      registry: this.registry(),
      requiredCapabilities: this.requiredCapabilities,
      skipJudge: this.skipJudge,
      approval: this.approval,
      approvalBounds: this.approvalBounds,
      mcpServers: this.mcpServers,
      destructive,
      destructiveWatch,
      sequenceContracts: this.sequenceContracts,
      adaptive,
      viewScan: new JointScan([destructive, adaptive.args.patterns, destructiveWatch]),
      trustedKeys: this.trustedKeys,
      threats: threatActions(this.profile?.value, Object.fromEntries([...this.threatOverrides].map(([c, o]) => [c, o.action]))),
      profile: this.profile?.value ?? "standard",
      warnings: this.warnings,
    };
  }

  /**
   * The registry, first registration of each tool winning. Signatures are verified here, once
   * per policy version: a registration cannot change without a new policy, so verifying at
   * every call would only repeat the same answer.
   */
  private registry(): Map<string, RegistryEntry> {
    const registry = new Map<string, RegistryEntry>();
    for (const r of this.registrations) {
      const had = registry.get(r.tool);
      if (had !== undefined) {
        if (had.sha256 !== r.sha256) this.warnings.push(`${r.from}: tool_registry ${r.tool} ignored, already registered by ${had.from}`);
        continue;
      }
      registry.set(r.tool, {
        sha256: r.sha256,
        signatureValid: verifyRegistration(this.trustedKeys, r.tool, r.sha256, r.signature),
        from: r.from,
        enforcement: r.enforcement,
      });
    }
    return registry;
  }
}

function checkPattern(where: string, pattern: string): void {
  PatternSet.compile([{ pattern, label: where }]);
}
