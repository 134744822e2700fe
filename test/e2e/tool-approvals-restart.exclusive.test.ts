// A tool call waiting for a person survives the controller (issue 25, ADR 0067): the waiting
// lives in the API server (the ToolApproval, its deadline and its decision), not in the process
// that created it. The chart's controller is SIGKILLed while the call's approval is Pending; the
// restarted controller's gate takes the call's claim over on the worker's re-send, adopts the
// same ToolApproval, and the decision written after the restart reaches the worker once.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { GROUP, VERSION, type ToolApproval } from "../../src/api/types.js";
import { gavel } from "../harness/cli.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { ChartController } from "../harness/gavel-chart.js";

const NAME = "ladder-restart";
const agentYaml = stringify({
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: NAME },
  spec: {
    runtime: {
      image: "gavel/agent:dev",
      pull_policy: "Never",
      env: [
        {
          name: "GAVEL_SCRIPT",
          value: stringify([
            { tool_calls: [{ tool: "fs.write", args: { path: "/workspace/notes.md", content: "once\n" }, intent: "write the notes" }] },
            { tool_calls: [{ tool: "fs.read", args: { path: "/workspace/notes.md" } }] },
            { final: "r1={{result 1}} | r2={{result 2}}" },
          ]),
        },
      ],
    },
    task: { instruction: "Write the notes, then read them back." },
    tools: [{ name: "fs.write", approval: "always" }, "fs.read"],
    security: { network: { mode: "none" }, resources: { timeout: "300s" } },
    volumes: [{ name: "workspace", mount_path: "/workspace", size: "16Mi" }],
    execution: { mode: "one-shot", validation: [{ type: "exit_code", expected: 0 }] },
  },
});
const executionYaml = stringify({
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: NAME },
  spec: { agentRef: { name: NAME } },
});

describe("a pending ToolApproval survives a controller SIGKILL (chart-installed controller)", () => {
  let cluster: Cluster;
  let controller: ChartController;
  let runs: Executions;
  let custom: k8s.CustomObjectsApi;

  beforeAll(async () => {
    cluster = await useCluster();
    controller = new ChartController(cluster);
    await controller.ready();
    custom = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    const ns = await cluster.createNamespace("e2e-approvals-restart");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${(await controller.log()).slice(-6000)}`);
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  const approvals = async (): Promise<ToolApproval[]> =>
    (
      (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: runs.namespace, plural: "toolapprovals" })) as {
        items: ToolApproval[];
      }
    ).items;

  it("Given the controller is SIGKILLed while fs.write waits for a person, the approval written after the restart runs the call exactly once", async () => {
    await runs.apply([agentYaml, executionYaml].join("---\n"));
    const pending = await eventually(
      async () => (await approvals()).find((a) => a.status?.phase === "Pending"),
      180_000,
      "a pending ToolApproval",
    );
    await controller.kill();
    await controller.ready();
    // Still the one approval, still pending: nothing of it was in the killed process.
    const after = await approvals();
    expect(after.map((a) => [a.metadata.name, a.metadata.uid, a.status?.phase])).toEqual([
      [pending.metadata.name, pending.metadata.uid, "Pending"],
    ]);
    const approved = await gavel(["approve", pending.metadata.name, "--reason", "after the restart", "-n", runs.namespace], {
      env: { KUBECONFIG: cluster.kubeconfigPath },
    });
    expect(approved.err).toBe("");
    expect(approved.code).toBe(0);

    const done = await runs.final(NAME, 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    const calls = done.status?.iterations?.[0]?.toolCalls;
    // One decision per call: the approved write and the read (which saw what the write wrote, once).
    expect(calls?.recent?.map(callSummary)).toEqual([
      [1, "fs.write", "allowed", "", 0],
      [2, "fs.read", "allowed", "", 0],
    ]);
    const log = await gavel(["logs", NAME, "-n", runs.namespace], { env: { KUBECONFIG: cluster.kubeconfigPath } });
    expect(log.out).toMatch(/r1=\[approved by [^\]:]+: after the restart\]/);
    expect(log.out).toContain("r2=once");
    const ended = await approvals();
    expect(ended.map((a) => [a.metadata.name, a.status?.phase, a.status?.decision?.approved])).toEqual([
      [pending.metadata.name, "Approved", true],
    ]);
    // The approval was announced once, and its end once, across both controllers.
    const events = await cluster.kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: runs.namespace });
    const reasons = events.items.filter((e) => e.involvedObject.name === NAME).map((e) => e.reason ?? "");
    expect(reasons.filter((r) => r === "ToolCallApprovalPending")).toHaveLength(1);
    expect(reasons.filter((r) => r === "ToolCallApproved")).toHaveLength(1);
  }, 600_000);
});
