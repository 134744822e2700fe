// Drift guard between src/api/types.ts and the CRD schemas: each key list below is compiled
// against a TS type (a missing or extra key does not typecheck) and compared with the schema.
import { describe, expect, it } from "vitest";
import { agentCrd, executionCrd, guardPolicyCrd, TOOL_FIELDS, type CrdDocument } from "./crds.js";
import type { SchemaNode } from "./schema-dsl.js";
import type * as T from "./types.js";
import { CONSENSUS_MODES, VALIDATOR_FIELDS, VALIDATOR_TYPES } from "./validation-rules.js";

/** Exactly the keys of T (all required here so that none is forgotten). */
function keysOf<O>(k: { [P in keyof Required<O>]: true }): string[] {
  return Object.keys(k).sort();
}
/** Exactly the members of a string union. */
function membersOf<U extends string>(k: Record<U, true>): string[] {
  return Object.keys(k).sort();
}
type AllKeys<U> = U extends unknown ? keyof U : never;
type RequiredKeys<O> = { [K in keyof O]-?: object extends Pick<O, K> ? never : K }[keyof O];
/** Exactly the non-optional keys of O. */
function requiredOf<O>(k: { [P in RequiredKeys<O>]: true }): string[] {
  return Object.keys(k).sort();
}
type Item<A> = A extends readonly (infer I)[] ? I : never;

function root(crd: CrdDocument): SchemaNode {
  const v = crd.spec.versions[0];
  if (v === undefined) throw new Error("no version");
  return v.schema.openAPIV3Schema;
}
/** The node at a dotted path; "[]" steps into array items. */
function at(node: SchemaNode, path: string): SchemaNode {
  let cur: SchemaNode | undefined = node;
  for (const step of path.split(".")) {
    cur = step === "[]" ? cur?.items : cur?.properties?.[step];
    if (cur === undefined) throw new Error(`no schema node at ${path}`);
  }
  return cur;
}
const props = (n: SchemaNode) => Object.keys(n.properties ?? {}).sort();
const agent = root(agentCrd);
const execution = root(executionCrd);
const guard = root(guardPolicyCrd);

describe("types.ts matches the CRD schemas", () => {
  it.each([
    [
      "Agent spec",
      props(at(agent, "spec")),
      keysOf<T.AgentSpec>({
        runtime: true,
        task: true,
        input_schema: true,
        tools: true,
        security: true,
        execution: true,
        volumes: true,
        workspace_strategy: true,
        mcp_servers: true,
      }),
    ],
    [
      "Agent MCP server",
      props(at(agent, "spec.mcp_servers.[]")),
      keysOf<T.McpServerSpec>({
        name: true,
        command: true,
        url: true,
        bearer_token_secret: true,
        tools: true,
        timeout_seconds: true,
        startup_timeout_seconds: true,
      }),
    ],
    [
      "Agent runtime",
      props(at(agent, "spec.runtime")),
      keysOf<T.RuntimeSpec>({ language: true, version: true, image: true, pull_policy: true, command: true, env: true, envFrom: true }),
    ],
    ["Agent env entry", props(at(agent, "spec.runtime.env.[]")), keysOf<T.EnvVar>({ name: true, value: true, valueFrom: true })],
    [
      "Agent env source",
      props(at(agent, "spec.runtime.env.[].valueFrom")),
      keysOf<NonNullable<T.EnvVar["valueFrom"]>>({ secretKeyRef: true, configMapKeyRef: true }),
    ],
    [
      "Agent env key ref",
      props(at(agent, "spec.runtime.env.[].valueFrom.secretKeyRef")),
      keysOf<T.KeyRef>({ name: true, key: true, optional: true }),
    ],
    [
      "Agent envFrom entry",
      props(at(agent, "spec.runtime.envFrom.[]")),
      keysOf<T.EnvFromSource>({ prefix: true, secretRef: true, configMapRef: true }),
    ],
    ["Agent task", props(at(agent, "spec.task")), keysOf<NonNullable<T.AgentSpec["task"]>>({ instruction: true })],
    ["Agent security", props(at(agent, "spec.security")), keysOf<T.SecuritySpec>({ network: true, resources: true, capabilities: true })],
    [
      "Agent network",
      props(at(agent, "spec.security.network")),
      keysOf<NonNullable<T.SecuritySpec["network"]>>({ mode: true, allowlist: true }),
    ],
    [
      "Agent resources",
      props(at(agent, "spec.security.resources")),
      keysOf<NonNullable<T.SecuritySpec["resources"]>>({ timeout: true, memory: true, cpu: true }),
    ],
    [
      "Agent execution",
      props(at(agent, "spec.execution")),
      keysOf<T.ExecutionSpec>({
        mode: true,
        max_iterations: true,
        timeout_seconds: true,
        iteration_timeout_seconds: true,
        validation: true,
        tool_validation: true,
      }),
    ],
    [
      "tool_validation entry",
      props(at(agent, "spec.execution.tool_validation.[]")),
      keysOf<T.SemanticValidatorSpec>({
        type: true,
        judge_agent: true,
        criteria: true,
        min_score: true,
        min_confidence: true,
        timeout_seconds: true,
      }),
    ],
    [
      "validator entry (CEL field list)",
      [...VALIDATOR_FIELDS].sort(),
      keysOf<{ [K in AllKeys<T.ValidatorSpec>]: unknown }>({
        type: true,
        min_score: true,
        min_confidence: true,
        judge_agent: true,
        judges: true,
        consensus: true,
        min_judges_required: true,
        min_agreement_confidence: true,
        criteria: true,
        expected: true,
        schema_path: true,
        schema: true,
        target_path: true,
        pattern: true,
        target: true,
        weights: true,
        confidence_weighting: true,
        timeout_seconds: true,
      }),
    ],
    [
      "tools entry (CEL field list)",
      [...TOOL_FIELDS].sort(),
      keysOf<T.ToolObject>({ name: true, allowlist: true, skip_judge: true, capability: true }),
    ],
    [
      "volume",
      props(at(agent, "spec.volumes.[]")),
      keysOf<T.VolumeSpec>({ name: true, mount_path: true, size: true, access_mode: true, storage_class: true }),
    ],
    ["Agent status", props(at(agent, "status")), keysOf<T.AgentStatus>({ observedGeneration: true, conditions: true })],
    [
      "condition",
      props(at(agent, "status.conditions.[]")),
      keysOf<T.Condition>({ type: true, status: true, reason: true, message: true, lastTransitionTime: true, observedGeneration: true }),
    ],
    [
      "Execution spec",
      props(at(execution, "spec")),
      keysOf<T.ExecutionObjectSpec>({ agentRef: true, input: true, parent: true, timeoutSeconds: true }),
    ],
    [
      "Execution parent",
      props(at(execution, "spec.parent")),
      keysOf<T.ParentRef>({ name: true, uid: true, purpose: true, iteration: true, validatorIndex: true, toolCallId: true, depth: true }),
    ],
    [
      "Execution status",
      props(at(execution, "status")),
      keysOf<T.ExecutionStatus>({
        phase: true,
        iteration: true,
        score: true,
        iterations: true,
        children: true,
        verdict: true,
        rejection: true,
        rawOutput: true,
        conditions: true,
        observedGeneration: true,
        startTime: true,
        completionTime: true,
        message: true,
        toolCalls: true,
      }),
    ],
    [
      "tool-call totals",
      props(at(execution, "status.toolCalls")),
      keysOf<NonNullable<T.ExecutionStatus["toolCalls"]>>({ proposed: true, allowed: true, blocked: true }),
    ],
    [
      "iteration record",
      props(at(execution, "status.iterations.[]")),
      keysOf<T.IterationRecord>({
        number: true,
        phase: true,
        exitCode: true,
        startTime: true,
        completionTime: true,
        validators: true,
        feedback: true,
        toolCalls: true,
      }),
    ],
    [
      "iteration tool calls",
      props(at(execution, "status.iterations.[].toolCalls")),
      keysOf<T.ToolCallSummary>({ proposed: true, allowed: true, blockedByGuard: true, blockedByJudge: true, recent: true }),
    ],
    [
      "tool-call entry",
      props(at(execution, "status.iterations.[].toolCalls.recent.[]")),
      keysOf<T.ToolCallEntry>({
        step: true,
        tool: true,
        server: true,
        toolCallId: true,
        allowed: true,
        blockedBy: true,
        check: true,
        reason: true,
        judges: true,
      }),
    ],
    [
      "validator record",
      props(at(execution, "status.iterations.[].validators.[]")),
      keysOf<T.ValidatorRecord>({
        index: true,
        type: true,
        passed: true,
        score: true,
        confidence: true,
        reasoning: true,
        signals: true,
        children: true,
      }),
    ],
    [
      "child ref",
      props(at(execution, "status.children.[]")),
      keysOf<T.ChildRef>({ name: true, purpose: true, iteration: true, validatorIndex: true, judge: true, toolCallId: true, phase: true }),
    ],
    [
      "verdict",
      props(at(execution, "status.verdict")),
      keysOf<T.GradientResult>({ score: true, confidence: true, reasoning: true, signals: true, metadata: true }),
    ],
    ["signal", props(at(execution, "status.verdict.signals.[]")), keysOf<T.Signal>({ category: true, score: true, message: true })],
    [
      "GuardPolicy spec",
      props(at(guard, "spec")),
      keysOf<T.GuardPolicySpec>({
        enforcementAction: true,
        profile: true,
        threat_classes: true,
        revoked_tools: true,
        tool_registry: true,
        required_capabilities: true,
        skip_judge: true,
        mcp_servers: true,
        destructive_patterns: true,
        forbidden_paths: true,
        sequence_contracts: true,
        adaptive_rules: true,
        trusted_keys: true,
      }),
    ],
    [
      "MCP server declaration",
      props(at(guard, "spec.mcp_servers.[]")),
      keysOf<T.McpServerPolicy>({ server: true, trusted: true, capabilities: true }),
    ],
    [
      "revoked tool",
      props(at(guard, "spec.revoked_tools.[]")),
      keysOf<Item<T.GuardPolicySpec["revoked_tools"]>>({ tool: true, reason: true, revoked_at: true, enforcementAction: true }),
    ],
    [
      "registered tool",
      props(at(guard, "spec.tool_registry.[]")),
      keysOf<Item<T.GuardPolicySpec["tool_registry"]>>({ tool: true, sha256: true, signature: true, enforcementAction: true }),
    ],
    [
      "destructive pattern",
      props(at(guard, "spec.destructive_patterns.[]")),
      keysOf<Item<T.GuardPolicySpec["destructive_patterns"]>>({ pattern: true, reason: true, enforcementAction: true }),
    ],
    [
      "forbidden path",
      props(at(guard, "spec.forbidden_paths.[]")),
      keysOf<Item<T.GuardPolicySpec["forbidden_paths"]>>({ pattern: true, reason: true, enforcementAction: true }),
    ],
    [
      "sequence contract",
      props(at(guard, "spec.sequence_contracts.[]")),
      keysOf<Item<T.GuardPolicySpec["sequence_contracts"]>>({
        name: true,
        requires_prior: true,
        triggers_for: true,
        within_steps: true,
        enforcementAction: true,
      }),
    ],
    [
      "adaptive rule",
      props(at(guard, "spec.adaptive_rules.[]")),
      keysOf<Item<T.GuardPolicySpec["adaptive_rules"]>>({
        name: true,
        match_field: true,
        pattern: true,
        action: true,
        reason: true,
        enabled: true,
        enforcementAction: true,
      }),
    ],
    [
      "trusted key",
      props(at(guard, "spec.trusted_keys.[]")),
      keysOf<Item<T.GuardPolicySpec["trusted_keys"]>>({ name: true, public_key: true }),
    ],
    [
      "GuardPolicy status",
      props(at(guard, "status")),
      keysOf<T.GuardPolicyStatus>({ observedGeneration: true, counts: true, conditions: true }),
    ],
  ])("%s", (_name, schemaKeys, typeKeys) => {
    expect(schemaKeys).toEqual(typeKeys);
  });

  it.each([
    [
      "validator types",
      [...VALIDATOR_TYPES].sort(),
      membersOf<T.ValidatorType>({ exit_code: true, json_schema: true, regex: true, semantic: true, multi_judge: true }),
    ],
    [
      "consensus",
      [...CONSENSUS_MODES].sort(),
      membersOf<T.ConsensusStrategy>({ weighted_average: true, majority: true, unanimous: true, best_of_n: true }),
    ],
    [
      "execution mode",
      (at(agent, "spec.execution.mode").enum ?? []).map(String).sort(),
      membersOf<T.ExecutionMode>({ "one-shot": true, iterative: true }),
    ],
    [
      "phase",
      (at(execution, "status.phase").enum ?? []).map(String).sort(),
      membersOf<T.ExecutionPhase>({
        Pending: true,
        Running: true,
        Refining: true,
        Succeeded: true,
        Failed: true,
        Cancelled: true,
        TimedOut: true,
      }),
    ],
    [
      "purpose",
      (at(execution, "spec.parent.purpose").enum ?? []).map(String).sort(),
      membersOf<T.JudgePurpose>({ validation: true, tool_validation: true }),
    ],
    [
      "rejection",
      (at(execution, "status.rejection").enum ?? []).map(String).sort(),
      membersOf<T.JudgeRejectionReason>({ malformed_output: true, failed: true, cancelled: true, timed_out: true }),
    ],
    [
      "match_field",
      (at(guard, "spec.adaptive_rules.[].match_field").enum ?? []).map(String).sort(),
      membersOf<NonNullable<Item<T.GuardPolicySpec["adaptive_rules"]>>["match_field"]>({ tool: true, args: true, hash: true }),
    ],
    [
      "volume access mode",
      (at(agent, "spec.volumes.[].access_mode").enum ?? []).map(String).sort(),
      membersOf<NonNullable<T.VolumeSpec["access_mode"]>>({
        ReadWriteOnce: true,
        ReadWriteMany: true,
        ReadOnlyMany: true,
        ReadWriteOncePod: true,
      }),
    ],
    [
      "network mode",
      (at(agent, "spec.security.network.mode").enum ?? []).map(String).sort(),
      membersOf<NonNullable<NonNullable<T.SecuritySpec["network"]>["mode"]>>({ none: true, allow: true }),
    ],
  ])("enum %s", (_name, schemaValues, typeValues) => {
    expect(schemaValues).toEqual(typeValues);
  });

  // The server must never refuse what the types allow: every field the schema requires is
  // required in the type too (the type may require more, e.g. a Condition's reason).
  it.each([
    [
      "tool_validation entry",
      at(agent, "spec.execution.tool_validation.[]"),
      requiredOf<T.SemanticValidatorSpec>({ type: true, judge_agent: true }),
    ],
    ["volume", at(agent, "spec.volumes.[]"), requiredOf<T.VolumeSpec>({ name: true, mount_path: true })],
    [
      "condition",
      at(agent, "status.conditions.[]"),
      requiredOf<T.Condition>({ type: true, status: true, reason: true, message: true, lastTransitionTime: true }),
    ],
    ["Execution spec", at(execution, "spec"), requiredOf<T.ExecutionObjectSpec>({ agentRef: true })],
    [
      "Execution parent",
      at(execution, "spec.parent"),
      requiredOf<T.ParentRef>({ name: true, uid: true, purpose: true, iteration: true, validatorIndex: true }),
    ],
    ["iteration record", at(execution, "status.iterations.[]"), requiredOf<T.IterationRecord>({ number: true, phase: true })],
    [
      "validator record",
      at(execution, "status.iterations.[].validators.[]"),
      requiredOf<T.ValidatorRecord>({ index: true, type: true, passed: true, score: true, confidence: true, reasoning: true }),
    ],
    [
      "child ref",
      at(execution, "status.children.[]"),
      requiredOf<T.ChildRef>({ name: true, purpose: true, iteration: true, validatorIndex: true, judge: true }),
    ],
    ["verdict", at(execution, "status.verdict"), requiredOf<T.GradientResult>({ score: true, confidence: true, reasoning: true })],
    ["signal", at(execution, "status.verdict.signals.[]"), requiredOf<T.Signal>({ category: true, score: true, message: true })],
    [
      "revoked tool",
      at(guard, "spec.revoked_tools.[]"),
      requiredOf<Item<T.GuardPolicySpec["revoked_tools"]>>({ tool: true, reason: true }),
    ],
    [
      "registered tool",
      at(guard, "spec.tool_registry.[]"),
      requiredOf<Item<T.GuardPolicySpec["tool_registry"]>>({ tool: true, sha256: true }),
    ],
    [
      "sequence contract",
      at(guard, "spec.sequence_contracts.[]"),
      requiredOf<Item<T.GuardPolicySpec["sequence_contracts"]>>({ name: true, requires_prior: true, triggers_for: true }),
    ],
    [
      "adaptive rule",
      at(guard, "spec.adaptive_rules.[]"),
      requiredOf<Item<T.GuardPolicySpec["adaptive_rules"]>>({ name: true, match_field: true, pattern: true, action: true, reason: true }),
    ],
    [
      "trusted key",
      at(guard, "spec.trusted_keys.[]"),
      requiredOf<Item<T.GuardPolicySpec["trusted_keys"]>>({ name: true, public_key: true }),
    ],
  ])("required fields of %s are required in the type", (_name, node, typeRequired) => {
    for (const field of node.required ?? []) expect(typeRequired).toContain(field);
  });
});
