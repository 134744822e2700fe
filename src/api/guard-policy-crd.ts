// The GuardPolicy resource (the deterministic guard's extensible part): its CRD schema, the
// one declaration from which its TypeScript types are read
// (docs/adr/0060-api-types-derived-from-the-crd-schemas.md).
import { arr, bool, cel, int, isMap, map, narrowed, obj, str, threshold, type Static } from "./schema-dsl.js";
import { conditions, type API_VERSION, type ObjectMeta } from "./meta.js";
import { crd, type CrdDocument } from "./crd-document.js";
import { guardPolicyMcpServers } from "./mcp-schema.js";

/** Name of the cluster-wide default GuardPolicy in the controller's namespace. */
export const DEFAULT_GUARD_POLICY = "default";

/** The guard's threat classes (docs/guard.md): what the effect model finds a command does. */
export const GUARD_THREAT_CLASSES = [
  "protection_off",
  "reverse_shell",
  "exfiltration",
  "remote_code",
  "privilege_escalation",
  "destruction",
  "infrastructure",
  "git_history",
  "secrets",
  "persistence",
  "service_disruption",
  "resource_abuse",
  "account_change",
  "privilege_change",
] as const;
export type GuardThreatClass = (typeof GUARD_THREAT_CLASSES)[number];
/** The threat-class profiles of a GuardPolicy. */
export const GUARD_PROFILES = ["strict", "standard", "permissive"] as const;
export type GuardProfile = (typeof GUARD_PROFILES)[number];

/** `enforcementAction` of a GuardPolicy or one of its rules (gavel extension; Gatekeeper's names). */
const enforcementAction = (scope: string) =>
  str(
    `What ${scope} does with a call it would deny: deny blocks it; warn allows it and lists the would-be denial in the decision, the audit, the event stream and a ToolCallWarned Event; dryrun allows it and records the would-be denial in the audit and the event stream only. ${scope === "this policy's rules" ? "Default deny." : "Default: the policy's enforcementAction."}`,
    { enum: ["deny", "warn", "dryrun"] },
  );

const regexEntry = (what: string) =>
  obj(
    `A ${what}.`,
    {
      pattern: str(
        "Regular expression (RE2 syntax; lookaround groups are accepted too and run bounded, see docs/guard.md), matched against every nested string argument.",
        { minLength: 1 },
      ),
      reason: str("Reason reported on deny."),
      enforcementAction: enforcementAction("this pattern"),
    },
    { required: ["pattern"] },
  );

const guardPolicySpec = obj(
  "The extensible part of the deterministic guard that checks every tool call before any judge. The policy named default in the controller's namespace applies cluster-wide; a namespace's own policies add to it. Hot-reloaded.",
  {
    enforcementAction: enforcementAction("this policy's rules"),
    profile: str(
      "What the guard's threat classes (what the effect model finds a command does; docs/guard.md) do with a call: strict denies every class; standard (the default) denies all but infrastructure, git_history and privilege_change (a command run as another user), which it flags (the call goes on, flagged); permissive flags protection_off, privilege_escalation, secrets, persistence, service_disruption, account_change, infrastructure, git_history and privilege_change and denies the rest. The first policy that sets it wins (the cluster default first).",
      { enum: [...GUARD_PROFILES] },
    ),
    // maxProperties bounds the CEL rule's estimated cost (without it, 14 classes exceed the API server's budget).
    threat_classes: narrowed<Partial<Record<GuardThreatClass, "deny" | "flag">>>()(
      map(
        `Per threat class (${GUARD_THREAT_CLASSES.join(", ")}) -> deny, or flag (allow the call and list the finding in the decision's flags), overriding the profile. The first policy that sets a class wins.`,
        str("deny or flag.", { enum: ["deny", "flag"] }),
        {
          maxProperties: GUARD_THREAT_CLASSES.length,
          "x-kubernetes-validations": [
            cel(
              `self.all(k, k in [${GUARD_THREAT_CLASSES.map((c) => `'${c}'`).join(", ")}])`,
              `threat_classes keys are threat classes: ${GUARD_THREAT_CLASSES.join(", ")}`,
              (self) => {
                if (!isMap(self)) return true;
                const bad = Object.keys(self).find((k) => !(GUARD_THREAT_CLASSES as readonly string[]).includes(k));
                return bad === undefined ? true : { at: `.${bad}` };
              },
            ),
          ],
        },
      ),
    ),
    revoked_tools: arr(
      'Revocation list (check 1): a call to one of these tools is denied with reason "tool_revoked: <reason>".',
      obj(
        "A revoked tool.",
        {
          tool: str("Tool id/name.", { minLength: 1 }),
          reason: str("Why it is revoked.", { minLength: 1 }),
          revoked_at: str("When.", { format: "date-time" }),
          enforcementAction: enforcementAction("this entry"),
        },
        { required: ["tool", "reason"] },
      ),
      { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["tool"] },
    ),
    tool_registry: arr(
      'Registered tools (checks 2 and 6): expected SHA-256 of the tool code ("hash_mismatch") and its Ed25519 signature by a trusted key ("signature_invalid").',
      obj(
        "A registered tool.",
        {
          tool: str("Tool name.", { minLength: 1 }),
          sha256: str("Hex SHA-256 of the tool's code.", { pattern: "^[0-9a-f]{64}$" }),
          signature: str("Base64 Ed25519 signature of the sha256."),
          enforcementAction: enforcementAction("this registration (hash and signature checks)"),
        },
        { required: ["tool", "sha256"] },
      ),
      { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["tool"] },
    ),
    required_capabilities: map(
      'Capability boundary (check 3): tool name -> capability it requires, e.g. {shell_exec: "shell:safe"}; denied when the agent\'s security.capabilities lack it.',
      str("Capability."),
    ),
    skip_judge: map(
      "skip_judge, decided by operators: tool name -> true to skip the tool_validation judges for its calls, false to judge them, overriding gavel's built-in table (fs.read and fs.list skip, other tools are judged). The guard always runs. An Agent's tools[].skip_judge can only ask for judging (false), never switch it off.",
      bool("Skip the judges for this tool."),
    ),
    approval: map(
      "The operators' last word on when a tool's calls go to a person (ADR 0067): tool name, or \"*\" for every tool -> always (every call the guard allows asks a person, whatever the Agent says), on_judge_reject (a judge's rejection goes to a person), on_flag (a call the guard flagged without denying it) or on_uncertain (a judge's score within the tool's approval_margin of its min_score, or the judges' agreement below its min_agreement_confidence). Each trigger adds to the Agent's tools[].approval and to every other policy's: an Agent can ask for more, never less.",
      str("always, on_judge_reject, on_flag or on_uncertain.", { enum: ["always", "on_judge_reject", "on_flag", "on_uncertain"] }),
    ),
    approval_margin: map(
      "The least approval_margin of a tool's on_uncertain trigger (tool name, or \"*\" for every tool -> 0 to 1): a judge's score within it of its min_score, a narrow pass or a narrow rejection, goes to a person. The widest of the Agent's tools[].approval_margin (default 0.1) and every policy's counts: an Agent can widen it, never narrow it. It counts where on_uncertain is in force (the Agent's approval or a policy's).",
      threshold("The margin."),
    ),
    min_agreement_confidence: map(
      "The least min_agreement_confidence of a tool's on_uncertain trigger (tool name, or \"*\" for every tool -> 0 to 1): with two judges or more, their agreement (1 - score spread) below it goes to a person. The highest of the Agent's tools[].min_agreement_confidence and every policy's counts: an Agent can raise it, never lower it.",
      threshold("The least agreement."),
    ),
    mcp_servers: guardPolicyMcpServers,
    destructive_patterns: arr(
      'Destructive patterns (check 4): deny with "destructive_pattern: <pattern>".',
      regexEntry("destructive argument pattern"),
    ),
    forbidden_paths: arr("Paths no tool argument may reference (check 4).", regexEntry("forbidden path pattern")),
    sequence_contracts: arr(
      'Sequence contracts (check 5): triggers_for is denied ("sequence_contract: <name>") unless requires_prior was called within the last within_steps calls.',
      obj(
        "A sequence contract.",
        {
          name: str("Contract name.", { minLength: 1 }),
          requires_prior: str("Tool that must precede.", { minLength: 1 }),
          triggers_for: str("Tool that triggers the check.", { minLength: 1 }),
          within_steps: int("Window in tool calls. Default 5.", { minimum: 1, default: 5 }),
          enforcementAction: enforcementAction("this contract"),
        },
        { required: ["name", "requires_prior", "triggers_for"] },
      ),
      { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
    ),
    adaptive_rules: arr(
      'Adaptive rules (check 7): deny ("adaptive_rule: <name>") or flag (record, allow) calls whose tool, args or hash match pattern.',
      obj(
        "An adaptive rule.",
        {
          name: str("Rule name.", { minLength: 1 }),
          match_field: str("What the pattern is matched against: tool, args or hash.", { enum: ["tool", "args", "hash"] }),
          pattern: str("Regular expression (RE2 syntax; lookaround groups are accepted too and run bounded, see docs/guard.md).", {
            minLength: 1,
          }),
          action: str("deny or flag.", { enum: ["deny", "flag"] }),
          reason: str("Reason reported."),
          enabled: bool("Whether the rule is active. Default true.", { default: true }),
          enforcementAction: enforcementAction("this rule (with action deny)"),
        },
        { required: ["name", "match_field", "pattern", "action", "reason"] },
      ),
      { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
    ),
    trusted_keys: arr(
      "Ed25519 public keys trusted to sign tool registrations (check 6).",
      obj(
        "A key.",
        { name: str("Key name.", { minLength: 1 }), public_key: str("Base64 raw 32-byte key or PEM.", { minLength: 1 }) },
        { required: ["name", "public_key"] },
      ),
      { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
    ),
  },
);

const guardPolicyStatus = obj("Observed state.", {
  observedGeneration: int("metadata.generation last loaded.", { format: "int64" }),
  counts: map("Entries loaded per list.", int("Count.")),
  conditions,
  replicas: arr(
    "What each live controller replica's guard has taken in (gavel extension, ADR 0074): an Agent is Ready only once every live replica reports the generation of every policy that covers it.",
    obj(
      "One replica's report.",
      {
        name: str("The replica (its pod name).", { minLength: 1 }),
        observedGeneration: int("The metadata.generation this replica's guard has taken in (compiled, or refused).", { format: "int64" }),
        enforcedGeneration: int("The generation of the version it enforces: the last that compiled.", { format: "int64" }),
      },
      { required: ["name", "observedGeneration"] },
    ),
    { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
  ),
});

/** The GuardPolicy CRD. */
export const guardPolicyCrd: CrdDocument = crd("GuardPolicy", "guardpolicies", ["gp"], {
  columns: [
    { name: "Revoked", type: "string", jsonPath: ".spec.revoked_tools[*].tool" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  required: ["spec"],
  spec: guardPolicySpec,
  status: guardPolicyStatus,
});

export interface GuardPolicy {
  apiVersion: typeof API_VERSION;
  kind: "GuardPolicy";
  metadata: ObjectMeta;
  spec: GuardPolicySpec;
  status?: GuardPolicyStatus;
}

export type GuardPolicySpec = Static<typeof guardPolicySpec>;
export type GuardPolicyStatus = Static<typeof guardPolicyStatus>;
/** What a GuardPolicy rule does with a call it would deny (gavel extension, Gatekeeper's names). */
export type EnforcementAction = Static<ReturnType<typeof enforcementAction>>;
