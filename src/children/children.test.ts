// What a driver creates for an engine action, made once for both drivers: worker and judge
// workloads, validation and tool_validation child Executions, quantities and default images.
import { describe, expect, it } from "vitest";
import type { ToolCallProposal } from "../api/protocol.js";
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";
import { gavelVersion } from "../version.js";
import type { WorkloadMount } from "../runtime/workload.js";
import { SPAWN_ERROR_ANNOTATION, toolJudgeChild, validationJudgeChild } from "./child-executions.js";
import { AGENT_ENTRYPOINT, defaultImages } from "./images.js";
import { parseMemoryBytes, parseNanoCpus, resourcesOf } from "./quantities.js";
import { ENV_PAYLOAD_LIMIT, judgeWorkload, MAX_PAYLOAD_BYTES, labelValue, ownerMarks, ownerOf, workerWorkload } from "./workloads.js";

const parent: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "uid-1" },
  spec: { agentRef: { name: "w" }, input: { n: 1 } },
};
const worker: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "w" },
  spec: {
    runtime: { image: "gavel/example:dev", pull_policy: "Never" },
    task: { instruction: "do it" },
    tools: ["fs.write", { name: "cmd.run", allowlist: ["ls"] }],
    security: { network: { mode: "none" }, resources: { memory: "256Mi", cpu: "500m" } },
    volumes: [{ name: "workspace", mount_path: "/workspace" }],
  },
};
/** The run a validation judge is a child of: its Execution, the marks it puts on what it owns, its Agent. */
const ofRun = { parent, owner: ownerMarks(parent), worker };
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "rule-judge", labels: { role: "judge" } },
  spec: { runtime: { image: "gavel/rule-judge:dev" }, security: { resources: { memory: "64Mi", timeout: "40s" } } },
};
const mounts: WorkloadMount[] = [{ name: "workspace", source: "demo-workspace", mountPath: "/workspace", readOnly: false }];
const proposal: ToolCallProposal = {
  namespace: "team",
  execution: "demo",
  iteration: 2,
  step: 5,
  toolCallId: "tc-9",
  tool: "fs.write",
  args: { path: "/workspace/a", content: "x" },
};

describe("worker workload", () => {
  it("carries the worker runtime's env contract, the workspace read-write, the agent's network, resources and pull policy", () => {
    const spec = workerWorkload(
      parent,
      worker,
      { name: "demo-i2", iteration: 2, feedback: "fix it", timeoutSeconds: 60 },
      mounts.map((m) => ({ ...m, readOnly: true })),
      { natsUrl: "nats://gate:4222" },
    );
    expect(spec).toMatchObject({
      name: "demo-i2",
      image: "gavel/example:dev",
      network: "none",
      pullPolicy: "Never",
      timeoutSeconds: 60,
      resources: { memoryBytes: 256 * 2 ** 20, nanoCpus: 5e8 },
    });
    expect(spec.mounts).toEqual(mounts);
    expect(spec.env).toMatchObject({
      GAVEL_NAMESPACE: "team",
      GAVEL_EXECUTION: "demo",
      GAVEL_ITERATION: "2",
      GAVEL_TASK: "do it",
      GAVEL_INPUT: '{"n":1}',
      GAVEL_FEEDBACK: "fix it",
      GAVEL_WORKSPACE: "/workspace",
      GAVEL_NATS_URL: "nats://gate:4222",
      GAVEL_MOUNTS: JSON.stringify([{ path: "/workspace", readOnly: false }]),
      // The run's deadline: the worker stops waiting for an unreachable gate before it.
      GAVEL_ITERATION_TIMEOUT_SECONDS: "60",
    });
    const deadline = Date.parse(spec.env?.GAVEL_DEADLINE ?? "");
    expect(deadline - Date.now()).toBeGreaterThan(55_000);
    expect(deadline - Date.now()).toBeLessThanOrEqual(60_000);
    expect(JSON.parse(spec.env?.GAVEL_TOOLS ?? "")).toEqual(worker.spec.tools);
    expect(spec.labels).toEqual({ "gavel.dev/execution": "demo", "gavel.dev/role": "worker", "gavel.dev/iteration": "2" });
    expect(spec.stdin).toBeUndefined();
  });

  it("defaults: the worker runtime image of this version, network allowed, feedback and input always set; extra env wins", () => {
    const bare: Agent = { ...worker, spec: {} };
    const spec = workerWorkload(
      { ...parent, spec: { agentRef: { name: "w" } } },
      bare,
      { name: "demo-i1", iteration: 1, timeoutSeconds: 5 },
      [],
      { env: { GAVEL_TASK: "override" } },
    );
    expect(spec.image).toBe(`gavel/agent:${gavelVersion()}`);
    expect(spec.image).toBe(defaultImages().worker);
    expect(defaultImages().worker).not.toMatch(/:dev$/);
    expect(spec).toMatchObject({ network: "allow", resources: {} });
    expect(spec.pullPolicy).toBeUndefined();
    expect(spec.env).toMatchObject({
      GAVEL_INPUT: "null",
      GAVEL_FEEDBACK: "",
      GAVEL_WORKSPACE: "",
      GAVEL_NATS_URL: "",
      GAVEL_TASK: "override",
    });
    expect(workerWorkload(parent, bare, { name: "x", iteration: 1, timeoutSeconds: 5 }, [], { defaultImage: "mine:1" }).image).toBe(
      "mine:1",
    );
  });

  it("a url MCP server's bearer token: GAVEL_MCP_TOKEN_<index> from its Secret key, after the Agent's own env; the token is never a value", () => {
    const remote: Agent = {
      ...worker,
      spec: {
        runtime: { env: [{ name: "MINE", value: "x" }] },
        mcp_servers: [
          { name: "files", command: ["mcp-server-filesystem", "/workspace"] },
          { name: "remote", url: "https://mcp.example.test/mcp", bearer_token_secret: { name: "remote-mcp", key: "token" } },
          { name: "open", url: "https://open.example.test/mcp" },
        ],
      },
    };
    const spec = workerWorkload(parent, remote, { name: "demo-i1", iteration: 1, timeoutSeconds: 5 }, []);
    expect(spec.agentEnv?.env).toEqual([
      { name: "MINE", value: "x" },
      { name: "GAVEL_MCP_TOKEN_1", valueFrom: { secretKeyRef: { name: "remote-mcp", key: "token" } } },
    ]);
    expect(JSON.parse(spec.env?.GAVEL_MCP_SERVERS ?? "[]")).toEqual(remote.spec.mcp_servers);
  });
});

describe("judge workload", () => {
  const request = {
    name: "demo-i1-v0-rule-judge",
    judge: "rule-judge",
    iteration: 1,
    validatorIndex: 0,
    validator: { type: "semantic" as const, judge_agent: "rule-judge", criteria: "c" },
    depth: 1,
    timeoutSeconds: 30,
    network: "none" as const,
  };
  const child = validationJudgeChild({ ...ofRun, judge, request, output: "worker said", workerMounts: mounts }).execution;

  it("gets the child's payload in GAVEL_INPUT (and stdin where the driver writes it), the worker's mounts read-only, no network", () => {
    const withStdin = judgeWorkload(child, judge, mounts, { stdin: true });
    if (typeof withStdin === "string") throw new Error(withStdin);
    const input = JSON.stringify(child.spec.input);
    expect(withStdin).toMatchObject({
      name: "demo-i1-v0-rule-judge",
      image: "gavel/rule-judge:dev",
      stdin: input,
      network: "none",
      timeoutSeconds: 30,
      resources: { memoryBytes: 64 * 2 ** 20 },
    });
    expect(withStdin.env).toEqual({
      GAVEL_ROLE: "judge",
      GAVEL_INPUT: input,
      GAVEL_NAMESPACE: "team",
      GAVEL_EXECUTION: "demo-i1-v0-rule-judge",
      GAVEL_ITERATION: "1",
      GAVEL_TASK: "",
      GAVEL_TOOLS: "[]",
      GAVEL_MOUNTS: JSON.stringify([{ path: "/workspace", readOnly: true }]),
    });
    expect(withStdin.mounts).toEqual([{ ...mounts[0], readOnly: true }]);
    expect(withStdin.labels).toEqual({
      "gavel.dev/execution": "demo-i1-v0-rule-judge",
      "gavel.dev/role": "judge",
      "gavel.dev/parent": "demo",
    });
    const envOnly = judgeWorkload(child, { ...judge, spec: { ...judge.spec, security: { network: { mode: "allow" } } } }, mounts, {
      stdin: false,
    });
    if (typeof envOnly === "string") throw new Error(envOnly);
    expect(envOnly.stdin).toBeUndefined();
    expect(envOnly.network).toBe("allow");
  });

  it("a payload over the env limit goes to stdin only, or is refused by name where neither env nor parts carry it", () => {
    const big: Execution = { ...child, spec: { ...child.spec, input: { output: "x".repeat(ENV_PAYLOAD_LIMIT) } } };
    const local = judgeWorkload(big, judge, [], { stdin: true });
    if (typeof local === "string") throw new Error(local);
    expect(local.env?.GAVEL_INPUT).toBeUndefined();
    expect(local.env?.GAVEL_EXECUTION).toBe("demo-i1-v0-rule-judge");
    expect(local.stdin?.length).toBeGreaterThan(ENV_PAYLOAD_LIMIT);
    expect(judgeWorkload(big, judge, [], { stdin: false })).toMatch(
      /^spec\.input: .* at most 98304 in env GAVEL_INPUT, and the child names no parts/,
    );
    const huge: Execution = { ...child, spec: { ...child.spec, input: { output: "x".repeat(MAX_PAYLOAD_BYTES) } } };
    expect(judgeWorkload(huge, judge, [], { stdin: true })).toMatch(
      /^spec\.input: the judge payload is \d+ bytes; the limit is 8388608 \(8 MiB\)/,
    );
    expect(judgeWorkload(child, { ...judge, spec: {} }, [], { stdin: true })).toMatch(/rule-judge names no image and no language runtime/);
  });

  it("its own manifest's task and tools reach it (GAVEL_TASK, GAVEL_TOOLS); a language runtime picks the image and adds its env", () => {
    const reference: Agent = {
      ...judge,
      spec: {
        runtime: { language: "python", version: "3.11" },
        task: { instruction: "You are a code quality judge." },
        tools: [{ name: "cmd.run", allowlist: ["pytest"] }],
      },
    };
    const runtimes = [
      { language: "python", version: "3.11", image: "registry.example/py:3.11", env: { GAVEL_LLM_MODEL: "m", GAVEL_TASK: "not this" } },
    ];
    const w = judgeWorkload(child, reference, mounts, { stdin: false, runtimes });
    if (typeof w === "string") throw new Error(w);
    expect(w.image).toBe("registry.example/py:3.11");
    expect(w.env).toMatchObject({ GAVEL_ROLE: "judge", GAVEL_TASK: "You are a code quality judge.", GAVEL_LLM_MODEL: "m" });
    expect(JSON.parse(w.env?.GAVEL_TOOLS ?? "")).toEqual([{ name: "cmd.run", allowlist: ["pytest"] }]);
    const builtin = judgeWorkload(child, reference, mounts, { stdin: false });
    expect(typeof builtin !== "string" && builtin.image).toBe(`gavel/runtime-python-3.11:${gavelVersion()}`);
    const unknown = { ...reference, spec: { ...reference.spec, runtime: { language: "python", version: "3.12" } } };
    expect(judgeWorkload(child, unknown, mounts, { stdin: false })).toMatch(
      /spec\.runtime\.version: no runtime for python 3\.12 in the runtime table \(known: python 3\.11\)/,
    );
  });

  it("knows the program of gavel's images (the launcher wraps it on Kubernetes); an Agent's runtime.command replaces any image's", () => {
    const py: Agent = { ...worker, spec: { ...worker.spec, runtime: { language: "python", version: "3.11" } } };
    const run = { name: "demo-i1", iteration: 1, timeoutSeconds: 5 };
    expect(workerWorkload(parent, py, run, [])).toMatchObject({ entrypoint: AGENT_ENTRYPOINT });
    expect(workerWorkload(parent, { ...worker, spec: {} }, run, [])).toMatchObject({ entrypoint: AGENT_ENTRYPOINT });
    const own = workerWorkload(parent, worker, run, []);
    expect(own.entrypoint).toBeUndefined();
    expect(own.command).toBeUndefined();
    const declared: Agent = {
      ...worker,
      spec: { ...worker.spec, runtime: { image: "python:3.11-slim", command: ["python3", "-c", "print(1)"] } },
    };
    expect(workerWorkload(parent, declared, run, [])).toMatchObject({ command: ["python3", "-c", "print(1)"] });
    const j = judgeWorkload(child, { ...judge, spec: { ...judge.spec, runtime: { image: "j:1", command: ["/judge"] } } }, [], {
      stdin: false,
    });
    expect(typeof j !== "string" && j.command).toEqual(["/judge"]);
  });

  it("a worker's language picks its image; an unknown one is a terminal error naming the field", () => {
    const py: Agent = { ...worker, spec: { ...worker.spec, runtime: { language: "Python", version: "3.11" } } };
    expect(workerWorkload(parent, py, { name: "demo-i1", iteration: 1, timeoutSeconds: 5 }, []).image).toBe(
      `gavel/runtime-python-3.11:${gavelVersion()}`,
    );
    const rust: Agent = { ...worker, spec: { ...worker.spec, runtime: { language: "rust" } } };
    expect(() => workerWorkload(parent, rust, { name: "demo-i1", iteration: 1, timeoutSeconds: 5 }, [])).toThrow(
      /spec\.runtime\.language: no runtime for "rust"/,
    );
  });

  it("without spec.timeoutSeconds, runs as long as its judge's own deadline allows, capped at 300 s", () => {
    const { timeoutSeconds: _, ...spec } = child.spec;
    const w = judgeWorkload({ ...child, spec }, judge, [], { stdin: false });
    expect(typeof w !== "string" && w.timeoutSeconds).toBe(40);
  });
});

describe("child Executions", () => {
  it("a validation judge child names its parent (purpose, iteration, validator, depth), is controlled by it and holds the payload", () => {
    const request = {
      name: "demo-i3-v1-rule-judge",
      judge: "rule-judge",
      iteration: 3,
      validatorIndex: 1,
      validator: { type: "semantic" as const, judge_agent: "rule-judge" },
      depth: 1,
      timeoutSeconds: 45,
      network: "none" as const,
    };
    const { execution, problem } = validationJudgeChild({ ...ofRun, judge, request, output: "out", workerMounts: mounts });
    expect(problem).toBeUndefined();
    expect(execution.metadata).toMatchObject({
      name: "demo-i3-v1-rule-judge",
      namespace: "team",
      labels: { "gavel.dev/parent": "demo", "gavel.dev/role": "judge" },
    });
    expect(execution.metadata.ownerReferences).toEqual([ownerOf(parent)]);
    expect(ownerOf(parent)).toEqual({
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      name: "demo",
      uid: "uid-1",
      controller: true,
      blockOwnerDeletion: true,
    });
    expect(execution.spec).toEqual({
      agentRef: { name: "rule-judge" },
      input: { content: "out", intent: "" },
      parent: { name: "demo", uid: "uid-1", purpose: "validation", iteration: 3, validatorIndex: 1, depth: 1 },
      timeoutSeconds: 45,
    });
    expect(execution.status).toBeUndefined();
  });

  it("the judged iteration's decided tool calls are its tool_call_history (names, steps, outcomes; no argument values)", () => {
    const historian: Agent = {
      ...judge,
      spec: {
        ...judge.spec,
        input_schema: { type: "object", properties: { output: { type: "string" }, tool_call_history: { type: "array" } } },
      },
    };
    const request = {
      name: "demo-i2-v0-rule-judge",
      judge: "rule-judge",
      iteration: 2,
      validatorIndex: 0,
      validator: { type: "semantic" as const, judge_agent: "rule-judge" },
      depth: 1,
      timeoutSeconds: 45,
      network: "none" as const,
    };
    const status: ExecutionStatus = {
      phase: "Running",
      iterations: [
        {
          number: 1,
          phase: "Refining",
          toolCalls: {
            proposed: 1,
            allowed: 1,
            blockedByGuard: 0,
            blockedByJudge: 0,
            recent: [{ step: 1, tool: "fs.read", toolCallId: "a", allowed: true, blockedBy: "none" }],
          },
        },
        {
          number: 2,
          phase: "Validating",
          toolCalls: {
            proposed: 2,
            allowed: 1,
            blockedByGuard: 1,
            blockedByJudge: 0,
            recent: [
              { step: 1, tool: "fs.write", toolCallId: "b", allowed: true, blockedBy: "none" },
              {
                step: 2,
                tool: "cmd.run",
                toolCallId: "c",
                allowed: false,
                blockedBy: "guard",
                check: "destructive_pattern",
                reason: "destructive_pattern: rm -rf",
              },
            ],
          },
        },
      ],
    };
    const { execution } = validationJudgeChild({ ...ofRun, judge: historian, request, output: "out", workerMounts: mounts, status });
    expect(execution.spec.input).toEqual({
      output: "out",
      tool_call_history: [
        { tool: "fs.write", step: 1, allowed: true },
        { tool: "cmd.run", step: 2, allowed: false, reason: "destructive_pattern: rm -rf" },
      ],
    });
    // An iteration without recorded calls sends none (the field is optional in the reference).
    const quiet = validationJudgeChild({
      ...ofRun,
      judge: historian,
      request: { ...request, iteration: 3 },
      output: "out",
      workerMounts: mounts,
      status,
    }).execution;
    expect(quiet.spec.input).toEqual({ output: "out" });
  });

  it("a judge that cannot get a payload is a child with the reason annotated, and the reason is returned", () => {
    const picky: Agent = {
      ...judge,
      spec: {
        ...judge.spec,
        input_schema: { type: "object", required: ["secret_field"], properties: { secret_field: { type: "string" } } },
      },
    };
    const request = {
      name: "demo-i1-v0-rule-judge",
      judge: "rule-judge",
      iteration: 1,
      validatorIndex: 0,
      validator: { type: "semantic" as const, judge_agent: "rule-judge" },
      depth: 1,
      timeoutSeconds: 45,
      network: "none" as const,
    };
    const v = validationJudgeChild({ ...ofRun, judge: picky, request, output: "", workerMounts: [] });
    expect(v.problem).toMatch(/secret_field/);
    expect(v.execution.metadata.annotations?.[SPAWN_ERROR_ANNOTATION]).toBe(v.problem);
    expect(v.execution.spec.input).toBeUndefined();
    expect(validationJudgeChild({ ...ofRun, judge: undefined, request, output: "", workerMounts: [] }).problem).toBe(
      'judge agent "rule-judge" is not known',
    );
  });

  it("a tool_validation judge child: its name, the call's toolCallId, the reference payload and its workload", () => {
    const t = toolJudgeChild({
      parent,
      worker,
      judge: { ...judge, spec: { ...judge.spec, input_schema: {} } },
      entry: { type: "semantic", judge_agent: "rule-judge", criteria: "be safe", timeout_seconds: 20 },
      index: 1,
      proposal,
      policyViolations: ["cmd.run"],
      workerMounts: mounts,
      stdin: false,
    });
    expect(t.name).toBe("demo-i2-t1-s5-rule-judge");
    expect(t.problem).toBeUndefined();
    expect(t.execution.metadata.name).toBe(t.name);
    expect(t.execution.metadata.ownerReferences).toEqual([ownerOf(parent)]);
    expect(t.execution.spec.parent).toEqual({
      name: "demo",
      uid: "uid-1",
      purpose: "tool_validation",
      iteration: 2,
      validatorIndex: 1,
      toolCallId: "tc-9",
      depth: 1,
    });
    expect(t.execution.spec.timeoutSeconds).toBe(20);
    expect(t.execution.spec.input).toMatchObject({
      proposed_tool_call: { tool: "fs.write", args: { path: "/workspace/a", content: "x" } },
      available_tools: ["fs.write", "cmd.run"],
      worker_mounts: ["/workspace"],
      criteria: "be safe",
      validation_context: "semantic_judge_pre_execution_inner_loop",
      policy_violations: ["cmd.run"],
    });
    expect(t.workload).toMatchObject({
      name: t.name,
      image: "gavel/rule-judge:dev",
      network: "none",
      timeoutSeconds: 20,
      env: { GAVEL_INPUT: JSON.stringify(t.execution.spec.input) },
    });
    expect(t.workload?.mounts).toEqual([{ ...mounts[0], readOnly: true }]);
  });

  it("a tool judge that cannot run says why: unknown judge, no image", () => {
    const entry = { type: "semantic" as const, judge_agent: "ghost" };
    const unknown = toolJudgeChild({
      parent,
      worker,
      judge: undefined,
      entry,
      index: 0,
      proposal,
      policyViolations: [],
      workerMounts: [],
      stdin: true,
    });
    expect(unknown).toMatchObject({ name: "demo-i2-t0-s5-ghost", problem: 'judge agent "ghost" is not known' });
    expect(unknown.workload).toBeUndefined();
    expect(unknown.execution.metadata.annotations?.[SPAWN_ERROR_ANNOTATION]).toBe(unknown.problem);
    const noImage = toolJudgeChild({
      parent,
      worker,
      judge: { ...judge, spec: { input_schema: {} } },
      entry: { type: "semantic", judge_agent: "rule-judge" },
      index: 0,
      proposal,
      policyViolations: [],
      workerMounts: [],
      stdin: true,
    });
    expect(noImage.problem).toMatch(/names no image/);
  });
});

describe("quantities and labels", () => {
  it("parses resource quantities", () => {
    expect(parseMemoryBytes("512Mi")).toBe(512 * 2 ** 20);
    expect(parseMemoryBytes("1G")).toBe(1e9);
    expect(parseMemoryBytes("lots")).toBeUndefined();
    expect(parseNanoCpus("250m")).toBe(2.5e8);
    expect(parseNanoCpus("2")).toBe(2e9);
    expect(parseNanoCpus("x")).toBeUndefined();
    expect(resourcesOf({ ...worker, spec: { security: { resources: { cpu: "0" } } } })).toEqual({});
  });

  it("keeps label values within 63 characters", () => {
    expect(labelValue("a".repeat(70))).toHaveLength(63);
    expect(labelValue(`${"a".repeat(62)}-b`)).toBe("a".repeat(62));
  });
});
