// Warm judge pods on the cluster (ADR 0070), as `helm install` runs them: the guarded-tools
// example decides the same with warm judges as with none, every judged call still a child
// Execution with its verdict, and no warm pod outlives its run; and a judge in a warm pod sees
// its own Execution's workspace only, never another's.
import * as k8s from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { Execution } from "../../src/api/types.js";
import { CHILD_LABELS } from "../../src/children/workloads.js";
import { claimName, workloadPodName } from "../../src/controller/execution-pods.js";
import { WARM_ROLE } from "../../src/controller/warm-judge-pods.js";
import { AGENT_ENTRYPOINT } from "../../src/children/images.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { commandJudgeYaml, executionYaml } from "../harness/example-worker.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { REPO_DIR } from "../harness/paths.js";

const example = (file: string) => join(REPO_DIR, "examples", "guarded-tools", file);

/**
 * Every warm pod of a namespace as a list every 200 ms last saw it, by name (kept after it is
 * gone). A claimed pod lives for its call only (a few hundred ms): claims may be missed, idle
 * pool pods (the same spec, by fingerprint) are not.
 */
function watchWarmPods(core: k8s.CoreV1Api, namespace: string) {
  const pods = new Map<string, k8s.V1Pod>();
  let live: k8s.V1Pod[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const list = await core.listNamespacedPod({ namespace, labelSelector: `${CHILD_LABELS.role}=${WARM_ROLE}` }).catch(() => undefined);
      if (list !== undefined) {
        live = list.items;
        for (const p of list.items) pods.set(p.metadata?.name ?? "", p);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    pods,
    /** Warm pods in the namespace at the last list. */
    live: () => live,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

describe("warm judge pods on the cluster (chart-installed controller)", () => {
  let cluster: Cluster;
  let controller: ChartController;
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    controller = new ChartController(cluster);
    const [pod] = await controller.ready();
    // A controller just rolled out: the one it replaced may still lead for a moment (and run Executions the old way).
    const coord = cluster.kc.makeApiClient(k8s.CoordinationV1Api);
    await eventually(
      async () =>
        (await coord.readNamespacedLease({ name: "gavel-execution-controller", namespace: RELEASE_NAMESPACE })).spec?.holderIdentity ===
        pod?.metadata?.name
          ? true
          : undefined,
      120_000,
      "the Ready controller pod holding the leader Lease",
    );
  }, 300_000);

  const namespaceFor = async (name: string): Promise<Executions> => {
    const ns = await cluster.createNamespace(name);
    // Pod Security `restricted`, as the README's quick starts run: warm pods are hardened judge pods.
    await cluster.kubectlOk(["label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", "--overwrite"]);
    return executionsIn(cluster, ns, async () => `controller log:\n${(await controller.log()).slice(-6000)}`);
  };
  const toolJudges = async (runs: Executions, parent: string): Promise<Execution[]> =>
    (await runs.childrenOf(parent)).filter((k) => k.spec.parent?.purpose === "tool_validation");

  it("the guarded-tools example decides the same with warm judges as with none; every judged call is a child with its verdict; no warm pod outlives the run", async () => {
    const warm = await namespaceFor("e2e-warm");
    const cold = await namespaceFor("e2e-cold");
    const watched = watchWarmPods(core, warm.namespace);
    const coldWatched = watchWarmPods(core, cold.namespace);
    try {
      for (const [runs, pool] of [
        [warm, "3"],
        [cold, "0"],
      ] as const) {
        await cluster.kubectlOk([
          "apply",
          "-n",
          runs.namespace,
          "-f",
          example("agent.yaml"),
          "-f",
          example("policy.yaml"),
          "-f",
          join(REPO_DIR, "judges", "rule-judge", "agent.yaml"),
        ]);
        await cluster.kubectlOk([
          "annotate",
          "-n",
          runs.namespace,
          "--overwrite",
          "agent",
          "guarded-tools",
          `gavel.dev/warm-judges=${pool}`,
        ]);
        // On both sides the worker waits before its first call, so the warm side's pool is ready by then.
        const command = ["sh", "-c", `sleep 15 && exec ${AGENT_ENTRYPOINT.join(" ")}`];
        const patch = JSON.stringify({ spec: { runtime: { command } } });
        await cluster.kubectlOk(["patch", "-n", runs.namespace, "agent", "guarded-tools", "--type", "merge", "-p", patch]);
      }
      await Promise.all([warm, cold].map((runs) => cluster.kubectlOk(["apply", "-n", runs.namespace, "-f", example("execution.yaml")])));
      const [w, c] = await Promise.all([warm.final("guarded-tools", 300_000), cold.final("guarded-tools", 300_000)]);
      expect(w.status?.phase, w.status?.message).toBe("Succeeded");
      expect(c.status?.phase, c.status?.message).toBe("Succeeded");
      // The same decisions, call by call.
      const decisions = (e: Execution) => e.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary);
      expect(decisions(w)).toEqual(decisions(c));
      expect(decisions(w)?.length).toBeGreaterThan(0);
      // Every judged call is a child Execution with its verdict, the same ones on both sides.
      const verdicts = async (runs: Executions) =>
        (await toolJudges(runs, "guarded-tools")).map((k) => [k.metadata.name, k.status?.phase, k.status?.verdict?.score]).sort();
      const warmVerdicts = await verdicts(warm);
      expect(warmVerdicts).toEqual(await verdicts(cold));
      expect(warmVerdicts.length).toBeGreaterThan(0);
      for (const v of warmVerdicts) expect(v[2], JSON.stringify(v)).toBeTypeOf("number");
      // Warm judges ran warm (the first call at least: the pool was ready before the worker's first call),
      // the cold side never had a warm pod.
      const kids = (await toolJudges(warm, "guarded-tools")).map((k) => k.metadata.name);
      // A cold judge's pod is kept for its retention; a warm one's is gone with its call.
      const podsIn = async (runs: Executions) =>
        new Set((await core.listNamespacedPod({ namespace: runs.namespace })).items.map((p) => p.metadata?.name));
      const ranCold = await podsIn(warm);
      const ranWarm = kids.filter((k) => !ranCold.has(workloadPodName(k)));
      console.log(`warm judges: ${ranWarm.length} of ${kids.length} judged calls ran in a warm pod`);
      expect(ranWarm.length).toBeGreaterThan(0);
      expect(watched.pods.size).toBeGreaterThan(0);
      const coldSide = await podsIn(cold);
      expect((await toolJudges(cold, "guarded-tools")).every((k) => coldSide.has(workloadPodName(k.metadata.name)))).toBe(true);
      expect(coldWatched.pods.size).toBe(0);
      // No warm pod outlives its run.
      await eventually(() => (watched.live().length === 0 ? true : undefined), 60_000, "no warm pod left in the warm namespace");
    } finally {
      await watched.stop();
      await coldWatched.stop();
      await cluster.deleteNamespace(warm.namespace);
      await cluster.deleteNamespace(cold.namespace);
    }
  }, 600_000);

  it("a judge in a warm pod sees its own Execution's workspace only: two runs side by side, each judge checks its own marker", async () => {
    const runs = await namespaceFor("e2e-warm-apart");
    const watched = watchWarmPods(core, runs.namespace);
    try {
      // Each worker writes its name into its workspace, waits for its warm pool, then makes one judged call;
      // its judge passes only if the workspace it sees holds that worker's name.
      const worker = (name: string) => `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: ${name}, annotations: { gavel.dev/warm-judges: "1" } }
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    command: ${JSON.stringify(["sh", "-c", `echo ${name} > /workspace/owner && sleep 15 && exec ${AGENT_ENTRYPOINT.join(" ")}`])}
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: cmd.run, args: { command: ls /workspace }, intent: list }]
          - final: listed
  task: { instruction: List the workspace. }
  tools: [{ name: cmd.run, allowlist: [ls] }]
  security: { network: { mode: allow }, resources: { timeout: 180s } }
  volumes: [{ name: workspace, mount_path: /workspace, size: 16Mi }]
  execution:
    mode: one-shot
    validation: [{ type: exit_code, expected: 0 }]
    tool_validation:
      - { type: semantic, judge_agent: owner-judge, min_score: 1.0, criteria: "run: grep -qx ${name} /workspace/owner" }
`;
      await runs.apply([commandJudgeYaml("owner-judge", { allowlist: ["grep"] }), worker("apart-a"), worker("apart-b")].join("---\n"));
      await runs.apply(executionYaml("run-a", "apart-a") + "---" + executionYaml("run-b", "apart-b"));
      for (const [run, worker] of [
        ["run-a", "apart-a"],
        ["run-b", "apart-b"],
      ] as const) {
        const done = await runs.final(run, 300_000);
        expect(done.status?.phase, done.status?.message).toBe("Succeeded");
        const [kid, ...more] = await toolJudges(runs, run);
        expect(more).toEqual([]);
        // Its judge found its own worker's name: the call was allowed with score 1.
        expect(kid?.status?.verdict?.score, JSON.stringify(kid?.status)).toBe(1);
        expect(done.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary)).toEqual([[1, "cmd.run", "allowed", "", 1]]);
        // It ran in a warm pod (its own judge pod never existed), and every pod of its run's pool mounted its run's claim only, read-only.
        const left = new Set((await core.listNamespacedPod({ namespace: runs.namespace })).items.map((p) => p.metadata?.name));
        expect(left.has(workloadPodName(kid?.metadata.name ?? "")), `${kid?.metadata.name} ran in a pod of its own`).toBe(false);
        const pool = [...watched.pods.values()].filter((p) => p.metadata?.labels?.[CHILD_LABELS.parent] === run);
        expect(pool.length).toBeGreaterThan(0);
        for (const pod of pool) {
          const claims = (pod.spec?.volumes ?? []).filter((v) => v.persistentVolumeClaim !== undefined).map((v) => v.persistentVolumeClaim);
          expect(claims).toEqual([{ claimName: claimName(run, "workspace"), readOnly: true }]);
        }
        console.log(
          `${worker}: judge ${kid?.metadata.name} ran in a warm pod; ${pool.length} pool pod(s) seen, each mounting ${claimName(run, "workspace")} read-only`,
        );
      }
      await eventually(() => (watched.live().length === 0 ? true : undefined), 60_000, "no warm pod left");
    } finally {
      await watched.stop();
      await cluster.deleteNamespace(runs.namespace);
    }
  }, 480_000);
});
