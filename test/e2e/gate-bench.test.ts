// The cluster gate benchmark's pods (bench/gate-cluster.ts) in a short run: a worker pod of a
// real Execution proposes a few hundred guard-only calls to the chart-installed controller's
// gate and as many echo calls to an echo pod. Only that every call got its answer is checked
// here, never a time (the figures are `make bench`'s).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPods } from "../../bench/gate-cluster.js";
import type { PodPlan } from "../../bench/gate-cluster-pod.js";
import { useCluster, type Cluster } from "../harness/cluster.js";

describe("gate benchmark pods", () => {
  let cluster: Cluster;
  let namespace: string;
  beforeAll(async () => {
    cluster = await useCluster();
    namespace = await cluster.createNamespace("e2e-gate-bench");
  });
  afterAll(async () => {
    if (namespace !== undefined) await cluster.deleteNamespace(namespace);
  });

  it("every guard-only call from the worker pod is decided (allowed by the guard, no judge) and every echo answered", async () => {
    const plan: PodPlan = { rates: [200], rounds: 1, seconds: 1, ladder: [], ladderSeconds: 1, p99LimitMs: 5 };
    const { result, ex } = await runPods(cluster, namespace, plan);
    const [r] = result.rates;
    expect(r?.gate.n).toBe(200);
    expect(r?.echo.n).toBe(200);
    // The warm-up's 400 calls at 200/s for 2 s, then the round's 200.
    expect(result.decisions).toBe(600);
    expect(ex.status?.phase).toBe("Succeeded");
  });
});
