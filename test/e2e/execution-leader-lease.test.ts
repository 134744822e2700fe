// Leader election on the single-node cluster's API server: one coordination.k8s.io Lease,
// one reconciling replica; a replica that hands the Lease back (or stops renewing it) is
// replaced, and the new leader finishes the work.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { LeaderLease } from "../../src/controller/execution-leader-lease.js";
import { ExecutionReconciler } from "../../src/controller/execution-reconciler.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { runOk } from "../harness/exec.js";
import { BASE_IMAGE, REPO_DIR } from "../harness/paths.js";

const WORKER_IMAGE = "gavel/example-k8s-worker:dev";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("leader election of the Execution reconciler", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let coord: k8s.CoordinationV1Api;
  let api: k8s.CustomObjectsApi;
  let ns: string;
  const dirs: { pv: string; dir: string }[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    await runOk("docker", ["build", "-q", "--build-arg", `BASE_IMAGE=${BASE_IMAGE}`, "-t", WORKER_IMAGE, join(REPO_DIR, "examples", "kubernetes", "worker")], { timeoutMs: 300_000 });
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    coord = cluster.kc.makeApiClient(k8s.CoordinationV1Api);
    api = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    ns = await cluster.createNamespace("e2e-lease");
  }, 900_000);

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    if (cluster !== undefined && ns !== undefined) await cluster.deleteNamespace(ns);
    for (const d of dirs) {
      await core?.deletePersistentVolume({ name: d.pv }).catch(() => undefined);
      await rm(d.dir, { recursive: true, force: true });
    }
  });

  it("Given two candidates, one leads; when it hands the Lease back the other takes it; an expired holder is replaced", async () => {
    const a = new LeaderLease({ kc: cluster.kc, namespace: ns, name: "l1", identity: "a", retryMs: 200, leaseDurationSeconds: 3 });
    const b = new LeaderLease({ kc: cluster.kc, namespace: ns, name: "l1", identity: "b", retryMs: 200, leaseDurationSeconds: 3 });
    cleanups.push(() => a.stop(), () => b.stop());
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
      body: { metadata: { name: "l2" }, spec: { holderIdentity: "ghost", leaseDurationSeconds: 2, renewTime: new k8s.V1MicroTime(Date.now() - 10_000) } },
    });
    const c = new LeaderLease({ kc: cluster.kc, namespace: ns, name: "l2", identity: "c", retryMs: 200 });
    cleanups.push(() => c.stop());
    expect(await c.acquire(() => undefined)).toBe(true);
    expect((await coord.readNamespacedLease({ name: "l2", namespace: ns })).spec?.holderIdentity).toBe("c");
  });

  it("Given two reconcilers with leader election, only the leader acts; after it stops, the other runs the next Execution", async () => {
    await cluster.kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")]);
    const agent = `
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
`;
    const r = await cluster.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: agent });
    expect(r.code, r.stderr).toBe(0);
    const reconciler = (identity: string) =>
      new ExecutionReconciler({ kc: cluster.kc, namespace: ns, leaderElection: { namespace: ns, identity, leaseName: "executions", retryMs: 300, leaseDurationSeconds: 5 } });
    const first = reconciler("first");
    const second = reconciler("second");
    cleanups.push(() => first.stop(), () => second.stop());
    await first.start();
    await eventually(() => Promise.resolve(first.isLeader ? true : undefined), 20_000, "first to lead");
    await second.start();

    const run = async (name: string): Promise<Execution> => {
      const dir = await mkdtemp(join(tmpdir(), `gavel-lease-${name}-`));
      await chmod(dir, 0o777);
      dirs.push({ pv: `${ns}-${name}`, dir });
      await core.createPersistentVolume({
        body: {
          metadata: { name: `${ns}-${name}` },
          spec: { capacity: { storage: "64Mi" }, accessModes: ["ReadWriteOnce"], persistentVolumeReclaimPolicy: "Retain", hostPath: { path: dir, type: "Directory" }, claimRef: { namespace: ns, name: `${name}-workspace` } },
        },
      });
      await api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", body: { apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { name }, spec: { agentRef: { name: "quick-writer" }, input: { correct_first_time: true } } } });
      return eventually(async () => {
        const ex = (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name })) as Execution;
        return ex.status?.phase === "Succeeded" || ex.status?.phase === "Failed" ? ex : undefined;
      }, 180_000, `${name} to finish`);
    };

    // When an Execution runs while both are up, then only the leader created its pod and child
    const one = await run("led-by-first");
    expect(one.status?.phase, one.status?.message).toBe("Succeeded");
    expect(first.stats.podsCreated).toBeGreaterThanOrEqual(2);
    expect(first.stats.childrenCreated).toBe(1);
    expect(second.isLeader).toBe(false);
    expect(second.stats).toMatchObject({ reconciles: 0, podsCreated: 0, childrenCreated: 0 });

    // When the leader stops (and hands the Lease back), the other leads and runs the next one
    await first.stop();
    await eventually(() => Promise.resolve(second.isLeader ? true : undefined), 10_000, "second to lead");
    const two = await run("led-by-second");
    expect(two.status?.phase, two.status?.message).toBe("Succeeded");
    expect(second.stats.childrenCreated).toBe(1);
    expect((await coord.readNamespacedLease({ name: "executions", namespace: ns })).spec?.holderIdentity).toBe("second");
  });
});
