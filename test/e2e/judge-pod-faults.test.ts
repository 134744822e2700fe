// Faults of a judge's pod (issue 24 item 6) on the single-node cluster, the chart's controller
// running them: a validation judge's pod deleted while it judges, one evicted through the
// Eviction API, and one its memory limit kills. The first two run again in a new pod (the
// step retried, a Warning Event JudgePodLost on the judge child naming the fault) and their
// runs succeed; the third ends its judge child Failed naming the OOM kill, and its run Failed.
// Pods are counted from an API-server watch; nothing is left once the Executions are deleted.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { PODS, watchCreated, type CreatedObjects } from "../harness/created-objects.js";
import { commandJudgeYaml, executionYaml, oneShotWorkerYaml, semanticValidation } from "../harness/example-worker.js";
import { executionsIn, type Executions } from "../harness/executions.js";

// A judge that takes 20 s (`sleep 20`, then passes): time to strike its pod while it judges.
const napJudge = commandJudgeYaml("nap-judge", { allowlist: ["sleep"] });
// A judge that asks for 300 MB with a limit of 32 MiB (gavel's runtime image, node): its memory limit kills it.
const greedyJudge = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: greedy-judge
  labels:
    role: judge
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    command: ["node", "-e", "const a = []; for (let i = 0; i < 300; i++) a.push(Buffer.alloc(1e6, 1)); console.log(a.length)"]
  security:
    network:
      mode: none
    resources:
      timeout: "60s"
      memory: "32Mi"
  execution:
    mode: one-shot
`;
const napWorker = oneShotWorkerYaml("nap-worker", semanticValidation("nap-judge", "sleep 20"));
const greedyWorker = oneShotWorkerYaml("greedy-worker", semanticValidation("greedy-judge"));

describe("a judge's pod deleted, evicted or OOM-killed (chart-installed controller, real pods)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let runs: Executions;
  let pods: CreatedObjects | undefined;

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    runs = executionsIn(cluster, await cluster.createNamespace("e2e-judge-pod-faults"));
    await runs.apply([napJudge, greedyJudge, napWorker, greedyWorker].join("---"));
  }, 120_000);

  afterAll(async () => {
    await pods?.stop();
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  /** The validation judge child of `run` once it exists. */
  const judgeChild = (run: string): Promise<Execution> =>
    eventually(
      async () => (await runs.childrenOf(run)).find((c) => c.spec.parent?.purpose === "validation"),
      180_000,
      `${run}'s judge child`,
    );
  /** The pod of judge child `child` once its container runs. */
  const runningPod = (child: string): Promise<k8s.V1Pod> =>
    eventually(
      async () =>
        (await core.listNamespacedPod({ namespace: runs.namespace })).items.find(
          (p) => p.metadata?.ownerReferences?.some((o) => o.name === child) === true && p.status?.phase === "Running",
        ),
      180_000,
      `${child}'s judge pod running`,
    );
  const warnings = async (object: string) =>
    (await core.listNamespacedEvent({ namespace: runs.namespace, fieldSelector: `involvedObject.name=${object},type=Warning` })).items;

  it("a deleted or evicted judge pod runs again (JudgePodLost) and its run succeeds; an OOM-killed judge fails naming it; nothing left", async () => {
    pods = await watchCreated(cluster.kc, PODS, runs.namespace);
    await runs.apply(["deleted", "evicted", "oom"].map((n) => executionYaml(n, n === "oom" ? "greedy-worker" : "nap-worker")).join("---"));

    // When one judge pod is deleted and the other evicted while they judge
    const [deletedChild, evictedChild] = await Promise.all([judgeChild("deleted"), judgeChild("evicted")]);
    const [deletedPod, evictedPod] = await Promise.all([runningPod(deletedChild.metadata.name), runningPod(evictedChild.metadata.name)]);
    await cluster.kubectlOk(["delete", "pod", "-n", runs.namespace, deletedPod.metadata?.name ?? "", "--wait=false"]);
    await core.createNamespacedPodEviction({
      name: evictedPod.metadata?.name ?? "",
      namespace: runs.namespace,
      body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: evictedPod.metadata?.name ?? "", namespace: runs.namespace } },
    });

    // Then each judge runs again in a new pod and its run succeeds
    const [deleted, evicted, oom] = await Promise.all([runs.final("deleted"), runs.final("evicted"), runs.final("oom")]);
    expect(deleted.status?.phase, deleted.status?.message).toBe("Succeeded");
    expect(evicted.status?.phase, evicted.status?.message).toBe("Succeeded");
    for (const [child, pod, why] of [
      [deletedChild, deletedPod, /^The judge's pod was stopped before it ended \(deleted\); the judge runs again in a new pod$/],
      [evictedChild, evictedPod, /^The judge's pod was stopped before it ended \(EvictionByEvictionAPI: .*\); the judge runs again/],
    ] as const) {
      expect((await runs.get(child.metadata.name))?.status?.phase).toBe("Succeeded");
      const lost = (await warnings(child.metadata.name)).filter((e) => e.reason === "JudgePodLost");
      expect(lost.map((e) => e.message)).toEqual([expect.stringMatching(why)]);
      // The pod's name seen with two uids: the struck one and the new one.
      expect(pods.recreated().get(pod.metadata?.name ?? "")?.length).toBe(2);
    }

    // An OOM-killed judge fails naming the kill and the limit; its run fails on it
    expect(oom.status?.phase).toBe("Failed");
    const oomChild = (await runs.childrenOf("oom")).find((c) => c.spec.parent?.purpose === "validation");
    expect(oomChild?.status?.phase).toBe("Failed");
    expect(JSON.stringify(oomChild?.status)).toContain(
      "the judge was OOM-killed: it went past its memory limit (security.resources.memory 32Mi) (exit code 137)",
    );
    // No other pod was made twice.
    expect([...pods.recreated().keys()].sort()).toEqual([deletedPod.metadata?.name, evictedPod.metadata?.name].sort());

    // Nothing left once the Executions are deleted
    await cluster.kubectlOk(["delete", "executions", "--all", "-n", runs.namespace, "--wait=true", "--timeout=120s"]);
    const left = async () => (await core.listNamespacedPod({ namespace: runs.namespace })).items.map((p) => p.metadata?.name);
    await eventually(async () => ((await left()).length === 0 ? true : undefined), 120_000, "no pod left").catch(() => undefined);
    expect(await left()).toEqual([]);
  }, 420_000);
});
