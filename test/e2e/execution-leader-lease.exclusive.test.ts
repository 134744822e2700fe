// Leader election on the single-node cluster's API server: one coordination.k8s.io Lease,
// one reconciling replica; a replica that hands the Lease back (or stops renewing it) is
// replaced, and the new leader finishes the work. The chart's Deployment with two replicas
// shows it as users run it.
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { LeaderLease } from "../../src/controller/runtime/leader-lease.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { WORKER_IMAGE } from "../harness/example-worker.js";
import { executionsIn, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { REPO_DIR } from "../harness/paths.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("leader election of the Execution reconciler", () => {
  let cluster: Cluster;
  let coord: k8s.CoordinationV1Api;
  let ns: string;
  let controller: ChartController;
  let runs: Executions;
  let scaledOut = false;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    cluster = await useCluster();
    coord = cluster.kc.makeApiClient(k8s.CoordinationV1Api);
    controller = new ChartController(cluster);
    ns = await cluster.createNamespace("e2e-lease");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${await controller.log()}`);
  }, 900_000);

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    // Back to the fixture's single replica for the next file
    if (scaledOut) await controller.configure();
    if (cluster !== undefined && ns !== undefined) await cluster.deleteNamespace(ns);
  }, 300_000);

  it("Given two candidates, one leads; when it hands the Lease back the other takes it; an expired holder is replaced", async () => {
    const a = new LeaderLease({ kc: cluster.kc, namespace: ns, name: "l1", identity: "a", retryMs: 200, leaseDurationSeconds: 3 });
    const b = new LeaderLease({ kc: cluster.kc, namespace: ns, name: "l1", identity: "b", retryMs: 200, leaseDurationSeconds: 3 });
    cleanups.push(
      () => a.stop(),
      () => b.stop(),
    );
    expect(await a.acquire(() => undefined)).toBe(true);
    let bLeads = false;
    const bAcquired = b.acquire(() => undefined).then((ok) => (bLeads = ok));
    // a renews every 200 ms: b must not get in, even past the lease duration
    await sleep(4000);
    expect(bLeads).toBe(false);
    expect((await coord.readNamespacedLease({ name: "l1", namespace: ns })).spec?.holderIdentity).toBe("a");

    const handedBack = Date.now();
    await a.stop();
    await bAcquired;
    expect(bLeads).toBe(true);
    expect(Date.now() - handedBack).toBeLessThan(2000);
    const held = await coord.readNamespacedLease({ name: "l1", namespace: ns });
    expect(held.spec?.holderIdentity).toBe("b");
    expect(held.spec?.leaseTransitions).toBe(1);

    // A holder that died without handing back (its renewTime is old) is replaced
    await coord.createNamespacedLease({
      namespace: ns,
      body: {
        metadata: { name: "l2" },
        spec: { holderIdentity: "ghost", leaseDurationSeconds: 2, renewTime: new k8s.V1MicroTime(Date.now() - 10_000) },
      },
    });
    const c = new LeaderLease({ kc: cluster.kc, namespace: ns, name: "l2", identity: "c", retryMs: 200 });
    cleanups.push(() => c.stop());
    expect(await c.acquire(() => undefined)).toBe(true);
    expect((await coord.readNamespacedLease({ name: "l2", namespace: ns })).spec?.holderIdentity).toBe("c");
  });

  it("Given the chart with two controller replicas, only the Lease holder runs Executions; when its pod is deleted another replica takes over within seconds and runs the next", async () => {
    await cluster.kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")]);
    await runs.apply(`
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
      - type: semantic
        judge_agent: rule-judge
        criteria: "file_exists: sum.js"
        timeout_seconds: 60
`);
    scaledOut = true;
    await controller.configure(["--set", "replicas=2"]);
    const pods = (await controller.ready(2)).map((p) => p.metadata?.name ?? "");
    const holder = async () =>
      (await coord.readNamespacedLease({ name: "gavel-execution-controller", namespace: RELEASE_NAMESPACE })).spec?.holderIdentity ?? "";
    const leader = await eventually(
      async () => ((p) => (pods.includes(p) ? p : undefined))(await holder()),
      30_000,
      "a replica to hold the Lease",
    );
    const standby = pods.find((p) => p !== leader) ?? "";
    const logOf = async (pod: string) => (await cluster.kubectl(["logs", "-n", RELEASE_NAMESPACE, pod])).stdout;

    const run = async (name: string): Promise<Execution> => {
      await runs.apply(
        `{"apiVersion": "100monkeys.ai/v1", "kind": "Execution", "metadata": {"name": "${name}"}, "spec": {"agentRef": {"name": "quick-writer"}, "input": {"correct_first_time": true}}}`,
      );
      return runs.final(name, 180_000);
    };

    // When an Execution runs while both are up, then only the leader worked on it
    const one = await run("led-by-first");
    expect(one.status?.phase, one.status?.message).toBe("Succeeded");
    expect(await logOf(leader)).toContain(`"execution":"${ns}/led-by-first","event":"execution.started"`);
    expect(await logOf(standby)).not.toContain("led-by-first");

    // When the leader's pod is deleted (SIGTERM: it hands the Lease back), another replica leads
    // within seconds: the standby, or the ReplicaSet's new pod if it asks first (both race for
    // the handed-back Lease; the standby polls every 2 s, the new pod asks as it starts).
    const t0 = Date.now();
    const del = await cluster.kubectl(["delete", "pod", "-n", RELEASE_NAMESPACE, leader, "--wait=false"]);
    expect(del.code, del.stderr).toBe(0);
    const next = await eventually(
      async () => {
        const h = await holder();
        return h !== "" && h !== leader ? h : undefined;
      },
      30_000,
      "another replica to take the Lease",
    );
    const takeover = Date.now() - t0;
    console.log(
      `lease handover after the leader's pod was deleted: ${takeover} ms, to ${next === standby ? "the standby" : "the new pod"}`,
    );
    const live = (await controller.pods()).map((p) => p.metadata?.name ?? "");
    expect(live).toContain(next);
    const two = await run("led-by-second");
    expect(two.status?.phase, two.status?.message).toBe("Succeeded");
    expect(await logOf(next)).toContain(`"execution":"${ns}/led-by-second","event":"execution.started"`);
  });
});
