// TypeScript shapes of gavel's custom resources (group 100monkeys.ai, version v1).
// Field names are the reference documents' own (snake_case) so that every manifest shown
// there applies verbatim. crds/ is the source of truth; a test checks these against it.

export const GROUP = "100monkeys.ai";
export const VERSION = "v1";
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Label that marks an Agent as a judge (`metadata.labels.role: judge`). */
export const ROLE_LABEL = "role";
export const ROLE_JUDGE = "judge";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

// ---------------------------------------------------------------- Agent

export interface Agent {
  apiVersion: typeof API_VERSION;
  kind: "Agent";
  metadata: ObjectMeta;
  spec: AgentSpec;
  status?: AgentStatus;
}

export interface AgentSpec {
  runtime?: RuntimeSpec;
  task?: { instruction?: string };
  /** JSON Schema of the input; for judges, the property names gavel maps its payload onto. */
  input_schema?: JsonObject;
  tools?: ToolEntry[];
  security?: SecuritySpec;
  execution?: ExecutionSpec;
  volumes?: VolumeSpec[];
  /**
   * gavel extension: how this Agent's judges see its volumes (docs/judges.md, ADR 0038). Unset:
   * `copy` for a ReadWriteOncePod volume, `shared` for the others.
   */
  workspace_strategy?: WorkspaceStrategy;
  /** gavel extension (ADR 0051): MCP servers whose tools are offered as `<server>.<tool>`, every call through the gate. */
  mcp_servers?: McpServerSpec[];
}

/** One MCP server of an Agent: run over stdio beside the worker runtime (ADR 0051), or a remote one by URL (ADR 0059). */
export interface McpServerSpec {
  name: string;
  /** A stdio server's program and arguments; either command or url. */
  command?: string[];
  /** A remote Streamable HTTP server's endpoint; either command or url. */
  url?: string;
  /** The Secret key holding a url server's bearer token (the pod reads it; gavel never does). */
  bearer_token_secret?: { name: string; key: string };
  /** The only tools offered; default every tool the server lists. */
  tools?: string[];
  /** One call's deadline; default 60. */
  timeout_seconds?: number;
  /** Start, initialize and tools/list deadline; default 30. */
  startup_timeout_seconds?: number;
}

/** What operators declare for one MCP tool (GuardPolicy `mcp_servers[].capabilities`). */
export interface McpToolCapability {
  skip_judge?: boolean;
  capability?: string;
}

/** A GuardPolicy's declaration of one MCP server (ADR 0051). */
export interface McpServerPolicy {
  server: string;
  /** Whether the server's tool annotations may choose defaults; default false. */
  trusted?: boolean;
  /** Per tool name as the server lists it, or `*`. */
  capabilities?: Record<string, McpToolCapability>;
}

/** How judges see a worker's volumes: its claim read-only, a VolumeSnapshot clone, or a copy. */
export const WORKSPACE_STRATEGIES = ["shared", "snapshot", "copy"] as const;
export type WorkspaceStrategy = (typeof WORKSPACE_STRATEGIES)[number];

export interface RuntimeSpec {
  language?: string;
  version?: string;
  /** Container image; when absent gavel picks its agent image for the language. */
  image?: string;
  pull_policy?: "Always" | "IfNotPresent" | "Never";
  /** gavel extension: the program and its arguments, replacing the image's ENTRYPOINT and CMD. */
  command?: string[];
  /** gavel extension: env of the Agent's pods, literal or from a Secret/ConfigMap key. */
  env?: EnvVar[];
  /** gavel extension: every key of a Secret/ConfigMap as env. */
  envFrom?: EnvFromSource[];
}

/** A key of a Secret or ConfigMap in the Agent's namespace. */
export interface KeyRef {
  name: string;
  key: string;
  optional?: boolean;
}

/** One environment variable of an Agent's pods (a Kubernetes EnvVar subset). */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: KeyRef; configMapKeyRef?: KeyRef };
}

/** A Secret or ConfigMap whose keys all become variables (a Kubernetes EnvFromSource subset). */
export interface EnvFromSource {
  prefix?: string;
  secretRef?: { name: string; optional?: boolean };
  configMapRef?: { name: string; optional?: boolean };
}

/** A tool is a bare name or an object with per-tool settings. */
export type ToolEntry = string | ToolObject;

export interface ToolObject {
  name: string;
  /** Commands the tool may run (cmd.run): each an allowed command prefix. */
  allowlist?: string[];
  /** Bypass the inner-loop semantic judge (never the guard). */
  skip_judge?: boolean;
  /** Capability the tool requires (guardian check 3), e.g. "shell:safe". */
  capability?: string;
}

export interface SecuritySpec {
  network?: { mode?: "none" | "allow"; allowlist?: string[] };
  resources?: { timeout?: string; memory?: string; cpu?: string };
  /** Capability scope of the task (guardian check 3); never widens during execution. */
  capabilities?: string[];
}

export type ExecutionMode = "one-shot" | "iterative";

export interface ExecutionSpec {
  mode?: ExecutionMode;
  max_iterations?: number;
  /** Whole-execution deadline in seconds. */
  timeout_seconds?: number;
  /** Deadline of one iteration's worker run, in seconds. */
  iteration_timeout_seconds?: number;
  validation?: ValidatorSpec[] | JudgeValidationSpec;
  tool_validation?: SemanticValidatorSpec[];
}

/** The judge form of `execution.validation`. */
export interface JudgeValidationSpec {
  system?: { must_succeed?: boolean };
  output?: { format?: "json" | "text"; schema?: JsonObject };
}

export type ValidatorType = "exit_code" | "json_schema" | "regex" | "semantic" | "multi_judge";

interface ValidatorBase {
  type: ValidatorType;
  /** Default 1.0 for outer validators, 0.7 for tool_validation entries. */
  min_score?: number;
  /** Default 0.0. */
  min_confidence?: number;
}

export interface ExitCodeValidatorSpec extends ValidatorBase {
  type: "exit_code";
  expected?: number;
}

export interface JsonSchemaValidatorSpec extends ValidatorBase {
  type: "json_schema";
  /** Path of the schema file inside the agent's image. */
  schema_path?: string;
  /** Inline schema, instead of schema_path. */
  schema?: JsonObject;
  target_path: string;
}

export interface RegexValidatorSpec extends ValidatorBase {
  type: "regex";
  pattern: string;
  /** "stdout" (default) or an absolute file path. */
  target?: string;
}

export interface SemanticValidatorSpec extends ValidatorBase {
  type: "semantic";
  judge_agent: string;
  criteria?: string;
  /** Default 300. */
  timeout_seconds?: number;
}

export type ConsensusStrategy = "weighted_average" | "majority" | "unanimous" | "best_of_n";

export interface MultiJudgeValidatorSpec extends ValidatorBase {
  type: "multi_judge";
  judges: string[];
  /** Default weighted_average. */
  consensus?: ConsensusStrategy;
  /** Default 1. */
  min_judges_required?: number;
  min_agreement_confidence?: number;
  criteria?: string;
  /** Per-judge weights by judge name; a judge not named weighs 1. */
  weights?: Record<string, number>;
  /** Multiply each judge's weight by its confidence. */
  confidence_weighting?: boolean;
  /** Default 300. */
  timeout_seconds?: number;
}

export type ValidatorSpec =
  ExitCodeValidatorSpec | JsonSchemaValidatorSpec | RegexValidatorSpec | SemanticValidatorSpec | MultiJudgeValidatorSpec;

export interface VolumeSpec {
  name: string;
  mount_path: string;
  size?: string;
  access_mode?: "ReadWriteOnce" | "ReadWriteMany" | "ReadOnlyMany" | "ReadWriteOncePod";
  storage_class?: string;
}

export interface AgentStatus {
  observedGeneration?: number;
  conditions?: Condition[];
}

// ---------------------------------------------------------------- Execution

export interface Execution {
  apiVersion: typeof API_VERSION;
  kind: "Execution";
  metadata: ObjectMeta;
  spec: ExecutionObjectSpec;
  status?: ExecutionStatus;
}

export interface ExecutionObjectSpec {
  agentRef: { name: string };
  /** Input handed to the agent; validated against its input_schema when it has one. */
  input?: JsonValue;
  /** Set on judge children: what they judge and for whom. */
  parent?: ParentRef;
  timeoutSeconds?: number;
}

export type JudgePurpose = "validation" | "tool_validation";

export interface ParentRef {
  name: string;
  uid: string;
  purpose: JudgePurpose;
  iteration: number;
  /** Index of the validator (validation) or tool_validation entry. */
  validatorIndex: number;
  /** Idempotency key of the judged tool call (tool_validation only). */
  toolCallId?: string;
  /** Depth in the judge tree: a worker's judge is 1, a judge's judge 2; at most 3. */
  depth?: number;
}

export type ExecutionPhase = "Pending" | "Running" | "Refining" | "Succeeded" | "Failed" | "Cancelled" | "TimedOut";

export interface ExecutionStatus {
  phase?: ExecutionPhase;
  iteration?: number;
  /** Lowest validator score of the last finished iteration. */
  score?: number;
  iterations?: IterationRecord[];
  children?: ChildRef[];
  /** A judge's parsed verdict. */
  verdict?: GradientResult;
  /** Why a judge produced no verdict: malformed_output, failed, cancelled, timed_out. */
  rejection?: JudgeRejectionReason;
  /** A finished judge's own output (tails), so a rejection can be debugged. */
  rawOutput?: JudgeRawOutput;
  conditions?: Condition[];
  observedGeneration?: number;
  startTime?: string;
  completionTime?: string;
  message?: string;
  /** Tool calls of every iteration, counted (see iterations[].toolCalls for each). */
  toolCalls?: { proposed: number; allowed: number; blocked: number };
}

/** The bounded output of a finished judge run, kept in its child Execution's status. */
export interface JudgeRawOutput {
  /** The last 16 KiB of stdout. */
  stdout: string;
  /** The last 4 KiB of stderr ("" where the runtime merges it into stdout). */
  stderr: string;
  exitCode: number;
  stdoutBytes: number;
  truncated: boolean;
  /** Why stdout holds stderr too, when the runtime could not keep them apart (a pod not run under gavel-launch). */
  streamsMerged?: string;
}

export interface IterationRecord {
  number: number;
  phase: "Running" | "Validating" | "Passed" | "Refining" | "Failed";
  exitCode?: number;
  startTime?: string;
  completionTime?: string;
  validators?: ValidatorRecord[];
  /** Feedback handed to this iteration from the previous one. */
  feedback?: string;
  /** The tool calls the gate decided in this iteration (cluster: written by the controller). */
  toolCalls?: ToolCallSummary;
}

/** The tool calls of one iteration: counts of all of them, and the most recent ones. */
export interface ToolCallSummary {
  /** Proposed calls (decided or still being decided). */
  proposed: number;
  allowed: number;
  blockedByGuard: number;
  blockedByJudge: number;
  /** The last calls decided (at most 20), in step order. */
  recent?: ToolCallEntry[];
}

/** One decided tool call as the status shows it: names and outcome, never argument values. */
export interface ToolCallEntry {
  step: number;
  tool: string;
  /** The MCP server whose tool it is (`tool` is `<server>.<name>`, ADR 0051); absent for a built-in. */
  server?: string;
  toolCallId: string;
  allowed: boolean;
  blockedBy: "none" | "guard" | "judge";
  /** The guard check that decided (a denial, or a flag). */
  check?: string;
  /** Why it was blocked (rule names, or the judges' reasoning without argument values). */
  reason?: string;
  /** The tool-judge child Executions that judged it. */
  judges?: string[];
}

export interface ValidatorRecord {
  index: number;
  type: ValidatorType;
  passed: boolean;
  score: number;
  confidence: number;
  reasoning: string;
  signals?: Signal[];
  children?: string[];
}

export interface ChildRef {
  name: string;
  purpose: JudgePurpose;
  iteration: number;
  validatorIndex: number;
  judge: string;
  toolCallId?: string;
  phase?: ExecutionPhase;
}

// ---------------------------------------------------------------- GradientResult

export interface Signal {
  category: string;
  score: number;
  message: string;
}

/** A judge's or validator's verdict: a score and a confidence in [0, 1], with reasons. */
export interface GradientResult {
  score: number;
  confidence: number;
  reasoning: string;
  signals?: Signal[];
  metadata?: JsonObject;
}

export type JudgeRejectionReason = "malformed_output" | "failed" | "cancelled" | "timed_out";

// ---------------------------------------------------------------- GuardPolicy

export interface GuardPolicy {
  apiVersion: typeof API_VERSION;
  kind: "GuardPolicy";
  metadata: ObjectMeta;
  spec: GuardPolicySpec;
  status?: GuardPolicyStatus;
}

export interface GuardPolicyStatus {
  observedGeneration?: number;
  /** Entries loaded per list, e.g. {revoked_tools: 3}. */
  counts?: Record<string, number>;
  conditions?: Condition[];
}

/** Name of the cluster-wide default GuardPolicy in the controller's namespace. */
export const DEFAULT_GUARD_POLICY = "default";

/** What a GuardPolicy rule does with a call it would deny (gavel extension, Gatekeeper's names). */
export type EnforcementAction = "deny" | "warn" | "dryrun";

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
] as const;
export type GuardThreatClass = (typeof GUARD_THREAT_CLASSES)[number];
/** The threat-class profiles of a GuardPolicy. */
export const GUARD_PROFILES = ["strict", "standard", "permissive"] as const;
export type GuardProfile = (typeof GUARD_PROFILES)[number];

export interface GuardPolicySpec {
  /** Default for every rule of this policy: deny (default), warn or dryrun. */
  enforcementAction?: EnforcementAction;
  /** What the threat classes do: strict (deny all), standard (default; infrastructure and git_history flag), permissive. */
  profile?: GuardProfile;
  /** Per-class overrides of the profile: deny, or flag (allow and list the finding). */
  threat_classes?: Partial<Record<GuardThreatClass, "deny" | "flag">>;
  revoked_tools?: { tool: string; reason: string; revoked_at?: string; enforcementAction?: EnforcementAction }[];
  /** Registered tools: expected SHA-256 of their code and an Ed25519 signature of it. */
  tool_registry?: { tool: string; sha256: string; signature?: string; enforcementAction?: EnforcementAction }[];
  /** Tool name → capability it requires. */
  required_capabilities?: Record<string, string>;
  /**
   * Tool name → whether its calls skip the tool_validation judges (the operator's skip_judge;
   * overrides the built-in table). An Agent's own skip_judge can only turn judging back on.
   */
  skip_judge?: Record<string, boolean>;
  /** MCP-server capability declarations: trusted servers, per-tool skip_judge and capability (ADR 0051). */
  mcp_servers?: McpServerPolicy[];
  destructive_patterns?: { pattern: string; reason?: string; enforcementAction?: EnforcementAction }[];
  forbidden_paths?: { pattern: string; reason?: string; enforcementAction?: EnforcementAction }[];
  sequence_contracts?: {
    name: string;
    requires_prior: string;
    triggers_for: string;
    within_steps?: number;
    enforcementAction?: EnforcementAction;
  }[];
  adaptive_rules?: {
    name: string;
    match_field: "tool" | "args" | "hash";
    pattern: string;
    action: "deny" | "flag";
    reason: string;
    enabled?: boolean;
    enforcementAction?: EnforcementAction;
  }[];
  /** Base64 (raw 32-byte) or PEM Ed25519 public keys trusted to sign tool registrations. */
  trusted_keys?: { name: string; public_key: string }[];
}

// ---------------------------------------------------------------- JSON

export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}
