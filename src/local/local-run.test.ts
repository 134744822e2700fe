// Tests of the local-mode driver on the in-memory workloads: what it starts (env, mounts,
// network, stdin, deadlines), what it reads, and how judge runs become outcomes.
import { describe, expect, it } from "vitest";
import type { Agent, Execution, ValidatorSpec } from "../api/types.js";
import type { GavelEvent } from "../api/events.js";
import { applyEvent, emptyTree, renderTree } from "../cli/tree.js";
import { InMemoryWorkloads, virtualWorkspace, type Behaviour } from "../../test/harness/in-memory-workloads.js";
import { LocalRun, runLocal } from "./local-run.js";

function worker(validation: ValidatorSpec[], extra: Partial<NonNullable<Agent["spec"]["execution"]>> = {}): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "writer" },
    spec: {
      runtime: { image: "example/worker:dev" },
      task: { instruction: "write result.json" },
      security: { resources: { timeout: "5s", memory: "256Mi", cpu: "500m" } },
      execution: { mode: "iterative", max_iterations: 3, validation, ...extra },
    },
  };
}
function judge(name: string, extra: Partial<Agent["spec"]> = {}): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, labels: { role: "judge" } },
    spec: {
      runtime: { image: `judges/${name}:dev` },
      input_schema: {
        type: "object",
        properties: { output: { type: "string" }, criteria: { type: "string" }, worker_mounts: { type: "array" } },
      },
      security: { network: { mode: "none" }, resources: { timeout: "2s" } },
      execution: { mode: "one-shot" },
      ...extra,
    },
  };
}
const execution: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo" },
  spec: { agentRef: { name: "writer" }, input: { n: 3 } },
};

async function run(agent: Agent, judges: Agent[], behaviour: Behaviour, exec: Execution = execution) {
  const workloads = new InMemoryWorkloads(behaviour);
  const events: GavelEvent[] = [];
  const result = await runLocal({
    execution: exec,
    agent,
    judges: new Map(judges.map((j) => [j.metadata.name, j])),
    workloads,
    onEvent: (e) => events.push(e),
    workspace: virtualWorkspace,
  });
  return { result, workloads, events };
}

describe("local run (in-memory workloads)", () => {
  it("refines once: iteration 2 gets the feedback, the file is read by a reader workload, then a judge passes it", async () => {
    const agent = worker([
      { type: "exit_code" },
      { type: "json_schema", target_path: "/workspace/result.json", schema: { type: "object", required: ["answer"] } },
      { type: "semantic", judge_agent: "checker", criteria: "answer present", min_score: 0.5 },
    ]);
    const { result, workloads, events } = await run(agent, [judge("checker")], (spec, rt) => {
      if (spec.image === "example/worker:dev") {
        const ws = spec.mounts[0];
        if (ws === undefined) throw new Error("no workspace mount");
        const second = spec.env?.GAVEL_ITERATION === "2";
        rt.write(ws, "/workspace/result.json", second ? '{"answer": 42}' : '{"wrong": 1}');
        return { stdout: "wrote result.json\n" };
      }
      return { stdout: '{"score": 0.9, "confidence": 0.8, "reasoning": "fine"}' };
    });
    const status = result.execution.status;
    expect(status?.phase).toBe("Succeeded");
    expect(status?.iterations?.map((i) => i.phase)).toEqual(["Refining", "Passed"]);
    expect(status?.score).toBe(0.9);
    const workers = workloads.started.filter((s) => s.image === "example/worker:dev");
    expect(workers.map((w) => w.name)).toEqual(["demo-i1", "demo-i2"]);
    expect(workers[0]?.env).toMatchObject({
      GAVEL_NAMESPACE: "default",
      GAVEL_EXECUTION: "demo",
      GAVEL_ITERATION: "1",
      GAVEL_FEEDBACK: "",
      GAVEL_TASK: "write result.json",
      GAVEL_INPUT: '{"n":3}',
      GAVEL_TOOLS: "[]",
      GAVEL_MOUNTS: '[{"path":"/workspace","readOnly":false}]',
      GAVEL_WORKSPACE: "/workspace",
    });
    expect(workers[1]?.env?.GAVEL_FEEDBACK).toContain("Iteration 1 failed validator 1 (json_schema)");
    expect(workers[1]?.env?.GAVEL_FEEDBACK).toContain("must have required property 'answer'");
    expect(workers[0]).toMatchObject({ network: "allow", timeoutSeconds: 5, resources: { memoryBytes: 256 * 2 ** 20, nanoCpus: 5e8 } });
    expect(workers[0]?.mounts[0]).toMatchObject({ mountPath: "/workspace", readOnly: false });
    const judged = workloads.started.filter((s) => s.image === "judges/checker:dev");
    expect(judged).toHaveLength(1);
    expect(judged[0]).toMatchObject({ name: "demo-i2-v2-checker", network: "none", timeoutSeconds: 2 });
    expect(judged[0]?.mounts.every((m) => m.readOnly && m.mountPath === "/workspace")).toBe(true);
    expect(JSON.parse(judged[0]?.stdin ?? "")).toEqual({
      output: "wrote result.json\n",
      criteria: "answer present",
      worker_mounts: ["/workspace"],
    });
    expect(judged[0]?.env?.GAVEL_INPUT).toBe(judged[0]?.stdin);
    expect(result.children.map((c) => [c.metadata.name, c.status?.phase, c.status?.verdict?.score])).toEqual([
      ["demo-i2-v2-checker", "Succeeded", 0.9],
    ]);
    expect(result.children[0]?.spec.parent).toMatchObject({ name: "demo", iteration: 2, validatorIndex: 2, depth: 1 });
    // the events fold into the tree the CLI shows
    const tree = emptyTree("demo");
    for (const e of events) applyEvent(tree, e);
    expect(tree.phase).toBe("Succeeded");
    expect(tree.iterations.map((i) => i.state)).toEqual(["refining", "passed"]);
    expect(tree.iterations[1]?.validators[2]?.judges[0]).toMatchObject({ child: "demo-i2-v2-checker", state: "done", score: 0.9 });
    expect(renderTree(tree).join("\n")).toContain("judge checker (demo-i2-v2-checker) score 0.90");
  });

  it("a judge payload too big for the environment goes on stdin only", async () => {
    const agent = worker([{ type: "semantic", judge_agent: "checker" }], { max_iterations: 1 });
    const big = "x".repeat(200 * 1024);
    const { workloads } = await run(agent, [judge("checker")], (spec) =>
      spec.image === "example/worker:dev" ? { stdout: big } : { stdout: '{"score": 1, "confidence": 1, "reasoning": "ok"}' },
    );
    const j = workloads.started.find((s) => s.image === "judges/checker:dev");
    expect(j?.env?.GAVEL_INPUT).toBeUndefined();
    expect((JSON.parse(j?.stdin ?? "{}") as { output: string }).output).toBe(big);
  });

  it("a judge that hangs is killed at its deadline and rejected as timed_out", async () => {
    const agent = worker([{ type: "semantic", judge_agent: "slow", timeout_seconds: 0.05 }], { max_iterations: 1 });
    const { result, workloads } = await run(agent, [judge("slow")], (spec) => (spec.image.startsWith("judges/") ? { hang: true } : {}));
    expect(result.execution.status?.phase).toBe("Failed");
    expect(result.children[0]?.status).toMatchObject({ phase: "TimedOut", rejection: "timed_out" });
    expect(result.execution.status?.iterations?.[0]?.validators?.[0]?.reasoning).toContain("timed_out");
    expect(workloads.started.find((s) => s.name === "demo-i1-v0-slow")?.timeoutSeconds).toBe(0.05);
  });

  it("crashing, garbage-printing and workspace-writing judges are each rejected with their reason", async () => {
    const agent = worker([{ type: "multi_judge", judges: ["crash", "garbage", "writer-judge"], min_judges_required: 1 }], {
      max_iterations: 1,
    });
    const { result } = await run(agent, [judge("crash"), judge("garbage"), judge("writer-judge")], (spec, rt) => {
      if (spec.image === "judges/crash:dev") return { exitCode: 2, stderr: "Segmentation fault" };
      if (spec.image === "judges/garbage:dev") return { stdout: "I think it is good {score: high}" };
      if (spec.image === "judges/writer-judge:dev") {
        rt.write(spec.mounts[0] as never, "/workspace/pwned", "x"); // throws EROFS → the judge dies
        return {};
      }
      return {};
    });
    const byName = Object.fromEntries(result.children.map((c) => [c.spec.agentRef.name, c.status]));
    expect(byName.crash).toMatchObject({ phase: "Failed", rejection: "failed" });
    expect(byName.garbage).toMatchObject({ phase: "Failed", rejection: "malformed_output" });
    expect(byName["writer-judge"]).toMatchObject({ phase: "Failed", rejection: "failed" });
    expect(result.execution.status?.phase).toBe("Failed");
    expect(result.execution.status?.message).toContain("min_judges_required");
  });

  it("a worker past its iteration deadline is killed and the next iteration is told", async () => {
    const agent = worker([{ type: "exit_code" }], { max_iterations: 2, iteration_timeout_seconds: 0.05 });
    const { result, workloads } = await run(agent, [], (spec) => (spec.env?.GAVEL_ITERATION === "1" ? { hang: true } : {}));
    expect(result.execution.status?.phase).toBe("Succeeded");
    expect(result.execution.status?.iterations?.[1]?.feedback).toContain("ran past its iteration deadline");
    expect(workloads.started[1]?.env?.GAVEL_FEEDBACK).toContain("was killed");
  });

  it("reads a regex target file through a reader and reports a file outside every volume", async () => {
    const agent = worker([{ type: "regex", pattern: "ok", target: "/etc/passwd" }], { max_iterations: 1 });
    const { result } = await run(agent, [], () => ({}));
    expect(result.execution.status?.message).toContain("is not inside any workspace volume");
  });

  it("a judge whose input_schema cannot be filled is a failed judge, not a crashed run", async () => {
    const picky = judge("picky", {
      input_schema: { type: "object", required: ["deployment_result"], properties: { deployment_result: { type: "string" } } },
    });
    const agent = worker([{ type: "semantic", judge_agent: "picky" }], { max_iterations: 1 });
    const { result, workloads } = await run(agent, [picky], () => ({}));
    expect(result.children[0]?.status).toMatchObject({ phase: "Failed", rejection: "failed" });
    expect(result.children[0]?.status?.message).toContain("deployment_result");
    expect(workloads.started.some((s) => s.image === "judges/picky:dev")).toBe(false);
  });

  it("cancel stops the running worker and ends Cancelled", async () => {
    const workloads = new InMemoryWorkloads(() => ({ hang: true }));
    const lr = new LocalRun({
      execution,
      agent: worker([{ type: "exit_code" }]),
      judges: new Map(),
      workloads,
      workspace: virtualWorkspace,
    });
    const done = lr.run();
    await new Promise((r) => setTimeout(r, 20));
    lr.cancel();
    const result = await done;
    expect(result.execution.status?.phase).toBe("Cancelled");
    expect(workloads.stopped).toEqual(["demo-i1"]);
  });

  it("an MCP server image is refused before any container starts, naming the field and the server", async () => {
    const workloads = new InMemoryWorkloads(() => ({}));
    const agent = worker([]);
    agent.spec.mcp_servers = [{ name: "everything", image: "gavel/mcp-everything:dev", port: 3001 }];
    await expect(runLocal({ execution, agent, judges: new Map(), workloads, workspace: virtualWorkspace })).rejects.toThrow(
      "spec.mcp_servers[0].image (server everything): a server container runs beside the worker on a cluster only",
    );
    expect(workloads.started).toEqual([]);
  });

  it("a worker that cannot start fails the run with an error naming the iteration", async () => {
    const workloads = new InMemoryWorkloads(() => ({}));
    workloads.ensure = () => Promise.reject(new Error("image example/worker:dev is not on this engine"));
    await expect(runLocal({ execution, agent: worker([]), judges: new Map(), workloads, workspace: virtualWorkspace })).rejects.toThrow(
      /starting the worker of iteration 1: image example\/worker:dev/,
    );
  });

  it("runs a tool_validation judge for a proposed call: reference payload, read-only mounts, tree events", async () => {
    const events: GavelEvent[] = [];
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const workloads = new InMemoryWorkloads(async (spec) => {
      if (spec.image === "example/worker:dev") {
        await hold; // the worker is "running" while its call is judged
        return {};
      }
      return { stdout: '{"score": 0.75, "confidence": 0.9, "reasoning": "looks safe"}' };
    });
    const agent: Agent = { ...worker([]), spec: { ...worker([]).spec, tools: ["fs.write", { name: "cmd.run", allowlist: ["ls"] }] } };
    const lr = new LocalRun({
      execution,
      agent,
      judges: new Map([["guard-judge", judge("guard-judge", { input_schema: {} })]]),
      workloads,
      workspace: virtualWorkspace,
      onEvent: (e) => events.push(e),
    });
    const done = lr.run();
    await new Promise((r) => setTimeout(r, 10));
    const proposal = {
      namespace: "default",
      execution: "demo",
      iteration: 1,
      step: 3,
      toolCallId: "tc-1",
      tool: "fs.write",
      args: { path: "/workspace/a", content: "x" },
    };
    const r = await lr.runToolJudge({ type: "semantic", judge_agent: "guard-judge", criteria: "be safe" }, proposal, ["cmd.run"], 0);
    release();
    const result = await done;
    expect(r).toEqual({ child: "demo-i1-t0-s3-guard-judge", result: { score: 0.75, confidence: 0.9, reasoning: "looks safe" } });
    // Recorded like a validation judge: a ChildRef in the status and a child Execution with its verdict.
    expect(result.execution.status?.children).toContainEqual({
      name: "demo-i1-t0-s3-guard-judge",
      purpose: "tool_validation",
      iteration: 1,
      validatorIndex: 0,
      judge: "guard-judge",
      toolCallId: "tc-1",
      phase: "Succeeded",
    });
    const child = result.children.find((c) => c.metadata.name === "demo-i1-t0-s3-guard-judge");
    expect(child?.spec.parent).toMatchObject({ name: "demo", purpose: "tool_validation", toolCallId: "tc-1", validatorIndex: 0 });
    expect(child?.spec.input).toMatchObject({ proposed_tool_call: { tool: "fs.write" } });
    expect(child?.status).toMatchObject({ phase: "Succeeded", score: 0.75, verdict: { score: 0.75, confidence: 0.9 } });
    const spec = workloads.started.find((x) => x.name === "demo-i1-t0-s3-guard-judge");
    expect(spec?.mounts.every((m) => m.readOnly)).toBe(true);
    expect(JSON.parse(spec?.stdin ?? "")).toMatchObject({
      proposed_tool_call: { tool: "fs.write", args: { path: "/workspace/a", content: "x" } },
      available_tools: ["fs.write", "cmd.run"],
      worker_mounts: ["/workspace"],
      criteria: "be safe",
      validation_context: "semantic_judge_pre_execution_inner_loop",
      policy_violations: ["cmd.run"],
    });
    expect(events.map((e) => e.type).filter((t) => t.startsWith("toolcall") || t.startsWith("judge"))).toEqual([
      "toolcall.proposed",
      "judge.spawned",
      "judge.finished",
    ]);
    expect(events.find((e) => e.type === "judge.finished")?.execution).toBe("demo-i1-t0-s3-guard-judge");
  });

  it("a tool_validation judge that prints no verdict is a Failed child with its rejection", async () => {
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const workloads = new InMemoryWorkloads(async (spec) => {
      if (spec.image === "example/worker:dev") {
        await hold;
        return {};
      }
      return { stdout: "I think it is fine" };
    });
    const agent: Agent = { ...worker([]), spec: { ...worker([]).spec, tools: ["fs.write"] } };
    const lr = new LocalRun({
      execution,
      agent,
      judges: new Map([["guard-judge", judge("guard-judge", { input_schema: {} })]]),
      workloads,
      workspace: virtualWorkspace,
    });
    const done = lr.run();
    await new Promise((r) => setTimeout(r, 10));
    const proposal = {
      namespace: "default",
      execution: "demo",
      iteration: 1,
      step: 2,
      toolCallId: "tc-2",
      tool: "fs.write",
      args: { path: "/workspace/a", content: "x" },
    };
    const r = await lr.runToolJudge({ type: "semantic", judge_agent: "guard-judge" }, proposal, [], 0);
    release();
    const result = await done;
    expect(r.rejection).toBe("malformed_output");
    expect(result.execution.status?.children?.find((c) => c.purpose === "tool_validation")?.phase).toBe("Failed");
    expect(result.children.find((c) => c.metadata.name === "demo-i1-t0-s2-guard-judge")?.status).toMatchObject({
      phase: "Failed",
      rejection: "malformed_output",
    });
  });
});
