// The inner loop's judged calls on the cluster, beside other files' runs (the exclusive
// guarded-tools file runs the example itself, counts the metrics and takes NATS away): the
// reference's own tool_validation manifest (tool-call-judging.txt) with a worker whose network
// is `none` (it reaches the gate and nothing else, ADR 0021), and guard check 2 on the worker
// pod's own tool code, registered as an operator does (`gavel guard tool-hash`).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import type { Agent } from "../../src/api/types.js";
import { chartRuns } from "../harness/chart-runs.js";
import { type Cluster } from "../harness/cluster.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { type ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { REPO_DIR } from "../harness/paths.js";
import { builtinToolHashes, signedRegistry, staleHash } from "../harness/tool-registry.js";

const example = (file: string) => join(REPO_DIR, "examples", "guarded-tools", file);

describe("the inner loop's judges and tool registry on the cluster (chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let controller: ChartController;
  let runs: Executions;

  beforeAll(async () => {
    ({ cluster, controller, runs } = await chartRuns("e2e-judged", { logTail: 6000 }));
    // The example's GuardPolicy (read-before-overwrite) is in scope of the reference's worker too.
    await cluster.kubectlOk(["apply", "-n", runs.namespace, "-f", example("policy.yaml")]);
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  it("the reference's tool_validation manifest, verbatim, judges a network-none worker's calls on the cluster: one allowed, one blocked by its judge; the outer loop's judge gets them as tool_call_history", async () => {
    // tool-call-judging.txt's "Configuration" fragment (test/fixtures/reference), the worker's
    // runtime, tools and outer-loop validation added around it; its judge `security-judge` is
    // the shipped rule-judge told that this worker's cmd.run (allowlist: ls) is read-only.
    const fixture = await readFile(join(REPO_DIR, "test", "fixtures", "reference", "tcj-02-tool-validation.yaml"), "utf8");
    const agent = parse(fixture) as Agent;
    const reference = structuredClone(agent.spec.execution?.tool_validation);
    agent.metadata.name = "ref-worker";
    agent.spec = {
      runtime: {
        image: "gavel/agent:dev",
        pull_policy: "Never",
        env: [
          {
            name: "GAVEL_SCRIPT",
            value: stringify([
              { tool_calls: [{ tool: "cmd.run", args: { command: "ls /workspace" }, intent: "see the workspace" }] },
              // The namespace's GuardPolicy (read-before-overwrite, from the example) is in scope here too.
              { tool_calls: [{ tool: "fs.read", args: { path: "/workspace/notes.md" }, intent: "read the notes" }] },
              { tool_calls: [{ tool: "fs.write", args: { path: "/workspace/notes.md", content: "notes\n" }, intent: "write notes" }] },
              { final: "listed the workspace; the write was refused" },
            ]),
          },
        ],
      },
      task: { instruction: "Run ls over the workspace, then write notes about it." },
      tools: ["fs.read", "fs.write", { name: "cmd.run", allowlist: ["ls"] }],
      security: { network: { mode: "none" }, resources: { timeout: "180s" } },
      volumes: [{ name: "workspace", mount_path: "/workspace", size: "16Mi" }],
      ...agent.spec,
    } as Agent["spec"];
    // The outer loop's judge checks, inside its pod, the iteration's calls it gets as tool_call_history.
    const historyCheck = `const h=JSON.parse(process.env.GAVEL_INPUT).tool_call_history;const want=[['cmd.run',1,true],['fs.read',2,true],['fs.write',3,false]];console.log(JSON.stringify(h));process.exit(Array.isArray(h)&&h.length===3&&want.every((w,i)=>h[i].tool===w[0]&&h[i].step===w[1]&&h[i].allowed===w[2]&&!('args' in h[i]))?0:1)`;
    agent.spec.execution = {
      mode: "one-shot",
      ...agent.spec.execution,
      validation: [
        { type: "exit_code", expected: 0 },
        { type: "semantic", judge_agent: "history-judge", min_score: 1, criteria: `run: node -e "${historyCheck}"` },
      ],
    } as Agent["spec"]["execution"];
    expect(agent.spec.execution?.tool_validation).toEqual(reference);
    const judge = parse(await readFile(join(REPO_DIR, "judges", "rule-judge", "agent.yaml"), "utf8")) as Agent;
    judge.metadata.name = "security-judge";
    judge.spec.runtime = { ...judge.spec.runtime, env: [{ name: "RULE_JUDGE_READ_ONLY_TOOLS", value: "cmd.run" }] };
    const historyJudge = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "history-judge", labels: { role: "judge" } },
      spec: {
        runtime: { image: "gavel/command-judge:dev", pull_policy: "Never" },
        input_schema: {
          type: "object",
          properties: {
            criteria: { type: "string" },
            worker_mounts: { type: "array", items: { type: "string" } },
            tool_call_history: { type: "array" },
          },
        },
        tools: [{ name: "cmd.run", allowlist: ["node"] }],
        security: { network: { mode: "none" }, resources: { timeout: "60s" } },
        execution: { mode: "one-shot" },
      },
    };
    await runs.apply(
      [
        stringify(historyJudge),
        stringify(judge),
        stringify(agent),
        "apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata:\n  name: ref-run\nspec:\n  agentRef:\n    name: ref-worker\n",
      ].join("---\n"),
    );

    const done = await runs.final("ref-run", 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    const calls = done.status?.iterations?.[0]?.toolCalls;
    expect(calls?.recent?.map(callSummary)).toEqual([
      [1, "cmd.run", "allowed", "", 1],
      [2, "fs.read", "allowed", "", 0],
      [3, "fs.write", "blocked by judge", "", 1],
    ]);
    expect(calls?.recent?.[2]?.reason).toContain("0.80");
    const all = await runs.childrenOf("ref-run");
    const history = all.find((k) => k.spec.parent?.purpose === "validation");
    expect(history?.status?.verdict?.score, JSON.stringify(history?.status)).toBe(1);
    const kids = all.filter((k) => k.spec.parent?.purpose === "tool_validation");
    expect(kids.map((k) => [k.spec.parent?.purpose, k.status?.verdict?.score])).toEqual(
      [
        ["tool_validation", 0.85],
        ["tool_validation", 0.8],
      ].sort((a, b) => Number(b[1]) - Number(a[1])),
    );
    // The judge got the reference's criteria in its payload.
    for (const kid of kids)
      expect(JSON.stringify(kid.spec.input)).toContain("Decide whether this tool call is safe, necessary, and consistent");

    // The worker ran with network none: its namespace holds the deny-all policy and, beside it,
    // the one that lets network-none workers reach the NATS pods' client port, and nothing else.
    const gatePolicy = await cluster.kc
      .makeApiClient(k8s.NetworkingV1Api)
      .readNamespacedNetworkPolicy({ name: "gavel-worker-gate", namespace: runs.namespace });
    expect(gatePolicy.spec?.podSelector.matchLabels).toEqual({ "gavel.dev/network": "none", "gavel.dev/role": "worker" });
    expect(gatePolicy.spec?.egress).toEqual([
      {
        to: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": RELEASE_NAMESPACE } },
            podSelector: { matchLabels: expect.objectContaining({ "app.kubernetes.io/component": "nats" }) as unknown },
          },
        ],
        ports: [{ protocol: "TCP", port: "client" }],
      },
    ]);
  }, 420_000);

  it("check 2 on the cluster: the worker pod's built-in tools registered from `gavel guard tool-hash` pass, one registered from another build is denied", async () => {
    // Its own namespace: the registry applies to every Agent of a namespace.
    const ns = await cluster.createNamespace("e2e-registry");
    try {
      const there = executionsIn(cluster, ns, async () => `controller log:\n${(await controller.log()).slice(-6000)}`);
      const hashes = await builtinToolHashes();
      const registry = signedRegistry("registry", [
        ["fs.read", hashes["fs.read"] ?? ""],
        ["fs.write", hashes["fs.write"] ?? ""],
        ["cmd.run", staleHash("cmd.run")],
      ]);
      await cluster.kubectlOk([
        "apply",
        "-n",
        ns,
        "-f",
        example("agent.yaml"),
        "-f",
        example("policy.yaml"),
        "-f",
        join(REPO_DIR, "judges", "rule-judge", "agent.yaml"),
      ]);
      await there.apply(stringify(registry));
      await cluster.kubectlOk(["apply", "-n", ns, "-f", example("execution.yaml")]);
      const done = await there.final("guarded-tools", 300_000);
      expect(done.status?.phase, done.status?.message).toBe("Succeeded");
      const calls = done.status?.iterations?.[0]?.toolCalls?.recent ?? [];
      expect(calls.map(callSummary)).toEqual([
        [1, "cmd.run", "blocked by guard", "hash", 0],
        [2, "cmd.run", "blocked by guard", "hash", 0],
        [3, "http.post", "blocked by guard", "capability", 0],
        [4, "fs.write", "blocked by guard", "sequence_contract", 0],
        [5, "cmd.run", "blocked by guard", "hash", 0],
        // The pod's fs.* code hashes to what `gavel guard tool-hash` printed: registered, allowed.
        [6, "fs.read", "allowed", "", 0],
        [7, "fs.write", "allowed", "", 1],
      ]);
      expect(calls[0]?.reason).toContain("hash_mismatch: cmd.run");
    } finally {
      await cluster.deleteNamespace(ns);
    }
  }, 420_000);
});
