// Tool-call judges on the single-node cluster, warm (ADR 0070) against cold against a bare pod,
// interleaved in the same run, through the chart-installed controller. Two running workers
// (their pods only sleep) whose tool_validation names the rule judge: `warm` keeps one warm pod
// per judge (the default), `cold` none (annotation gavel.dev/warm-judges: "0"). Each round makes
// one tool-judge child of each, as the gate does (toolJudgeChild, createJudgeChild: the gate's
// own builders, a `cmd.run ls` proposal), timed from the moment the child appears (watched) to
// the moment its status holds the verdict, and a bare pod of the judge image with the same
// payload (create call -> verdict parsed from its log). A warm round waits first for the pool's
// pod to be ready again (that refill is reported apart). Then a burst: 20 children at once
// against a pool of 4 (the chart's cap): 4 warm, the rest drained to the cold path.
import * as k8s from "@kubernetes/client-node";
import type { Agent, Execution } from "../src/api/types.js";
import { toolJudgeChild } from "../src/children/child-executions.js";
import { CHILD_LABELS } from "../src/children/workloads.js";
import { GavelResources } from "../src/controller/gavel-resources.js";
import { WARM_CLAIM_ANNOTATION, WARM_ROLE } from "../src/controller/warm-judge-pods.js";
import { customResource, Informer, podResource } from "../src/controller/runtime/informer.js";
import { workspaceMounts } from "../src/controller/execution-pods.js";
import { withDefaults } from "../src/api/defaults.js";
import { judgeOutcome } from "../src/engine/gradient.js";
import { LABELS, NOBODY, podManifest } from "../src/runtime/kubernetes/pod-spec.js";
import type { Cluster } from "../test/harness/cluster.js";
import { executionsIn } from "../test/harness/executions.js";
import { ChartController } from "../test/harness/gavel-chart.js";
import { percentile } from "./judge-overhead.js";
import type { BenchResult } from "./types.js";

/** The judge every judge-cluster variant uses: the shipped rule judge. */
export const JUDGE_IMAGE = "gavel/rule-judge:dev";
const BURST = 20;
const BURST_POOL = 4;

/** The judge Agent of every judge-cluster variant (a one-shot rule judge, no network). */
export const BENCH_JUDGE_YAML = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-judge, labels: { role: judge } }
spec:
  runtime: { image: ${JUDGE_IMAGE}, pull_policy: Never }
  security: { network: { mode: none }, resources: { timeout: "60s" } }
  execution: { mode: one-shot }
`;

const agentsYaml = `${BENCH_JUDGE_YAML}${[
  ["warm", undefined],
  ["cold", "0"],
  ["burst", String(BURST_POOL)],
]
  .map(
    ([name, pool]) => `---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: bench-${name}${pool === undefined ? "" : `, annotations: { gavel.dev/warm-judges: "${pool}" }`} }
spec:
  runtime: { image: gavel/agent:dev, pull_policy: Never, command: ["sh", "-c", "sleep 900"] }
  task: { instruction: List the workspace. }
  tools: [{ name: cmd.run, allowlist: [ls] }]
  security: { network: { mode: none }, resources: { timeout: "1000s" } }
  volumes: [{ name: workspace, mount_path: /workspace, size: 16Mi }]
  execution:
    mode: one-shot
    validation: [{ type: exit_code, expected: 0 }]
    tool_validation: [{ type: semantic, judge_agent: bench-judge, criteria: "the call lists the workspace", min_score: 0 }]
`,
  )
  .join("")}`;

/** What the warm bench measured. */
export interface WarmRounds {
  warm: number[];
  cold: number[];
  bare: number[];
  /** Seconds from a warm call's verdict until its pool had a ready pod again. */
  refill: number[];
  /** Warm rounds whose child the controller still ran cold (its cache had not seen the ready pod yet): not in `warm`. */
  missed: number;
  burst: { warm: number[]; cold: number[] };
}

const wait = async (done: () => boolean, what: string, ms = 180_000): Promise<void> => {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`judge-cluster bench (warm): ${what} did not happen within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** What the bench watches in its namespace, as it happens: children seen and judged, warm pods and their claims, bare pods' ends. */
class Watched {
  readonly seen = new Map<string, number>();
  readonly verdicts = new Map<string, number>();
  readonly claimed = new Set<string>();
  readonly ended = new Map<string, number>();
  readonly executions: Informer<Execution>;
  readonly warmPods: Informer<k8s.V1Pod>;
  private readonly bares: Informer<k8s.V1Pod>;

  constructor(
    cluster: Cluster,
    private readonly namespace: string,
  ) {
    const kc = cluster.kc;
    this.executions = new Informer<Execution>({
      kc,
      resource: customResource<Execution>(kc, "execution", "executions"),
      namespaces: [namespace],
    });
    this.executions.on((_e, obj) => {
      if (obj.spec?.parent === undefined) return;
      if (!this.seen.has(obj.metadata.name)) this.seen.set(obj.metadata.name, performance.now());
      if (obj.status?.verdict !== undefined && !this.verdicts.has(obj.metadata.name))
        this.verdicts.set(obj.metadata.name, performance.now());
    });
    this.warmPods = new Informer<k8s.V1Pod>({
      kc,
      resource: podResource(kc, `${CHILD_LABELS.role}=${WARM_ROLE}`),
      namespaces: [namespace],
    });
    this.warmPods.on((_e, pod) => {
      const claim = pod.metadata?.annotations?.[WARM_CLAIM_ANNOTATION];
      if (claim !== undefined) this.claimed.add(claim);
    });
    this.bares = new Informer<k8s.V1Pod>({ kc, resource: podResource(kc, `${LABELS.instance}=bench`), namespaces: [namespace] });
    this.bares.on((_e, pod) => {
      const name = pod.metadata?.name ?? "";
      if ((pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") && !this.ended.has(name))
        this.ended.set(name, performance.now());
    });
  }

  async start(): Promise<void> {
    await this.executions.start();
    await this.warmPods.start();
    await this.bares.start();
  }

  async stop(): Promise<void> {
    await this.executions.stop();
    await this.warmPods.stop();
    await this.bares.stop();
  }

  /** Ready, unclaimed warm pods of `parent`'s pool. */
  readyPool(parent: string): number {
    return this.warmPods
      .list(this.namespace)
      .filter(
        (p) =>
          p.metadata?.labels?.[CHILD_LABELS.parent] === parent &&
          p.metadata.deletionTimestamp === undefined &&
          p.metadata.annotations?.[WARM_CLAIM_ANNOTATION] === undefined &&
          (p.status?.containerStatuses ?? []).some((c) => c.state?.running !== undefined),
      ).length;
  }
}

/** The bench's workers and judge, and the calls it makes for them. */
class Calls {
  private step = 0;
  /** The last payload made (the bare pod's). */
  payload = "{}";
  private readonly parents = new Map<string, { parent: Execution; worker: Agent }>();
  private judge: Agent | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly namespace: string,
    private readonly w: Watched,
    private readonly resources = new GavelResources(cluster.kc),
  ) {}

  /** Applies the Agents, starts the three workers and waits until each runs. */
  async start(): Promise<void> {
    const ex = executionsIn(this.cluster, this.namespace, () => new ChartController(this.cluster).log());
    await ex.apply(agentsYaml);
    this.judge = withDefaults((await this.resources.agent(this.namespace, "bench-judge")) as Agent);
    for (const name of ["warm", "cold", "burst"]) {
      await ex.apply(
        `apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: { name: bench-${name} }\nspec: { agentRef: { name: bench-${name} } }\n`,
      );
      const worker = withDefaults((await this.resources.agent(this.namespace, `bench-${name}`)) as Agent);
      await wait(
        () => this.w.executions.get(`bench-${name}`, this.namespace)?.status?.iterations?.[0]?.phase === "Running",
        `bench-${name} running`,
      );
      this.parents.set(name, { parent: this.w.executions.get(`bench-${name}`, this.namespace) as Execution, worker });
    }
  }

  /** A tool-judge child of worker `which` for one `cmd.run ls` call, made as the gate makes it. */
  child(which: string): Execution {
    const { parent, worker } = this.parents.get(which) as { parent: Execution; worker: Agent };
    const entry = worker.spec.execution?.tool_validation?.[0];
    if (entry === undefined) throw new Error("no tool_validation entry");
    const step = ++this.step;
    const made = toolJudgeChild({
      parent,
      worker,
      judge: this.judge,
      entry,
      index: 0,
      proposal: {
        namespace: this.namespace,
        execution: parent.metadata.name,
        toolCallId: `bench-${step}`,
        iteration: 1,
        step,
        tool: "cmd.run",
        args: { command: "ls /workspace" },
        intent: "list",
      },
      policyViolations: [],
      workerMounts: workspaceMounts(parent.metadata.name, worker, true),
      stdin: false,
    });
    this.payload = JSON.stringify(made.execution.spec.input ?? {});
    return made.execution;
  }

  create(child: Execution): Promise<boolean> {
    return this.resources.createJudgeChild(child);
  }

  /** One judged call of worker `which`: spawn -> verdict, and whether it ran in a warm pod. */
  async judged(which: string): Promise<{ ms: number; warm: boolean }> {
    const c = this.child(which);
    await this.create(c);
    const name = c.metadata.name;
    await wait(() => this.w.verdicts.has(name), `the verdict of ${name}`);
    const warm = this.w.claimed.has(name);
    if (warm && which === "cold") throw new Error(`judge-cluster bench (warm): ${name} of bench-cold (no pool) ran in a warm pod`);
    return { ms: (this.w.verdicts.get(name) as number) - (this.w.seen.get(name) as number), warm };
  }
}

/** A bare pod of the judge image with `payload`: create call -> verdict parsed from its log. */
async function barePod(cluster: Cluster, namespace: string, w: Watched, name: string, payload: string): Promise<number> {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const body = podManifest({
    spec: { name, image: JUDGE_IMAGE, env: { GAVEL_INPUT: payload }, mounts: [], network: "none", timeoutSeconds: 60 },
    name,
    instance: "bench",
    user: NOBODY,
    imagePullPolicy: "Never",
  });
  const t0 = performance.now();
  await core.createNamespacedPod({ namespace, body });
  await wait(() => w.ended.has(name), `bare pod ${name} to end`);
  const log = await core.readNamespacedPodLog({ name, namespace, container: "main" });
  const outcome = judgeOutcome({ exitCode: 0, stdout: log });
  const t1 = performance.now();
  if (!outcome.ok) throw new Error(`bare pod ${name}: no verdict (${outcome.rejection}: ${outcome.detail})`);
  await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
  return t1 - t0;
}

/** Runs the rounds and the burst in `namespace` (the chart installed, its controller ready). */
export async function measureWarm(cluster: Cluster, namespace: string, runs: number): Promise<WarmRounds> {
  const w = new Watched(cluster, namespace);
  await w.start();
  try {
    const calls = new Calls(cluster, namespace, w);
    await calls.start();
    const out: WarmRounds = { warm: [], cold: [], bare: [], refill: [], missed: 0, burst: { warm: [], cold: [] } };
    let bares = 0;
    const bare = async () => barePod(cluster, namespace, w, `gavel-bench-bare-warm-${bares++}-bench`, calls.payload);
    const warmRound = async (into: WarmRounds): Promise<void> => {
      const t0 = performance.now();
      await wait(() => w.readyPool("bench-warm") > 0, "bench-warm's warm pod ready");
      into.refill.push((performance.now() - t0) / 1000);
      const j = await calls.judged("warm");
      if (j.warm) into.warm.push(j.ms);
      else into.missed += 1;
    };
    // Warm-up: each path once (images in the page cache, the launcher's ConfigMap, the payload).
    await warmRound({ ...out, warm: [], refill: [] });
    await calls.judged("cold");
    await bare();
    for (let i = 0; i < runs; i++) {
      const order = [
        () => warmRound(out),
        async () => void out.cold.push((await calls.judged("cold")).ms),
        async () => void out.bare.push(await bare()),
      ];
      for (let k = 0; k < order.length; k++) await (order[(k + i) % order.length] as () => Promise<void>)();
    }
    // The burst: BURST calls at once against a ready pool of BURST_POOL.
    await wait(() => w.readyPool("bench-burst") >= BURST_POOL, `bench-burst's ${BURST_POOL} warm pods ready`);
    const burst = Array.from({ length: BURST }, () => calls.child("burst"));
    await Promise.all(burst.map((c) => calls.create(c)));
    await wait(() => burst.every((c) => w.verdicts.has(c.metadata.name)), "the burst's verdicts");
    for (const c of burst) {
      const ms = (w.verdicts.get(c.metadata.name) as number) - (w.seen.get(c.metadata.name) as number);
      (w.claimed.has(c.metadata.name) ? out.burst.warm : out.burst.cold).push(ms);
    }
    return out;
  } finally {
    await w.stop();
  }
}

/** The rows of the warm bench. */
export function warmResults(r: WarmRounds, load: string): BenchResult[] {
  const p = (xs: number[], q: number) => percentile(xs, q);
  const bare = p(r.bare, 50);
  const rounds = `${r.warm.length + r.missed} interleaved rounds (${r.missed} warm rounds ran cold: the controller's cache had not seen the ready pod)`;
  const burstAll = [...r.burst.warm, ...r.burst.cold];
  return [
    {
      name: "tool-call judge spawn -> verdict p50 on the cluster, warm judge pod (rule judge)",
      baselineName: "bare pod of the same judge image and payload, created and awaited directly",
      baseline: bare,
      value: p(r.warm, 50),
      unit: "ms",
      ratio: p(r.warm, 50) / bare,
      target: "p50 <= 300 ms",
      met: p(r.warm, 50) <= 300,
      notes: `${rounds}; cold p50 ${p(r.cold, 50).toFixed(0)} ms; pool refill after a call p50 ${p(r.refill, 50).toFixed(1)} s; ${load}`,
    },
    {
      name: "tool-call judge spawn -> verdict p99 on the cluster, warm judge pod (rule judge)",
      baselineName: "bare pod p99",
      baseline: p(r.bare, 99),
      value: p(r.warm, 99),
      unit: "ms",
      ratio: p(r.warm, 99) / p(r.bare, 99),
      target: "p99 <= 1000 ms",
      met: p(r.warm, 99) <= 1000,
      notes: `${rounds}; cold p99 ${p(r.cold, 99).toFixed(0)} ms`,
    },
    {
      name: "tool-call judge spawn -> verdict p50 on the cluster, cold (no warm pod)",
      baselineName: "bare pod of the same judge image and payload, created and awaited directly",
      baseline: bare,
      value: p(r.cold, 50),
      unit: "ms",
      ratio: p(r.cold, 50) / bare,
      target: "reported",
      met: true,
      notes: `${rounds}; warm / cold p50 ${(p(r.warm, 50) / p(r.cold, 50)).toFixed(2)}`,
    },
    {
      name: `burst of ${BURST} tool-call judges at once, pool of ${BURST_POOL}: spawn -> verdict p50 (all)`,
      baselineName: "bare pod p50",
      baseline: bare,
      value: p(burstAll, 50),
      unit: "ms",
      ratio: p(burstAll, 50) / bare,
      target: "reported",
      met: true,
      notes: `${r.burst.warm.length} warm: p50 ${p(r.burst.warm, 50).toFixed(0)} / p99 ${p(r.burst.warm, 99).toFixed(0)} ms; ${r.burst.cold.length} cold (drained): p50 ${p(r.burst.cold, 50).toFixed(0)} / p99 ${p(r.burst.cold, 99).toFixed(0)} ms; all p99 ${p(burstAll, 99).toFixed(0)} ms`,
    },
  ];
}
