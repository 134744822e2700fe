// Controller reconcile throughput with tracing on vs off, measured two ways (docs/benchmarks.md, "Tracing
// overhead"; ADR 0047):
// - `reconcile-tracing`: `gavel controller` as a process against a bare kube-apiserver, a batch
//   of Executions applied at once, timed until every one has its first iteration's worker pod and
//   status written; traced (OTLP to a real Jaeger) and untraced, alternating, each on a fresh
//   namespace. No kubelet: pods stay Pending, so what is measured is the reconciles' own work
//   (reads, pod and status writes, spans started), and no span ends, so none is exported.
//   The bare control plane runs no kube-controller-manager: each namespace gets its `default`
//   ServiceAccount from the bench, or the API server refuses every worker pod.
// - `reconcile-tracing-cluster`: the chart-installed controller pod on the single-node cluster,
//   a batch of Executions whose worker pods run and exit, timed until every one is Succeeded;
//   the release's tracing.otlpEndpoint set (a real Jaeger on the node's address) and unset,
//   alternating. Every span ends and is exported, and the controller's CPU seconds over the
//   round (its own process_cpu_seconds_total) say what the spans and their export cost.
import { spawn, type ChildProcess } from "node:child_process";
import { loadavg } from "node:os";
import * as k8s from "@kubernetes/client-node";
import { join } from "node:path";
import type { Execution } from "../src/api/types.js";
import { useCluster, type Cluster } from "../test/harness/cluster.js";
import { startControlPlane, type ControlPlane } from "../test/harness/control-plane.js";
import { eventually } from "../test/harness/eventually.js";
import { ChartController, installChart } from "../test/harness/gavel-chart.js";
import { startJaeger, type Jaeger } from "../test/harness/jaeger.js";
import { parseSamples, scrapeControllers, sumBy } from "../test/harness/metrics.js";
import { NODE_IP, REPO_DIR } from "../test/harness/paths.js";
import { percentile } from "./load.js";
import type { BenchResult, BenchSuite } from "./types.js";

const EXECUTIONS = Number(process.env.GAVEL_BENCH_RECONCILE_EXECUTIONS ?? "40");
const ROUNDS = Number(process.env.GAVEL_BENCH_RECONCILE_ROUNDS ?? "3");

const AGENT = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-worker }
spec:
  runtime: { image: gavel/base:bookworm-node20, pull_policy: Never }
  task: { instruction: "write the report" }
  execution: { mode: one-shot, validation: [{ type: exit_code }] }
`;
const executions = (n: number, agent = "bench-worker"): string =>
  Array.from(
    { length: n },
    (_, i) => `apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: { name: bench-${i} }\nspec: { agentRef: { name: ${agent} } }\n`,
  ).join("---\n");

/** Seconds from applying the batch until every Execution's first iteration is in its status. */
async function oneRound(cp: ControlPlane, otlp: string | undefined): Promise<number> {
  const ns = await cp.createNamespace(otlp === undefined ? "rec-off" : "rec-on");
  const custom = cp.kc.makeApiClient(k8s.CustomObjectsApi);
  // No OTEL_* of this process (bench/tracing.ts sets some) reaches the untraced controller.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("OTEL_")));
  const env: NodeJS.ProcessEnv = {
    ...base,
    ...(otlp !== undefined ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_SERVICE_NAME: "gavel-bench-controller" } : {}),
  };
  const proc: ChildProcess = spawn(
    join(REPO_DIR, "bin", "gavel"),
    ["controller", "--kubeconfig", cp.kubeconfigPath, "-n", ns, "--controller-namespace", ns],
    { stdio: ["ignore", "ignore", "pipe"], env },
  );
  // The controller's log, kept for the error when the batch does not start.
  let log = "";
  proc.stderr?.on("data", (b: Buffer) => (log = (log + b.toString()).slice(-4000)));
  try {
    const apply = async (yaml: string) => {
      const r = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: yaml });
      if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
    };
    await apply(AGENT);
    await eventually(
      async () => {
        const r = await cp.kubectl([
          "get",
          "agent",
          "bench-worker",
          "-n",
          ns,
          "-o",
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        return r.stdout.trim() === "True" ? true : undefined;
      },
      60_000,
      "the bench Agent Ready",
    );
    const t0 = performance.now();
    await apply(executions(EXECUTIONS));
    await eventually(
      async () => {
        // One list request per poll from this process (a kubectl per poll would cost the controller CPU).
        const items = (
          (await custom.listNamespacedCustomObject({ group: "100monkeys.ai", version: "v1", namespace: ns, plural: "executions" })) as {
            items: Execution[];
          }
        ).items;
        return items.length === EXECUTIONS && items.every((e) => (e.status?.iterations?.length ?? 0) > 0) ? true : undefined;
      },
      {
        timeoutMs: Number(process.env.GAVEL_BENCH_RECONCILE_TIMEOUT_S ?? "300") * 1000,
        everyMs: 100,
        what: `${EXECUTIONS} Executions started`,
      },
    ).catch(async (err: unknown) => {
      const one = await cp.kubectl(["get", "execution", "bench-0", "-n", ns, "-o", "yaml"]);
      throw new Error(`${String(err)}\nbench-0:\n${one.stdout}\ncontroller log (tail):\n${log}`);
    });
    return (performance.now() - t0) / 1000;
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
  }
}

/** Reconcile throughput of the traced controller against the untraced one. */
export async function runReconcileTracingBench(): Promise<BenchResult[]> {
  const jaeger = await startJaeger();
  const cp = await startControlPlane();
  try {
    const off: number[] = [];
    const on: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      off.push(EXECUTIONS / (await oneRound(cp, undefined)));
      on.push(EXECUTIONS / (await oneRound(cp, jaeger.otlpEndpoint)));
    }
    const exported = (await jaeger.traces("gavel-bench-controller", {}, 1000)).length;
    const value = percentile(on, 50);
    const baseline = percentile(off, 50);
    return [
      {
        name: `controller reconcile throughput, tracing on (${EXECUTIONS} Executions to their first iteration)`,
        baselineName: "the same controller, tracing off",
        baseline,
        value,
        unit: "Executions/s",
        ratio: value / baseline,
        target: "ratio >= 0.9",
        met: value / baseline >= 0.9,
        notes: `gavel controller processes against a real kube-apiserver (no kubelet: worker pods stay Pending), ${ROUNDS} alternating rounds each on a fresh namespace, median; rates off ${off.map((x) => x.toFixed(1)).join(", ")}, on ${on.map((x) => x.toFixed(1)).join(", ")} Executions/s; ${exported} traces of the traced rounds in Jaeger`,
      },
    ];
  } finally {
    await cp.stop();
    await jaeger.stop();
  }
}

// Needs no cluster: its own etcd + kube-apiserver (test/harness/control-plane.sh) and Jaeger.
export const suite: BenchSuite = { name: "reconcile-tracing", needs: [], run: runReconcileTracingBench };

const CLUSTER_EXECUTIONS = Number(process.env.GAVEL_BENCH_RECONCILE_CLUSTER_EXECUTIONS ?? "20");
const CLUSTER_ROUNDS = Number(process.env.GAVEL_BENCH_RECONCILE_CLUSTER_ROUNDS ?? "2");
/** After the last Execution ends: longer than the span processor's 5 s batch delay, so the export is in the CPU figure. */
const SETTLE_MS = 8_000;

/** A worker that exits 0 at once (gavel's base image, under gavel-launch): the iteration is the pod's life. */
const CLUSTER_AGENT = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-exits }
spec:
  runtime: { image: gavel/base:bookworm-node20, pull_policy: Never, command: ["true"] }
  task: { instruction: "exit" }
  security: { network: { mode: none } }
  execution: { mode: one-shot, validation: [{ type: exit_code, expected: 0 }] }
`;

interface ClusterRound {
  /** Executions per second, from the apply to the last one Succeeded. */
  rate: number;
  /** The controller's CPU milliseconds per Execution over the round (its export included). */
  cpuMs: number;
  /** Traces of the round's namespace in Jaeger (traced rounds). */
  traces?: number;
}

/** The controller pod's process CPU seconds and whether it holds the execution controller's Lease. */
async function controllerState(cluster: Cluster, controller: ChartController): Promise<{ cpu: number; leader: boolean }> {
  const [text, ...more] = await scrapeControllers(cluster, controller);
  if (text === undefined || more.length > 0)
    throw new Error(`want one controller pod, scraped ${more.length + (text === undefined ? 0 : 1)}`);
  const samples = parseSamples(text);
  const leader =
    sumBy(samples, "leader_election_master_status", ["name"]).get(JSON.stringify({ name: "gavel-execution-controller" })) === 1;
  return { cpu: sumBy(samples, "process_cpu_seconds_total", []).get("{}") ?? 0, leader };
}

/** One round on the cluster: the release configured with or without tracing, a batch run to Succeeded. */
async function clusterRound(cluster: Cluster, jaeger: Jaeger | undefined): Promise<ClusterRound> {
  const controller = new ChartController(cluster);
  await installChart(cluster, jaeger === undefined ? [] : ["--set-string", `tracing.otlpEndpoint=${jaeger.otlpEndpoint}`]);
  await controller.ready();
  // A new pod is ready as a standby: wait until it leads, so the round does not time the Lease hand-over.
  await eventually(async () => ((await controllerState(cluster, controller)).leader ? true : undefined), {
    timeoutMs: 60_000,
    what: "the new controller pod to hold the Lease",
  });
  const ns = await cluster.createNamespace(jaeger === undefined ? "rec-off" : "rec-on");
  const custom = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    const apply = async (yaml: string) => {
      const r = await cluster.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: yaml });
      if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
    };
    await apply(CLUSTER_AGENT);
    await eventually(
      async () => {
        const r = await cluster.kubectl([
          "get",
          "agent",
          "bench-exits",
          "-n",
          ns,
          "-o",
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        return r.stdout.trim() === "True" ? true : undefined;
      },
      60_000,
      "the bench Agent Ready",
    );
    const before = await controllerState(cluster, controller);
    const t0 = performance.now();
    await apply(executions(CLUSTER_EXECUTIONS, "bench-exits"));
    // A run that ends otherwise ends the wait at once (a throw in the probe would be retried).
    const failed = await eventually(
      async () => {
        const items = (
          (await custom.listNamespacedCustomObject({ group: "100monkeys.ai", version: "v1", namespace: ns, plural: "executions" })) as {
            items: Execution[];
          }
        ).items;
        const bad = items.find((e) => ["Failed", "TimedOut", "Cancelled"].includes(e.status?.phase ?? ""));
        if (bad !== undefined) return `${bad.metadata.name} ended ${bad.status?.phase ?? ""}: ${bad.status?.message ?? ""}`;
        return items.length === CLUSTER_EXECUTIONS && items.every((e) => e.status?.phase === "Succeeded") ? "" : undefined;
      },
      {
        timeoutMs: Number(process.env.GAVEL_BENCH_RECONCILE_TIMEOUT_S ?? "600") * 1000,
        everyMs: 250,
        what: `${CLUSTER_EXECUTIONS} Executions Succeeded`,
      },
    );
    const seconds = (performance.now() - t0) / 1000;
    if (failed !== "") throw new Error(failed);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const after = await controllerState(cluster, controller);
    const round: ClusterRound = { rate: CLUSTER_EXECUTIONS / seconds, cpuMs: ((after.cpu - before.cpu) * 1000) / CLUSTER_EXECUTIONS };
    if (jaeger !== undefined) round.traces = (await jaeger.traces("gavel-controller", { "k8s.namespace.name": ns }, 1000)).length;
    return round;
  } finally {
    await cluster.deleteNamespace(ns);
  }
}

/** The chart-installed controller's throughput and CPU per Execution, traced against untraced. */
export async function runReconcileTracingClusterBench(): Promise<BenchResult[]> {
  const cluster = await useCluster();
  const jaeger = await startJaeger(NODE_IP);
  const load0 = loadavg()[0] ?? 0;
  const off: ClusterRound[] = [];
  const on: ClusterRound[] = [];
  try {
    for (let r = 0; r < CLUSTER_ROUNDS; r++) {
      off.push(await clusterRound(cluster, undefined));
      on.push(await clusterRound(cluster, jaeger));
    }
  } finally {
    // The release as the e2e tier installs it (no tracing unless its Jaeger runs).
    await installChart(cluster).catch((err: unknown) => process.stderr.write(`[bench] reinstalling the chart: ${String(err)}\n`));
    await jaeger.stop();
  }
  const med = (xs: ClusterRound[], f: (r: ClusterRound) => number) => percentile(xs.map(f), 50);
  const fmt = (xs: ClusterRound[], f: (r: ClusterRound) => number) => xs.map((x) => f(x).toFixed(2)).join(", ");
  const exported = on.map((r) => r.traces ?? 0);
  const setting = `the chart's controller pod on the single-node cluster, ${CLUSTER_EXECUTIONS} Executions (a worker pod that exits 0, exit_code validator) applied at once and run to Succeeded, ${CLUSTER_ROUNDS} alternating rounds (a helm upgrade setting or unsetting tracing.otlpEndpoint before each), median; load average ${load0.toFixed(1)} at the start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end; traces in Jaeger after the traced rounds: ${exported.join(", ")} (of ${CLUSTER_EXECUTIONS} each)`;
  const rate = { on: med(on, (r) => r.rate), off: med(off, (r) => r.rate) };
  const cpu = { on: med(on, (r) => r.cpuMs), off: med(off, (r) => r.cpuMs) };
  const allExported = exported.every((n) => n === CLUSTER_EXECUTIONS);
  return [
    {
      name: `controller throughput on the cluster, tracing on (${CLUSTER_EXECUTIONS} Executions to Succeeded, spans exported)`,
      baselineName: "the same controller, tracing off",
      baseline: rate.off,
      value: rate.on,
      unit: "Executions/s",
      ratio: rate.on / rate.off,
      target: "ratio >= 0.9",
      met: rate.on / rate.off >= 0.9 && allExported,
      notes: `${setting}; rates off ${fmt(off, (r) => r.rate)}, on ${fmt(on, (r) => r.rate)} Executions/s`,
    },
    {
      name: "controller CPU per Execution on the cluster, tracing on (its spans and their OTLP export included)",
      baselineName: "the same controller, tracing off",
      baseline: cpu.off,
      value: cpu.on,
      unit: "ms",
      ratio: cpu.on / cpu.off,
      target: "ratio <= 1.11 (>= 0.9x Executions per CPU second)",
      met: cpu.on / cpu.off <= 1 / 0.9 && allExported,
      notes: `${setting}; CPU ms per Execution (the controller process over the round, from the apply to ${SETTLE_MS / 1000} s after the last Succeeded) off ${fmt(off, (r) => r.cpuMs)}, on ${fmt(on, (r) => r.cpuMs)}`,
    },
  ];
}

// Needs the single-node cluster (brought up if it is not) and the chart, which it reconfigures:
// run it alone (never beside the e2e tier).
export const clusterSuite: BenchSuite = { name: "reconcile-tracing-cluster", needs: ["cluster"], run: runReconcileTracingClusterBench };
