// Gate round trip on the cluster: a worker pod of a real Execution proposes guard-only tool
// calls (fs.read skips the judges; the real guard decides) to the gate in the chart-installed
// controller pod, over the chart's NATS, with the credential the controller minted for that
// Execution; the same pod makes bare request/reply calls of the same bytes to an echo pod
// over the same NATS. Interleaved rounds in the same run, paced to well under 100 µs, each
// latency from its actual send (bench/load.ts). The pods' program: bench/gate-cluster-pod.ts.
// Method: docs/adr/0026-gate-benchmark-on-the-cluster.md.
import { loadavg } from "node:os";
import * as k8s from "@kubernetes/client-node";
import type { Execution } from "../src/api/types.js";
import { CREDENTIALS_KEYS } from "../src/controller/nats-secrets.js";
import { issueUser } from "../src/transport/credentials.js";
import { eventually, useCluster, type Cluster } from "../test/harness/cluster.js";
import { run } from "../test/harness/exec.js";
import { executionsIn } from "../test/harness/executions.js";
import { ChartController, installChart, RELEASE, RELEASE_NAMESPACE } from "../test/harness/gavel-chart.js";
import { KUBECTL } from "../test/harness/paths.js";
import { ECHO_INBOX, ECHO_SUBJECT, RESULT_MARK, type PodPlan, type PodResult, type RateResult } from "./gate-cluster-pod.js";
import type { BenchResult, BenchSuite } from "./types.js";

const IMAGE = "gavel/bench:dev";
const ECHO_SECRET = "bench-echo-nats";
const EXECUTION = "gate-bench";

/** Comma-separated rates (calls/s) from an environment variable; "" is none. */
function ratesFrom(name: string, fallback: number[]): number[] {
  const v = process.env[name];
  if (v === undefined) return fallback;
  const rates = v
    .split(",")
    .filter((r) => r.trim() !== "")
    .map(Number);
  const bad = rates.find((r) => !Number.isFinite(r) || r <= 0);
  if (bad !== undefined) throw new Error(`${name}: "${v}" is not a comma-separated list of rates (calls/s)`);
  return rates;
}

/**
 * The measurement; GAVEL_BENCH_CLUSTER_ROUNDS / _SECONDS shorten or lengthen it, _RATES and
 * _LADDER (comma-separated calls/s, "" for no ladder) narrow it while iterating on a change.
 */
export function defaultPlan(): PodPlan {
  return {
    rates: ratesFrom("GAVEL_BENCH_CLUSTER_RATES", [200, 1000]),
    rounds: Number(process.env.GAVEL_BENCH_CLUSTER_ROUNDS ?? "4"),
    seconds: Number(process.env.GAVEL_BENCH_CLUSTER_SECONDS ?? "3"),
    ladder: ratesFrom("GAVEL_BENCH_CLUSTER_LADDER", [50, 100, 200, 500, 1000, 2000, 4000, 8000]),
    ladderSeconds: Number(process.env.GAVEL_BENCH_CLUSTER_SECONDS ?? "3"),
    p99LimitMs: 5,
  };
}

const agentYaml = (plan: PodPlan): string => `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: gate-bench
spec:
  runtime:
    image: ${IMAGE}
    pull_policy: Never
    env:
      - name: BENCH_ECHO_CREDS
        valueFrom:
          secretKeyRef: { name: ${ECHO_SECRET}, key: nats.creds }
      - name: BENCH_PLAN
        value: '${JSON.stringify(plan)}'
  task:
    instruction: Propose guard-only tool calls at the bench's rates and time their decisions.
  tools:
    - fs.read
  security:
    network:
      mode: allow
    resources:
      timeout: "1200s"
  execution:
    mode: one-shot
    validation:
      - type: exit_code
        expected: 0
`;

const executionYaml = `
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: ${EXECUTION}
spec:
  agentRef:
    name: gate-bench
`;

/** A user of gavel's account that may only call and answer the echo (what the echo pod and the load pod's echo connection use). */
async function echoCredentials(core: k8s.CoreV1Api, namespace: string): Promise<void> {
  const keys = await core.readNamespacedSecret({ name: `${RELEASE}-nats-credentials`, namespace: RELEASE_NAMESPACE });
  const key = (k: string): string => {
    const v = keys.data?.[k];
    if (v === undefined) throw new Error(`Secret ${RELEASE_NAMESPACE}/${RELEASE}-nats-credentials has no key ${k}`);
    return Buffer.from(v, "base64").toString("utf8").trim();
  };
  const allow = { allow: [ECHO_SUBJECT, `${ECHO_INBOX}.>`] };
  const user = issueUser(
    { accountSigningSeed: key(CREDENTIALS_KEYS.accountSigningSeed), account: key(CREDENTIALS_KEYS.account) },
    "gavel-bench-echo",
    { pub: allow, sub: allow },
    { expiresAt: Math.floor(Date.now() / 1000) + 3600 },
  );
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: ECHO_SECRET }, stringData: { "nats.creds": user.creds } } });
}

function echoPod(): k8s.V1Pod {
  return {
    metadata: { name: "echo", labels: { app: "gavel-bench-echo" } },
    spec: {
      restartPolicy: "Never",
      containers: [
        {
          name: "echo",
          image: IMAGE,
          imagePullPolicy: "Never",
          args: ["echo"],
          env: [
            // The URL the controller gives worker pods (the chart's NATS Service).
            { name: "BENCH_NATS_URL", value: `nats://${RELEASE}-nats.${RELEASE_NAMESPACE}.svc:4222` },
            { name: "BENCH_ECHO_CREDS", valueFrom: { secretKeyRef: { name: ECHO_SECRET, key: "nats.creds" } } },
          ],
        },
      ],
    },
  };
}

/** Runs the pods in `namespace` and returns the load pod's result, its log and the Execution as it ended (Succeeded). */
export async function runPods(
  cluster: Cluster,
  namespace: string,
  plan: PodPlan,
): Promise<{ result: PodResult; log: string; ex: Execution }> {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const ex = executionsIn(cluster, namespace, () => new ChartController(cluster).log());
  await echoCredentials(core, namespace);
  await core.createNamespacedPod({ namespace, body: echoPod() });
  await ex.apply(agentYaml(plan));
  await ex.apply(executionYaml);
  // The worker pod's log from its start (the pod is gone soon after its Execution ends).
  const pod = await eventually(
    async () => {
      const [name] = await ex.podsOf(EXECUTION);
      if (name === undefined) return undefined;
      const p = await core.readNamespacedPod({ name, namespace });
      const state = p.status?.containerStatuses?.[0]?.state;
      return state?.running !== undefined || state?.terminated !== undefined ? name : undefined;
    },
    180_000,
    `the worker pod of Execution ${EXECUTION} running`,
  );
  const perRun =
    plan.rounds * plan.rates.length * 2 * plan.seconds +
    plan.ladder.reduce((s, rate) => s + 2 * Math.max(plan.ladderSeconds, 600 / rate), 0);
  const logs = await run(KUBECTL, ["--kubeconfig", cluster.kubeconfigPath, "logs", "-f", "-n", namespace, pod, "-c", "main"], {
    timeoutMs: (perRun + 300) * 1000,
  });
  const log = logs.stdout + logs.stderr;
  // Each measurement's figures as the pod logged them: a trend across rounds shows here.
  for (const l of log.split("\n")) if (l.startsWith("[bench] ")) process.stderr.write(`[bench] pod: ${l.slice(8)}\n`);
  const line = log.split("\n").find((l) => l.startsWith(RESULT_MARK));
  if (line === undefined) {
    const why = (await ex.get(EXECUTION))?.status?.message ?? "";
    throw new Error(`the load pod ${pod} printed no result (${why}); its log:\n${log.slice(-3000)}`);
  }
  const ended = await ex.final(EXECUTION, 120_000);
  if (ended.status?.phase !== "Succeeded")
    throw new Error(`Execution ${EXECUTION} ended ${ended.status?.phase ?? "?"}: ${ended.status?.message ?? ""}`);
  return { result: JSON.parse(line.slice(RESULT_MARK.length)) as PodResult, log, ex: ended };
}

export async function runGateClusterBench(): Promise<BenchResult[]> {
  const cluster = await useCluster();
  await installChart(cluster);
  await new ChartController(cluster).ready();
  const namespace = await cluster.createNamespace("bench-gate");
  const plan = defaultPlan();
  try {
    const before = loadavg()[0] ?? 0;
    const { result, ex } = await runPods(cluster, namespace, plan);
    const after = loadavg()[0] ?? 0;
    const recorded = ex.status?.toolCalls?.proposed;
    const lagUs = (r: RateResult, p: "p50" | "p99"): string => (r.lag[p] * 1000).toFixed(0);
    const decide = `the gate's own decide (its decisions' latencyMs) took p50 ${(result.decide.p50 * 1000).toFixed(0)} µs, p99 ${(result.decide.p99 * 1000).toFixed(0)} µs`;
    const context = `${decide}; ${plan.rounds} interleaved rounds of ${plan.seconds} s per rate (echo and gate alternating first), open loop paced by a sleeping thread, latency from each call's actual send; ${result.decisions} gate calls, every one allowed by the guard alone, ${recorded ?? "?"} recorded in the Execution's status; 1-min load average ${before.toFixed(2)} before, ${after.toFixed(2)} after`;
    const out: BenchResult[] = [];
    for (const r of result.rates) {
      const rate = r.rate.toLocaleString("en-US");
      const notes = `${r.gate.n} gate / ${r.echo.n} echo calls at ${rate}/s; sends late by p50 ${lagUs(r, "p50")} µs, p99 ${lagUs(r, "p99")} µs; ${context}`;
      for (const [p, target] of [
        ["p50", 1.5],
        ["p99", 2],
      ] as const) {
        out.push({
          name: `gate round trip ${p} from a pod (real guard, skip_judge, ${rate} calls/s)`,
          baselineName: "bare NATS request/reply echo between two pods",
          baseline: r.echo[p],
          value: r.gate[p],
          unit: "ms",
          ratio: r.gate[p] / r.echo[p],
          target: `ratio <= ${target}`,
          met: r.gate[p] / r.echo[p] <= target,
          notes,
        });
      }
      for (const p of ["p50", "p99"] as const) {
        const added = (r.gate[p] - r.echo[p]) * 1000;
        out.push({
          name: `gate added time ${p} from a pod (${rate} calls/s)`,
          baselineName: "echo round trip",
          baseline: r.echo[p] * 1000,
          value: added,
          unit: "µs",
          ratio: added / (r.echo[p] * 1000),
          target: "reported",
          met: true,
          notes,
        });
      }
    }
    if (plan.ladder.length === 0) return out;
    const steps = result.ladder.map((s) => `${s.kind} ${s.rate}/s p99 ${s.p99.toFixed(2)} ms${s.passed ? "" : " (fails)"}`).join(", ");
    out.push({
      name: "highest rate with p99 < 5 ms from a pod (gate, real guard)",
      baselineName: "echo between two pods, p99 < 5 ms",
      baseline: result.maxRate.echo,
      value: result.maxRate.gate,
      unit: "calls/s",
      ratio: result.maxRate.echo > 0 ? result.maxRate.gate / result.maxRate.echo : 0,
      target: "reported",
      met: true,
      notes: `rates ${plan.ladder.join(", ")} for ${plan.ladderSeconds} s each (600 calls at least) until p99 reached ${plan.p99LimitMs} ms or under 95 % of the rate was issued: ${steps}`,
    });
    return out;
  } finally {
    await cluster.deleteNamespace(namespace);
  }
}

export const suite: BenchSuite = { name: "gate-cluster", needs: ["cluster"], run: runGateClusterBench };
