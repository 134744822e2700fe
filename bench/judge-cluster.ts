// Judge spawn -> verdict on the single-node cluster, through the chart-installed controller,
// against a bare pod of the same judge image with the same payload created and awaited
// directly, interleaved in the same run. The judged side is timed from the moment the judge
// child Execution appears (watched) to the moment its status holds the verdict; the bare side
// from the pod's create call to its verdict parsed from its log. `shared`: the worker's claim
// (ReadWriteOnce) mounted read-only; `copy`: a ReadWriteOncePod workspace, copied for the judge
// first (ADR 0034), reported separately with the volume's size. The judge image is one gavel
// builds, so its pod runs under gavel-launch (mounted from a ConfigMap, ADR 0038) while the bare
// pod runs the image as it is: the ratio includes what keeping stderr apart costs.
import { loadavg } from "node:os";
import * as k8s from "@kubernetes/client-node";
import type { Execution } from "../src/api/types.js";
import { customResource, Informer, podResource } from "../src/controller/runtime/informer.js";
import { workloadPodName } from "../src/controller/execution-pods.js";
import { judgeOutcome } from "../src/engine/gradient.js";
import { isFramed } from "../src/runtime/kubernetes/log-streams.js";
import { LABELS, NOBODY, podManifest } from "../src/runtime/kubernetes/pod-spec.js";
import { useCluster, type Cluster } from "../test/harness/cluster.js";
import { executionsIn } from "../test/harness/executions.js";
import { ChartController, installChart } from "../test/harness/gavel-chart.js";
import { percentile } from "./judge-overhead.js";
import type { BenchResult, BenchSuite } from "./types.js";

const RUNS = Number(process.env.GAVEL_BENCH_JUDGE_RUNS ?? "8");
const JUDGE_IMAGE = "gavel/rule-judge:dev";
const VOLUME_SIZE = "16Mi";

/** How the judged side runs: see the head of this file. */
type Variant = "shared" | "copy";

function agentsYaml(strategy: Variant): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-judge, labels: { role: judge } }
spec:
  runtime: { image: ${JUDGE_IMAGE}, pull_policy: Never }
  security: { network: { mode: none }, resources: { timeout: "60s" } }
  execution: { mode: one-shot }
---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-worker-${strategy} }
spec:
  runtime: { image: gavel/example-k8s-worker:dev, pull_policy: Never }
  security: { network: { mode: none } }
  volumes:
    - { name: workspace, mount_path: /workspace, size: ${VOLUME_SIZE}, access_mode: ${strategy === "copy" ? "ReadWriteOncePod" : "ReadWriteOnce"} }
  execution:
    mode: one-shot
    validation:
      - { type: semantic, judge_agent: bench-judge, criteria: "the report says success", min_score: 0 }
`;
}

interface Round {
  judged: number;
  bare: number;
}

/** Timings of one strategy's rounds, alternating which side goes first. */
async function measure(cluster: Cluster, namespace: string, strategy: Variant, runs: number): Promise<Round[]> {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const ex = executionsIn(cluster, namespace, () => new ChartController(cluster).log());
  await ex.apply(agentsYaml(strategy));
  const seen = new Map<string, number>();
  const verdicts = new Map<string, number>();
  const executions = new Informer<Execution>({ kc: cluster.kc, resource: customResource<Execution>(cluster.kc, "execution", "executions"), namespaces: [namespace] });
  executions.on((_event, obj) => {
    const name = obj.metadata.name;
    if (obj.spec?.parent === undefined) return;
    if (!seen.has(name)) seen.set(name, performance.now());
    if (obj.status?.verdict !== undefined && !verdicts.has(name)) verdicts.set(name, performance.now());
  });
  const ended = new Map<string, number>();
  const pods = new Informer<k8s.V1Pod>({ kc: cluster.kc, resource: podResource(cluster.kc, `${LABELS.instance}=bench`), namespaces: [namespace] });
  pods.on((_event, pod) => {
    const name = pod.metadata?.name ?? "";
    if ((pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") && !ended.has(name)) ended.set(name, performance.now());
  });
  await executions.start();
  await pods.start();
  const wait = async (done: () => boolean, what: string): Promise<void> => {
    const until = Date.now() + 180_000;
    while (!done()) {
      if (Date.now() > until) throw new Error(`judge-cluster bench: ${what} did not happen within 180 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  let payload = "{}";
  const judged = async (i: number): Promise<number> => {
    const name = `bench-${strategy}-${i < 0 ? "w" : i}`;
    const child = `${name}-i1-v0-bench-judge`;
    await ex.apply(`apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: { name: ${name} }\nspec: { agentRef: { name: bench-worker-${strategy} }, input: { correct_first_time: true } }\n`);
    await wait(() => verdicts.has(child), `the verdict of ${child}`);
    // The judge's pod ran under gavel-launch (rule-judge is an image gavel builds): what this bench prices in.
    const judgePod = await core.readNamespacedPod({ name: workloadPodName(child), namespace });
    if (!isFramed(judgePod)) throw new Error(`judge-cluster bench: the pod of ${child} did not run under gavel-launch`);
    const c = executions.get(child, namespace);
    payload = JSON.stringify(c?.spec.input ?? {});
    await ex.final(name, 120_000);
    return (verdicts.get(child) as number) - (seen.get(child) as number);
  };
  const bare = async (i: number): Promise<number> => {
    const name = `gavel-bench-bare-${strategy}-${i < 0 ? "w" : i}-bench`;
    const body = podManifest({
      spec: { name: `bench-bare-${strategy}-${i}`, image: JUDGE_IMAGE, env: { GAVEL_INPUT: payload }, mounts: [], network: "none", timeoutSeconds: 60 },
      name,
      instance: "bench",
      user: NOBODY,
      imagePullPolicy: "Never",
    });
    const t0 = performance.now();
    await core.createNamespacedPod({ namespace, body });
    await wait(() => ended.has(name), `bare pod ${name} to end`);
    const log = await core.readNamespacedPodLog({ name, namespace, container: "main" });
    const outcome = judgeOutcome({ exitCode: 0, stdout: log });
    const t1 = performance.now();
    if (!outcome.ok) throw new Error(`bare pod ${name}: no verdict (${outcome.rejection}: ${outcome.detail})`);
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    return t1 - t0;
  };
  try {
    // Warm-up: images into the page cache, the namespace's NetworkPolicy, the payload.
    await judged(-1);
    await bare(-1);
    const out: Round[] = [];
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) out.push({ judged: await judged(i), bare: await bare(i) });
      else {
        const b = await bare(i);
        out.push({ judged: await judged(i), bare: b });
      }
    }
    return out;
  } finally {
    await executions.stop();
    await pods.stop();
  }
}

function results(strategy: Variant, rounds: Round[], notes: string): BenchResult[] {
  const judged = percentile(rounds.map((r) => r.judged), 50);
  const bare = percentile(rounds.map((r) => r.bare), 50);
  const names: Record<Variant, string> = {
    shared: "judge spawn -> verdict p50 on the cluster (shared workspace, under gavel-launch)",
    copy: `judge spawn -> verdict p50 on the cluster (copy of a ${VOLUME_SIZE} ReadWriteOncePod workspace)`,
  };
  const name = names[strategy];
  return [
    {
      name,
      baselineName: "bare pod of the same judge image and payload, created and awaited directly",
      baseline: bare,
      value: judged,
      unit: "ms",
      ratio: judged / bare,
      target: strategy === "copy" ? "reported" : "ratio <= 1.3",
      met: strategy === "copy" ? true : judged / bare <= 1.3,
      notes: `${rounds.length} interleaved rounds; added p50 ${(judged - bare).toFixed(0)} ms; ${notes}`,
    },
  ];
}

export const suite: BenchSuite = {
  name: "judge-cluster",
  needs: ["cluster"],
  async run(): Promise<BenchResult[]> {
    const cluster = await useCluster();
    await installChart(cluster);
    await new ChartController(cluster).ready();
    const namespace = await cluster.createNamespace("bench-judge");
    try {
      const before = loadavg()[0] ?? 0;
      const shared = await measure(cluster, namespace, "shared", RUNS);
      const copy = await measure(cluster, namespace, "copy", Math.max(3, Math.floor(RUNS / 2)));
      const load = `1-min load average ${before.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after`;
      return [...results("shared", shared, load), ...results("copy", copy, load)];
    } finally {
      await cluster.deleteNamespace(namespace);
    }
  },
};
