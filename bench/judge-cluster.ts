// Judge spawn -> verdict on the single-node cluster, through the chart-installed controller,
// against a bare pod of the same judge image with the same payload created and awaited
// directly, interleaved in the same run. The judged side is timed from the moment the judge
// child Execution appears (watched) to the moment its status holds the verdict; the bare side
// from the pod's create call to its verdict parsed from its log. `shared`: the worker's claim
// (ReadWriteOnce) mounted read-only; `copy`: a ReadWriteOncePod workspace, copied for the judge
// first (ADR 0034), reported separately with the volume's size; `stream`: a tool-call judge of a
// ReadWriteOncePod workspace holding STREAM_BYTES, whose copy is streamed out of the running
// worker's pod through its gavel-copy-source sidecar (ADR 0041, 0044). The judge image is one gavel
// builds, so its pod runs under gavel-launch (mounted from a ConfigMap, ADR 0038) while the bare
// pod runs the image as it is: the ratio includes what keeping stderr apart costs.
import { loadavg } from "node:os";
import * as k8s from "@kubernetes/client-node";
import type { Execution } from "../src/api/types.js";
import { customResource, Informer, podResource } from "../src/controller/runtime/informer.js";
import { AGENT_ENTRYPOINT } from "../src/children/images.js";
import { CHILD_LABELS } from "../src/children/workloads.js";
import { COPY_SOURCE_ANNOTATION, copierName, workloadPodName } from "../src/controller/execution-pods.js";
import { judgeOutcome } from "../src/engine/gradient.js";
import { isFramed } from "../src/runtime/kubernetes/log-streams.js";
import { LABELS, NOBODY, podManifest } from "../src/runtime/kubernetes/pod-spec.js";
import { useCluster, type Cluster } from "../test/harness/cluster.js";
import { executionsIn } from "../test/harness/executions.js";
import { ChartController, installChart } from "../test/harness/gavel-chart.js";
import { percentile } from "./judge-overhead.js";
import type { BenchResult, BenchSuite } from "./types.js";
import { BENCH_JUDGE_YAML, JUDGE_IMAGE, measureWarm, warmResults } from "./judge-cluster-warm.js";

const RUNS = Number(process.env.GAVEL_BENCH_JUDGE_RUNS ?? "8");
/** Which parts run (comma-separated): shared, copy, stream, warm (judge-cluster-warm.ts); default all. */
const VARIANTS = (process.env.GAVEL_BENCH_JUDGE_VARIANTS ?? "shared,copy,stream,warm").split(",").map((v) => v.trim());
const VOLUME_SIZE = "16Mi";
/** What the `stream` variant's worker writes before its one tool call (its judge's copy carries it). */
const STREAM_BYTES = 8 * 1024 * 1024;

/** How the judged side runs: see the head of this file. */
type Variant = "shared" | "copy" | "stream";

/** The `stream` variant's worker: STREAM_BYTES into its ReadWriteOncePod workspace, then one call its tool judge must allow. */
const streamWorkerYaml = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-worker-stream }
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    command: ${JSON.stringify(["sh", "-c", `head -c ${STREAM_BYTES} /dev/urandom > /workspace/data && exec ${AGENT_ENTRYPOINT.join(" ")}`])}
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: cmd.run, args: { command: ls /workspace }, intent: list }]
          - final: listed
  task: { instruction: List the workspace. }
  tools: [{ name: cmd.run, allowlist: [ls] }]
  security: { network: { mode: none } }
  volumes:
    - { name: workspace, mount_path: /workspace, size: ${VOLUME_SIZE}, access_mode: ReadWriteOncePod }
  execution:
    mode: one-shot
    validation: [{ type: exit_code, expected: 0 }]
    tool_validation:
      - { type: semantic, judge_agent: bench-judge, criteria: "the call lists the workspace", min_score: 0 }
`;

function agentsYaml(strategy: Variant): string {
  const judge = `${BENCH_JUDGE_YAML}---`;
  if (strategy === "stream") return judge + streamWorkerYaml;
  return `${judge}
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

/** What the bench watches in its namespace, as it happens (informers). */
async function watchJudging(cluster: Cluster, namespace: string) {
  // By parent: its (one) judge child's name, when it was first seen and when its verdict was.
  const childOf = new Map<string, string>();
  const seen = new Map<string, number>();
  const verdicts = new Map<string, number>();
  const executions = new Informer<Execution>({
    kc: cluster.kc,
    resource: customResource<Execution>(cluster.kc, "execution", "executions"),
    namespaces: [namespace],
  });
  executions.on((_event, obj) => {
    const parent = obj.spec?.parent?.name;
    if (parent === undefined) return;
    if (!childOf.has(parent)) childOf.set(parent, obj.metadata.name);
    if (childOf.get(parent) !== obj.metadata.name)
      throw new Error(`judge-cluster bench: ${parent} has a second judge child, ${obj.metadata.name}`);
    if (!seen.has(parent)) seen.set(parent, performance.now());
    if (obj.status?.verdict !== undefined && !verdicts.has(parent)) verdicts.set(parent, performance.now());
  });
  const ended = new Map<string, number>();
  const pods = new Informer<k8s.V1Pod>({
    kc: cluster.kc,
    resource: podResource(cluster.kc, `${LABELS.instance}=bench`),
    namespaces: [namespace],
  });
  pods.on((_event, pod) => {
    const name = pod.metadata?.name ?? "";
    if ((pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") && !ended.has(name)) ended.set(name, performance.now());
  });
  // The copiers' sources (COPY_SOURCE_ANNOTATION: the worker pod a stream copier was filled from), by copier pod.
  const copiedFrom = new Map<string, string>();
  const copiers = new Informer<k8s.V1Pod>({
    kc: cluster.kc,
    resource: podResource(cluster.kc, `${CHILD_LABELS.role}=copier`),
    namespaces: [namespace],
  });
  copiers.on((_event, pod) => copiedFrom.set(pod.metadata?.name ?? "", pod.metadata?.annotations?.[COPY_SOURCE_ANNOTATION] ?? ""));
  await executions.start();
  await pods.start();
  await copiers.start();
  return {
    childOf,
    seen,
    verdicts,
    ended,
    copiedFrom,
    executions,
    stop: async () => {
      await executions.stop();
      await pods.stop();
      await copiers.stop();
    },
  };
}

/** Timings of one strategy's rounds, alternating which side goes first. */
async function measure(cluster: Cluster, namespace: string, strategy: Variant, runs: number): Promise<Round[]> {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const ex = executionsIn(cluster, namespace, () => new ChartController(cluster).log());
  await ex.apply(agentsYaml(strategy));
  const w = await watchJudging(cluster, namespace);
  const { childOf, seen, verdicts, ended, copiedFrom, executions } = w;
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
    await ex.apply(
      `apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: { name: ${name} }\nspec: { agentRef: { name: bench-worker-${strategy} }, input: { correct_first_time: true } }\n`,
    );
    await wait(() => verdicts.has(name), `the verdict of ${name}'s judge`);
    const child = childOf.get(name) as string;
    // The judge's pod ran under gavel-launch (rule-judge is an image gavel builds): what this bench prices in.
    const judgePod = await core.readNamespacedPod({ name: workloadPodName(child), namespace });
    if (!isFramed(judgePod)) throw new Error(`judge-cluster bench: the pod of ${child} did not run under gavel-launch`);
    const c = executions.get(child, namespace);
    payload = JSON.stringify(c?.spec.input ?? {});
    const done = await ex.final(name, 120_000);
    if (done.status?.phase !== "Succeeded")
      throw new Error(`judge-cluster bench: ${name} ended ${done.status?.phase ?? "?"}: ${done.status?.message ?? ""}`);
    // What this variant prices in: a copier for `copy` and `stream`, and for `stream` one filled out of the worker's pod.
    const source = copiedFrom.get(workloadPodName(copierName(child)));
    const expected = { shared: undefined, copy: "", stream: workloadPodName(`${name}-i1`) }[strategy];
    if (source !== expected)
      throw new Error(
        `judge-cluster bench: ${child}'s copier: expected ${expected === undefined ? "none" : `source "${expected}"`}, saw ${source === undefined ? "none" : `source "${source}"`}`,
      );
    return (verdicts.get(name) as number) - (seen.get(name) as number);
  };
  const bare = async (i: number): Promise<number> => {
    const name = `gavel-bench-bare-${strategy}-${i < 0 ? "w" : i}-bench`;
    const body = podManifest({
      spec: {
        name: `bench-bare-${strategy}-${i}`,
        image: JUDGE_IMAGE,
        env: { GAVEL_INPUT: payload },
        mounts: [],
        network: "none",
        timeoutSeconds: 60,
      },
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
    await w.stop();
  }
}

function results(strategy: Variant, rounds: Round[], notes: string): BenchResult[] {
  const judged = percentile(
    rounds.map((r) => r.judged),
    50,
  );
  const bare = percentile(
    rounds.map((r) => r.bare),
    50,
  );
  const names: Record<Variant, string> = {
    shared: "judge spawn -> verdict p50 on the cluster (shared workspace, under gavel-launch)",
    copy: `judge spawn -> verdict p50 on the cluster (copy of a ${VOLUME_SIZE} ReadWriteOncePod workspace)`,
    stream: `tool-call judge spawn -> verdict p50 on the cluster (copy of a ${VOLUME_SIZE} ReadWriteOncePod workspace holding ${STREAM_BYTES / 2 ** 20} MiB, streamed out of the running worker's pod)`,
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
      target: strategy === "shared" ? "ratio <= 1.3" : "reported",
      met: strategy === "shared" ? judged / bare <= 1.3 : true,
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
      const load = () => `1-min load average ${before.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after`;
      const out: BenchResult[] = [];
      for (const v of ["shared", "copy", "stream"] as const) {
        if (!VARIANTS.includes(v)) continue;
        const rounds = await measure(cluster, namespace, v, v === "shared" ? RUNS : Math.max(3, Math.floor(RUNS / 2)));
        out.push(...results(v, rounds, load()));
      }
      if (VARIANTS.includes("warm")) out.push(...warmResults(await measureWarm(cluster, namespace, RUNS), load()));
      return out;
    } finally {
      await cluster.deleteNamespace(namespace);
    }
  },
};
