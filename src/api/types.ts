// gavel's API types (group 100monkeys.ai, version v1), in one place for the rest of the code.
// Field names are the reference documents' own (snake_case) so that every manifest shown there
// applies verbatim. Each resource is declared once, as its CRD schema (agent-crd.ts,
// execution-crd.ts, guard-policy-crd.ts); the types here are read off those schemas
// (docs/adr/0060-api-types-derived-from-the-crd-schemas.md).

export { API_VERSION, GROUP, ROLE_JUDGE, ROLE_LABEL, VERSION } from "./meta.js";
export type { Condition, JsonObject, JsonValue, ObjectMeta, OwnerReference } from "./meta.js";

export { WORKSPACE_STRATEGIES } from "./agent-crd.js";
export type { Agent, AgentSpec, AgentStatus, SecuritySpec, ToolEntry, ToolObject, VolumeSpec, WorkspaceStrategy } from "./agent-crd.js";
export type { EnvFromSource, EnvVar, KeyRef, RuntimeSpec } from "./agent-runtime.js";
export type {
  ConsensusStrategy,
  ExecutionMode,
  ExecutionSpec,
  ExitCodeValidatorSpec,
  JsonSchemaValidatorSpec,
  JudgeValidationSpec,
  MultiJudgeValidatorSpec,
  RegexValidatorSpec,
  SemanticValidatorSpec,
  ValidatorSpec,
  ValidatorType,
} from "./agent-execution.js";
export type { McpServerPolicy, McpServerSpec, McpToolCapability } from "./mcp-schema.js";

export type {
  ChildRef,
  Execution,
  ExecutionObjectSpec,
  ExecutionPhase,
  ExecutionStatus,
  GradientResult,
  IterationRecord,
  JudgePurpose,
  JudgeRawOutput,
  JudgeRejectionReason,
  ParentRef,
  Signal,
  ToolCallEntry,
  ToolCallSummary,
  ValidatorRecord,
} from "./execution-crd.js";

export { DEFAULT_GUARD_POLICY, GUARD_PROFILES, GUARD_THREAT_CLASSES } from "./guard-policy-crd.js";
export type {
  EnforcementAction,
  GuardPolicy,
  GuardPolicySpec,
  GuardPolicyStatus,
  GuardProfile,
  GuardThreatClass,
} from "./guard-policy-crd.js";

export { APPROVAL_MODES, APPROVAL_ON_TIMEOUT, APPROVAL_PHASES, APPROVAL_TRIGGERS, APPROVE_VERB } from "./tool-approval-crd.js";
export type {
  ApprovalDecision,
  ApprovalMode,
  ApprovalTrigger,
  ApprovalOnTimeout,
  ApprovalPhase,
  ToolApproval,
  ToolApprovalSpec,
  ToolApprovalStatus,
} from "./tool-approval-crd.js";
