// Two chart releases on one cluster, each reconciling only the namespaces its
// watchNamespaceSelector matches (ADR 0081): this file's lane release (gavel-lane-N, namespaces
// labelled gavel.dev/lane=N) and the shared one (gavel in gavel-system, namespaces without the
// label). The same Execution applied in a namespace of each is run by that namespace's
// controller only: each log names its own run as started and never the other's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useCluster, type Cluster } from "../harness/cluster.js";
import { WORKER_IMAGE } from "../harness/example-worker.js";
import { executionsIn } from "../harness/executions.js";
import { ChartController, RELEASE, SHARED_CONTROLLER_DEPLOYMENT, SHARED_RELEASE_NAMESPACE } from "../harness/gavel-chart.js";

const AGENT = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: quick-writer
spec:
  runtime: { image: ${WORKER_IMAGE}, pull_policy: Never }
  security: { network: { mode: none }, resources: { timeout: "120s" } }
  volumes: [{ name: workspace, mount_path: /workspace, size: 64Mi }]
  execution:
    mode: iterative
    max_iterations: 1
    validation:
      - type: exit_code
`;
const EXECUTION = `{"apiVersion": "100monkeys.ai/v1", "kind": "Execution", "metadata": {"name": "isolated"}, "spec": {"agentRef": {"name": "quick-writer"}, "input": {"correct_first_time": true}}}`;

describe("chart releases side by side (watchNamespaceSelector)", () => {
  let cluster: Cluster;
  let lane: ChartController;
  const namespaces: string[] = [];

  beforeAll(async () => {
    cluster = await useCluster();
    lane = new ChartController(cluster);
    await lane.ready();
  }, 300_000);

  afterAll(async () => {
    for (const ns of namespaces) await cluster.deleteNamespace(ns);
  }, 120_000);

  it("an Execution in the lane's namespace is run by the lane's controller, one in an unlabelled namespace by the shared one, neither by the other", async () => {
    expect(RELEASE, "this file runs on a lane's release (vitest.config.ts)").toMatch(/^gavel-lane-/);
    const mine = await cluster.createNamespace("e2e-lanes-mine");
    const theirs = await cluster.createNamespace("e2e-lanes-shared", {});
    namespaces.push(mine, theirs);
    const sharedLog = async () =>
      (await cluster.kubectl(["logs", "-n", SHARED_RELEASE_NAMESPACE, `deployment/${SHARED_CONTROLLER_DEPLOYMENT}`, "--tail=-1"])).stdout;
    const runs = [mine, theirs].map((ns) =>
      executionsIn(cluster, ns, async () => `lane log:\n${await lane.log()}\nshared log:\n${await sharedLog()}`),
    );
    for (const r of runs) await r.apply(AGENT);
    for (const r of runs) await r.apply(EXECUTION);
    for (const r of runs) {
      const done = await r.final("isolated", 180_000);
      expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    }
    const started = (ns: string) => `"execution":"${ns}/isolated","event":"execution.started"`;
    const laneLog = await lane.log();
    const shared = await sharedLog();
    expect(laneLog).toContain(started(mine));
    expect(laneLog).not.toContain(`${theirs}/`);
    expect(shared).toContain(started(theirs));
    expect(shared).not.toContain(`${mine}/`);
  });
});
