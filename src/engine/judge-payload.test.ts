// Tests of judge payloads: canonical fields mapped onto a judge's input_schema, the
// schema-less fallback, and the tool-call judge contract.
import { describe, expect, it } from "vitest";
import type { Agent, JsonObject, SemanticValidatorSpec } from "../api/types.js";
import type { ToolCallProposal } from "../api/protocol.js";
import {
  buildToolCallPayload,
  buildValidationPayload,
  INNER_LOOP_VALIDATION_CONTEXT,
  JudgePayloadError,
  TOOL_CALL_PREVIEW_LIMIT,
  toolCallPreview,
} from "./judge-payload.js";

function judge(name: string, inputSchema?: JsonObject): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, labels: { role: "judge" } },
    spec: inputSchema === undefined ? {} : { input_schema: inputSchema },
  };
}
const str = { type: "string" };
const semantic: SemanticValidatorSpec = { type: "semantic", judge_agent: "j", criteria: "Is it production ready?" };
const base = { validator: semantic, task: "Write a Deployment for nginx", output: "kind: Deployment", workerMounts: ["/workspace"] };

// The reference's own example judge (agent-validation: manifest-quality-judge).
const manifestJudge = judge("manifest-quality-judge", {
  type: "object",
  required: ["generated_manifest", "user_objective", "criteria"],
  properties: { generated_manifest: str, user_objective: str, criteria: str, deployment_result: str, validation_context: str },
});

function thrown(f: () => unknown): JudgePayloadError {
  try {
    f();
  } catch (err) {
    if (err instanceof JudgePayloadError) return err;
    throw err;
  }
  throw new Error("expected a JudgePayloadError");
}

describe("buildValidationPayload", () => {
  it("maps onto the reference's example judge, sending only declared properties", () => {
    const payload = buildValidationPayload({ ...base, judge: manifestJudge });
    expect(payload).toEqual({
      generated_manifest: "kind: Deployment",
      user_objective: "Write a Deployment for nginx",
      criteria: "Is it production ready?",
      validation_context: "manifest-quality-judge",
    });
  });

  it("fills every canonical name a judge declares", () => {
    const all = [
      "output",
      "task",
      "criteria",
      "worker_mounts",
      "validation_context",
      "tool_call_history",
      "deployment_result",
      "generated_workflow",
      "input",
    ];
    const j = judge("all", { type: "object", properties: Object.fromEntries(all.map((k) => [k, {}])) });
    const proposal: ToolCallProposal = {
      namespace: "ns",
      execution: "e",
      iteration: 1,
      step: 2,
      toolCallId: "t",
      tool: "fs.read",
      args: { path: "/a" },
    };
    const payload = buildValidationPayload({
      ...base,
      judge: j,
      toolCallHistory: [
        { ...proposal, allowed: true },
        { tool: "cmd.run", args: { command: "rm -rf /" }, allowed: false, reason: "destructive_pattern" },
      ],
      input: { repo: "x" },
      deploymentResult: "applied",
    });
    expect(payload).toEqual({
      output: "kind: Deployment",
      task: "Write a Deployment for nginx",
      criteria: "Is it production ready?",
      worker_mounts: ["/workspace"],
      validation_context: "all",
      tool_call_history: [
        { tool: "fs.read", args: { path: "/a" }, step: 2, allowed: true },
        { tool: "cmd.run", args: { command: "rm -rf /" }, allowed: false, reason: "destructive_pattern" },
      ],
      deployment_result: "applied",
      generated_workflow: "kind: Deployment",
      input: { repo: "x" },
    });
  });

  it("leaves out optional properties gavel has nothing for, and unknown declared ones", () => {
    const j = judge("j", { type: "object", properties: { output: str, tool_call_history: { type: "array" }, mood: str } });
    expect(buildValidationPayload({ ...base, judge: j })).toEqual({ output: "kind: Deployment" });
  });

  it("names the required properties it cannot fill", () => {
    const j = judge("needy", {
      type: "object",
      required: ["output", "deployment_result", "mood"],
      properties: { output: str, deployment_result: str, mood: str },
    });
    const err = thrown(() => buildValidationPayload({ ...base, judge: j }));
    expect(err.unfillable).toEqual(["deployment_result", "mood"]);
    expect(err.message).toContain("judge needy: spec.input_schema requires deployment_result, mood");
  });

  it("treats missing criteria as unfillable for a judge that requires it", () => {
    const err = thrown(() => buildValidationPayload({ ...base, validator: { type: "semantic", judge_agent: "j" }, judge: manifestJudge }));
    expect(err.unfillable).toEqual(["criteria"]);
  });

  it("reports a declared type the payload does not match, naming the property", () => {
    const j = judge("typed", { type: "object", properties: { worker_mounts: { type: "string" } } });
    expect(() => buildValidationPayload({ ...base, judge: j })).toThrow(/judge typed: .*\/worker_mounts must be string/);
  });

  it("validates against the draft the input_schema names", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { worker_mounts: { type: "array", prefixItems: [{ const: "/workspace" }] } },
    };
    expect(buildValidationPayload({ ...base, judge: judge("d", schema) })).toEqual({ worker_mounts: ["/workspace"] });
    expect(() => buildValidationPayload({ ...base, workerMounts: ["/data"], judge: judge("d", schema) })).toThrow(
      /\/worker_mounts\/0 must be equal to constant/,
    );
  });

  it("reports an input_schema that is not a schema", () => {
    const j = judge("broken", { type: "object", properties: { output: { type: "no-such-type" } } });
    expect(() => buildValidationPayload({ ...base, judge: j })).toThrow(/judge broken: spec.input_schema is not a valid JSON Schema/);
  });

  it("without an input_schema sends the raw content and the criteria as intent", () => {
    expect(buildValidationPayload({ ...base, judge: judge("plain") })).toEqual({
      content: "kind: Deployment",
      intent: "Is it production ready?",
    });
    expect(buildValidationPayload({ ...base, judge: judge("empty", { type: "object" }) })).toEqual({
      content: "kind: Deployment",
      intent: "Is it production ready?",
    });
    expect(buildValidationPayload({ ...base, validator: { type: "multi_judge", judges: ["x"] }, judge: judge("plain") })).toEqual({
      content: "kind: Deployment",
      intent: "",
    });
  });

  it("copies worker_mounts so the caller's array is not shared", () => {
    const mounts = ["/workspace"];
    const j = judge("m", { type: "object", properties: { worker_mounts: { type: "array", items: str } } });
    const payload = buildValidationPayload({ ...base, workerMounts: mounts, judge: j });
    mounts.push("/other");
    expect(payload.worker_mounts).toEqual(["/workspace"]);
  });
});

describe("buildToolCallPayload", () => {
  const proposal: ToolCallProposal = {
    namespace: "ns",
    execution: "e",
    iteration: 1,
    step: 3,
    toolCallId: "tc-3",
    tool: "cmd.run",
    args: { command: "npm test" },
    intent: "run the tests",
  };
  const tool = {
    judge: judge("security-judge"),
    validator: { ...semantic, criteria: "Is the call safe?" },
    task: "Fix the bug",
    proposal,
    availableTools: ["fs.read", "cmd.run"],
    workerMounts: ["/workspace"],
    policyViolations: ["fs.delete"],
  };

  it("without an input_schema sends the reference's eight fields", () => {
    expect(buildToolCallPayload(tool)).toEqual({
      task: "Fix the bug",
      proposed_tool_call: { tool: "cmd.run", args: { command: "npm test" }, intent: "run the tests" },
      available_tools: ["fs.read", "cmd.run"],
      worker_mounts: ["/workspace"],
      output: '{"tool":"cmd.run","args":{"command":"npm test"}}',
      criteria: "Is the call safe?",
      validation_context: INNER_LOOP_VALIDATION_CONTEXT,
      policy_violations: ["fs.delete"],
    });
    expect(INNER_LOOP_VALIDATION_CONTEXT).toBe("semantic_judge_pre_execution_inner_loop");
  });

  it("hands an MCP call's listing to the judge in proposed_tool_call.mcp (ADR 0051)", () => {
    const mcp = {
      server: "files",
      tool: "write_file",
      description: "Write a file",
      inputSchema: { type: "object" },
      annotations: { destructiveHint: true },
      pinned: true,
    };
    const p = buildToolCallPayload({ ...tool, proposal: { ...proposal, tool: "files.write_file", args: { path: "/workspace/a" }, mcp } });
    expect(p.proposed_tool_call).toEqual({
      tool: "files.write_file",
      args: { path: "/workspace/a" },
      intent: "run the tests",
      mcp: {
        server: "files",
        tool: "write_file",
        description: "Write a file",
        input_schema: { type: "object" },
        annotations: { destructiveHint: true },
        pinned: true,
      },
    });
  });

  it("with an input_schema sends the declared fields only, aliases included", () => {
    const j = judge("j", {
      type: "object",
      required: ["proposed_tool_call", "user_objective"],
      properties: {
        proposed_tool_call: { type: "object" },
        user_objective: str,
        validation_context: str,
        policy_violations: { type: "array" },
      },
    });
    expect(buildToolCallPayload({ ...tool, judge: j, policyViolations: [] })).toEqual({
      proposed_tool_call: { tool: "cmd.run", args: { command: "npm test" }, intent: "run the tests" },
      user_objective: "Fix the bug",
      validation_context: "semantic_judge_pre_execution_inner_loop",
      policy_violations: [],
    });
  });

  it("names a required task it cannot fill when the worker has none", () => {
    const j = judge("j", { type: "object", required: ["task"], properties: { task: str } });
    const { task: _task, ...noTask } = tool;
    expect(thrown(() => buildToolCallPayload({ ...noTask, judge: j })).unfillable).toEqual(["task"]);
  });

  it("caps the serialized preview of a huge call with a marker", () => {
    const big = toolCallPreview({ tool: "fs.write", args: { content: "x".repeat(TOOL_CALL_PREVIEW_LIMIT * 2) } });
    expect(big.length).toBeLessThan(TOOL_CALL_PREVIEW_LIMIT + 100);
    expect(big).toMatch(/…\[truncated \d+ chars\]$/);
  });
});
