// Threat classes as policy: each class is denied or flagged under a profile (strict, standard,
// permissive), and a GuardPolicy may override single classes (docs/guard.md, ADR 0031).
import { GUARD_PROFILES, type GuardProfile } from "../../../api/types.js";
import { THREAT_CLASSES, type Finding, type ThreatClass } from "./effect.js";

/** What the guard does with a call a class covers: deny it, or allow it and flag it. */
export type ThreatAction = "deny" | "flag";
export { GUARD_PROFILES, type GuardProfile };
export const DEFAULT_PROFILE: GuardProfile = "standard";

/** Each class's action under each profile. History-losing git, infrastructure and a command run as another user are the policy choices: deny under strict, flag under standard. */
export const PROFILE_ACTIONS: Readonly<Record<GuardProfile, Readonly<Record<ThreatClass, ThreatAction>>>> = {
  strict: Object.fromEntries(THREAT_CLASSES.map((c) => [c, "deny"])) as Record<ThreatClass, ThreatAction>,
  standard: {
    protection_off: "deny",
    reverse_shell: "deny",
    exfiltration: "deny",
    remote_code: "deny",
    privilege_escalation: "deny",
    destruction: "deny",
    infrastructure: "flag",
    git_history: "flag",
    secrets: "deny",
    persistence: "deny",
    service_disruption: "deny",
    resource_abuse: "deny",
    account_change: "deny",
    privilege_change: "flag",
  },
  permissive: {
    protection_off: "flag",
    reverse_shell: "deny",
    exfiltration: "deny",
    remote_code: "deny",
    privilege_escalation: "flag",
    destruction: "deny",
    infrastructure: "flag",
    git_history: "flag",
    secrets: "flag",
    persistence: "flag",
    service_disruption: "flag",
    resource_abuse: "deny",
    account_change: "flag",
    privilege_change: "flag",
  },
};

/** The action per class a compiled policy applies. */
export type ThreatActions = Readonly<Record<ThreatClass, ThreatAction>>;

/** The actions of a profile with per-class overrides applied. */
export function threatActions(
  profile: GuardProfile = DEFAULT_PROFILE,
  overrides: Partial<Record<ThreatClass, ThreatAction>> = {},
): ThreatActions {
  return { ...PROFILE_ACTIONS[profile], ...overrides };
}

/** What a policy does with one finding: deny when its class is denied or when a payload it carries is (ADR 0052). */
export function findingAction(f: Pick<Finding, "class" | "carries">, threats: ThreatActions): ThreatAction {
  return threats[f.class] === "deny" || f.carries?.some((c) => threats[c] === "deny") === true ? "deny" : "flag";
}
