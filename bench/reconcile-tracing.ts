// Controller reconcile throughput with tracing on vs off: `gavel controller` as a process against
// a real kube-apiserver, a batch of Executions applied at once, timed until every one has its
// first iteration's worker pod and status written; the same controller traced (OTLP to a real
// Jaeger) and untraced, alternating, each on a fresh namespace. No kubelet: pods stay Pending,
// so what is measured is the reconciles' own work (reads, pod and status writes, spans).
// The bare control plane runs no kube-controller-manager: each namespace gets its `default`
// ServiceAccount from the bench, or the API server refuses every worker pod (that was why the
// first version of this bench saw no Execution start).
import { spawn, type ChildProcess } from "node:child_process";
import * as k8s from "@kubernetes/client-node";
import { join } from "node:path";
import type { Execution } from "../src/api/types.js";
import { startControlPlane, type ControlPlane } from "../test/harness/control-plane.js";
import { eventually } from "../test/harness/eventually.js";
import { startJaeger } from "../test/harness/jaeger.js";
import { REPO_DIR } from "../test/harness/paths.js";
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
const executions = (n: number): string =>
  Array.from({ length: n }, (_, i) => `apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: { name: bench-${i} }\nspec: { agentRef: { name: bench-worker } }\n`).join("---\n");

/** Seconds from applying the batch until every Execution's first iteration is in its status. */
async function oneRound(cp: ControlPlane, otlp: string | undefined): Promise<number> {
  const ns = await cp.createNamespace(otlp === undefined ? "rec-off" : "rec-on");
  const custom = cp.kc.makeApiClient(k8s.CustomObjectsApi);
  // No OTEL_* of this process (bench/tracing.ts sets some) reaches the untraced controller.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("OTEL_")));
  const env: NodeJS.ProcessEnv = { ...base, ...(otlp !== undefined ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_SERVICE_NAME: "gavel-bench-controller" } : {}) };
  const proc: ChildProcess = spawn(join(REPO_DIR, "bin", "gavel"), ["controller", "--kubeconfig", cp.kubeconfigPath, "-n", ns, "--controller-namespace", ns], { stdio: ["ignore", "ignore", "pipe"], env });
  // The controller's log, kept for the error when the batch does not start.
  let log = "";
  proc.stderr?.on("data", (b: Buffer) => (log = (log + b.toString()).slice(-4000)));
  try {
    const apply = async (yaml: string) => {
      const r = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: yaml });
      if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
    };
    await apply(AGENT);
    await eventually(async () => {
      const r = await cp.kubectl(["get", "agent", "bench-worker", "-n", ns, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"]);
      return r.stdout.trim() === "True" ? true : undefined;
    }, 60_000, "the bench Agent Ready");
    const t0 = performance.now();
    await apply(executions(EXECUTIONS));
    await eventually(async () => {
      // One list request per poll from this process (a kubectl per poll would cost the controller CPU).
      const items = ((await custom.listNamespacedCustomObject({ group: "100monkeys.ai", version: "v1", namespace: ns, plural: "executions" })) as { items: Execution[] }).items;
      return items.length === EXECUTIONS && items.every((e) => (e.status?.iterations?.length ?? 0) > 0) ? true : undefined;
    }, { timeoutMs: Number(process.env.GAVEL_BENCH_RECONCILE_TIMEOUT_S ?? "300") * 1000, everyMs: 100, what: `${EXECUTIONS} Executions started` }).catch(async (err: unknown) => {
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
