// One run of the scale harness (docs/scale.md): N Executions of a one-iteration worker with one
// semantic judge, created at once against `gavel controller` (the real process, started as the
// chart's image starts it) on a kwok cluster (kwok.ts); timed, counted from the API server's
// own metrics, and the controller's memory sampled, until every Execution has ended.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import type { Agent, Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { customResource, Informer, podResource } from "../../src/controller/runtime/informer.js";
import { workloadPodName } from "../../src/controller/execution-pods.js";
import { judgeChildName, workerName } from "../../src/engine/child-names.js";
import { LABELS } from "../../src/runtime/kubernetes/pod-spec.js";
import { messageOf } from "../../src/errors.js";
import type { ControlPlane } from "./control-plane.js";
import { eventually, sleep } from "./eventually.js";
import { runOk } from "./exec.js";
import { FINAL_PHASES } from "./executions.js";
import { parseSamples } from "./metrics.js";
import { startKwokCluster } from "./kwok.js";
import { criLog } from "./kwok-stages.js";
import { REPO_DIR } from "./paths.js";
import { WARM_POOL_ANNOTATION } from "../../src/controller/warm-judge-pods.js";
import {
  PROGRAM_ENDED,
  startScaleNats,
  startToolCalls,
  TOOL_SPEC,
  TOOL_VALIDATION,
  toolJudgeOutput,
  toolJudgePod,
  toolManifests,
  type ScaleNats,
  type ToolsOutcome,
} from "./scale-tools.js";

/**
 * Which validation each worker gets: one `semantic` judge, or a `multi_judge` of three
 * (unanimous, all three required); `tools`: one `semantic` judge and three tool calls through
 * the gate over NATS (scale-tools.ts).
 */
export type ScaleVariant = "semantic" | "multi_judge" | "tools";

/** What one scale run is. */
export interface ScaleRunOptions {
  executions: number;
  /** Default semantic. */
  variant?: ScaleVariant;
  /** How long each simulated worker and judge pod runs (ms). */
  podRunMs?: number;
  /** Simulated nodes. */
  nodes?: number;
  /** Give up after this long (ms) from the first create. */
  timeoutMs?: number;
  /** A directory for the controller's V8 CPU profile (node --cpu-prof), written when it stops. */
  cpuProfileDir?: string;
  /** Called once every Execution has ended, before the cluster goes: a test's look at what they left. */
  inspect?: (cp: ControlPlane, namespace: string) => Promise<void>;
}

/** What one scale run measured. */
export interface ScaleRun {
  executions: number;
  variant: ScaleVariant;
  /** Judge pods each Execution needs (1, or 3 for multi_judge). */
  judgesPerExecution: number;
  /** Phases of the top-level Executions at the end, by phase. */
  phases: Record<string, number>;
  /** Seconds from the first create call to the last Execution's final phase. */
  drainSeconds: number;
  /** Seconds from the first create call to the last one's answer (16 in flight). */
  createSeconds: number;
  /** Seconds from each Execution's create call to the first sight of its worker pod, sorted. */
  createToPodSeconds: number[];
  /** The controller's reconciles during the run (its controller_runtime_reconcile_total). */
  reconciles: number;
  /** The controller's RSS and V8 heap used, before the run and at most during it (bytes). */
  rss: { idle: number; peak: number };
  heap: { idle: number; peak: number };
  /** The deepest the controller's work queues were (sum over queues, sampled each second). */
  queueDepthPeak: number;
  /** The work queues' depth (sum) over the run: seconds since the first create, keys waiting; sampled each second. */
  queueDepth: { atSeconds: number; depth: number }[];
  /** The API server's apiserver_request_total before and after the run. */
  apiBefore: string;
  apiAfter: string;
  /** Writes the harness itself made during the run, by `VERB group/resource` (its Execution creates). */
  harnessWrites: Record<string, number>;
  /** Worker and judge pods created, by role: one each per Execution when nothing ran twice. */
  pods: { workers: number; judges: number };
  /** The tools variant's calls: as each worker saw them, and the store's decision records per call. */
  tools?: ToolsOutcome;
}

const NAMESPACE = "scale";
const JUDGE = "scale-judge";
/** The judges of the multi_judge variant. */
const JUDGES = ["scale-judge-a", "scale-judge-b", "scale-judge-c"];
// As the chart's values.yaml `nodeOptions` sets them for the controller's Node.js.
const CHART_NODE_OPTIONS = "--max-semi-space-size=16";

const TASK = "Summarise the input in three sections.";
const WORKER_STDOUT = "Summary\n1. Input\n2. Method\n3. Result\n";
const CRITERIA = "contains: Summary";

/** A judge Agent: the real rule judge's image (its pods' logs are what kwok serves). */
const judgeAgent = (name: string) => `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: ${name}, labels: { role: judge } }
spec:
  runtime: { image: gavel/rule-judge:dev, pull_policy: Never }
  task: { instruction: Score the summary against the rules in the criteria. }
  security: { network: { mode: none } }
  execution: { mode: one-shot }
`;

const SEMANTIC = `
      - type: semantic
        judge_agent: ${JUDGE}
        criteria: "${CRITERIA}"
        min_score: 0.5
        timeout_seconds: 120`;
const VALIDATION: Record<ScaleVariant, string> = {
  semantic: SEMANTIC,
  tools: `\n${TOOL_VALIDATION}    validation:${SEMANTIC}`,
  multi_judge: `
      - type: multi_judge
        judges: [${JUDGES.join(", ")}]
        consensus: unanimous
        min_judges_required: 3
        criteria: "${CRITERIA}"
        min_score: 0.5
        timeout_seconds: 120`,
};

/** The worker Agent and its judges for a variant (the tools variant's: its tools, the worker reaching NATS, the GuardPolicy and the tool judge). */
async function agents(variant: ScaleVariant): Promise<string> {
  const tools = variant === "tools";
  const worker = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: scale-worker${tools ? `, annotations: { ${WARM_POOL_ANNOTATION}: "0" }` : ""} }
spec:
  runtime: { image: gavel/agent:dev, pull_policy: Never }
  task: { instruction: Summarise the input in three sections. }
${tools ? TOOL_SPEC : ""}  security: { network: { mode: ${tools ? "allow" : "none"} } }
  execution:
    mode: iterative
    max_iterations: 1
${tools ? "" : "    validation:"}${VALIDATION[variant]}
`;
  return [worker, ...judgesOf(variant).map(judgeAgent), ...(tools ? [await toolManifests()] : [])].join("\n---\n");
}

/** The judge Agents a variant's worker names. */
function judgesOf(variant: ScaleVariant): string[] {
  return variant === "multi_judge" ? JUDGES : [JUDGE];
}

/** Names of run i's Execution, its worker pod and its judges' pods (the semantic variant's one judge unless told). */
export function scaleNames(
  i: number,
  variant: ScaleVariant = "semantic",
): { execution: string; workerPod: string; judgePods: string[]; toolJudgePods: string[] } {
  const execution = `s-${String(i).padStart(4, "0")}`;
  return {
    execution,
    workerPod: workloadPodName(workerName(execution, 1)),
    judgePods: judgesOf(variant).map((j) => workloadPodName(judgeChildName(execution, 1, 0, j))),
    toolJudgePods: variant === "tools" ? [toolJudgePod(execution)] : [],
  };
}

/**
 * What the pods log, made as a real pod's log is made: the program's output through the real
 * gavel-launch (dist/bin/gavel-launch), so the log is framed as the controller decodes it. The
 * worker (gavel's agent needs NATS and a model, so a shell stands in) says what it did on stdout
 * and logs on stderr; the judge is the real rule judge (dist/judges/rule-judge) given the payload
 * a judge child gets, and prints its GradientResult.
 */
async function podLogs(dir: string): Promise<{ worker: string; judge: string; toolJudge: string }> {
  const launch = join(REPO_DIR, "dist", "bin", "gavel-launch");
  const worker = await runOk(launch, [
    "sh",
    "-c",
    `echo '{"level":30,"msg":"iteration 1 started"}' >&2; printf '${WORKER_STDOUT.replace(/\n/g, "\\n")}'`,
  ]);
  const payload = { task: TASK, output: WORKER_STDOUT, criteria: CRITERIA };
  const judge = await runOk(launch, ["node", join(REPO_DIR, "dist", "judges", "rule-judge", "main.js")], {
    env: { ...process.env, GAVEL_INPUT: JSON.stringify(payload) },
  });
  const files = { worker: join(dir, "worker.log"), judge: join(dir, "judge.log"), toolJudge: join(dir, "tool-judge.log") };
  await writeFile(files.worker, criLog(worker));
  await writeFile(files.judge, criLog(judge));
  const ruleJudge = parse(await readFile(join(REPO_DIR, "judges", "rule-judge", "agent.yaml"), "utf8")) as Agent;
  await writeFile(files.toolJudge, criLog(await toolJudgeOutput(TASK, ruleJudge)));
  return files;
}

/** The sum of metric `name` in a text exposition (0 when it has none or the scrape failed). */
function sumOf(text: string, name: string): number {
  return parseSamples(text)
    .filter((s) => s.name === name)
    .reduce((a, s) => a + s.value, 0);
}

/** Polls the controller's /metrics and /proc status while the run goes. */
function sampler(pid: number, metricsUrl: string) {
  const s = { rssPeak: 0, heapPeak: 0, depthPeak: 0 };
  const depths: { at: number; depth: number }[] = [];
  const once = async () => {
    const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0") * 1024;
    s.rssPeak = Math.max(s.rssPeak, rss);
    const text = await fetch(metricsUrl).then(
      (r) => r.text(),
      () => "",
    );
    s.heapPeak = Math.max(s.heapPeak, sumOf(text, "nodejs_heap_size_used_bytes"));
    const depth = sumOf(text, "workqueue_depth");
    s.depthPeak = Math.max(s.depthPeak, depth);
    if (text !== "") depths.push({ at: performance.now(), depth });
    return { rss, heap: sumOf(text, "nodejs_heap_size_used_bytes"), text };
  };
  let running = true;
  const loop = (async () => {
    while (running) {
      await once();
      await sleep(1000);
    }
  })();
  return {
    peaks: s,
    depths,
    once,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** `gavel controller` as the chart's image runs it (node dist/src/cli/main.js, NODE_ENV, NODE_OPTIONS, --leader-elect), watching the scale namespace. */
function startController(cp: ControlPlane, cpuProfileDir?: string, natsArgs: string[] = []) {
  const metricsPort = 20000 + Math.floor(Math.random() * 20000);
  const proc = spawn(
    "node",
    [
      // Node refuses --cpu-prof in NODE_OPTIONS: it goes on the command line.
      ...(cpuProfileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDir}`]),
      join(REPO_DIR, "dist", "src", "cli", "main.js"),
      "controller",
      ...["--kubeconfig", cp.kubeconfigPath, "-n", NAMESPACE, "--controller-namespace", NAMESPACE],
      ...["--launcher", join(REPO_DIR, "dist", "bin", "gavel-launch")],
      ...["--metrics-bind-address", `127.0.0.1:${metricsPort}`, "--log-level", "warn", "--leader-elect"],
      ...natsArgs,
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "production", NODE_OPTIONS: CHART_NODE_OPTIONS } },
  );
  let log = "";
  const keep = (b: Buffer) => (log = (log + b.toString()).slice(-200_000));
  proc.stdout.on("data", keep);
  proc.stderr.on("data", keep);
  return {
    pid: proc.pid ?? 0,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    log: () => log,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await gone;
      clearTimeout(t);
    },
  };
}

/** The harness's own eyes (informers): when each pod was first seen, and each top-level Execution's final phase. */
async function watchRun(cp: ControlPlane) {
  const podSeen = new Map<string, number>();
  const created = { workers: 0, judges: 0 };
  const pods = new Informer<k8s.V1Pod>({ kc: cp.kc, resource: podResource(cp.kc, LABELS.managed), namespaces: [NAMESPACE] });
  pods.on((event, pod) => {
    const name = pod.metadata?.name ?? "";
    if (event !== "add" || podSeen.has(name)) return;
    podSeen.set(name, performance.now());
    if (name.endsWith("-i1-ex")) created.workers++;
    else created.judges++;
  });
  const ended = new Map<string, { at: number; phase: string }>();
  const executions = new Informer<Execution>({
    kc: cp.kc,
    resource: customResource<Execution>(cp.kc, "execution", "executions"),
    namespaces: [NAMESPACE],
  });
  executions.on((_event, ex) => {
    const phase = ex.status?.phase;
    if (ex.spec.parent !== undefined || phase === undefined || !FINAL_PHASES.includes(phase) || ended.has(ex.metadata.name)) return;
    ended.set(ex.metadata.name, { at: performance.now(), phase });
  });
  await pods.start();
  await executions.start();
  return {
    podSeen,
    created,
    ended,
    async stop() {
      await pods.stop();
      await executions.stop();
    },
  };
}

/** Creates the Executions as a user's `kubectl apply` of many would, 16 requests in flight; when each create was sent. */
async function createExecutions(cp: ControlPlane, executions: string[]): Promise<Map<string, number>> {
  const api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
  const sent = new Map<string, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < executions.length; i = next++) {
        const name = executions[i] as string;
        sent.set(name, performance.now());
        await api.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: NAMESPACE,
          plural: "executions",
          body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Execution", metadata: { name }, spec: { agentRef: { name: "scale-worker" } } },
        });
      }
    }),
  );
  return sent;
}

/** The namespace, its ServiceAccount and the two Agents. */
async function prepare(cp: ControlPlane, variant: ScaleVariant): Promise<void> {
  const core = cp.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  await core.createNamespacedServiceAccount({ namespace: NAMESPACE, body: { metadata: { name: "default" } } });
  const applied = await cp.kubectl(["apply", "-n", NAMESPACE, "-f", "-"], { stdin: await agents(variant) });
  if (applied.code !== 0) throw new Error(`kubectl apply of the scale Agents: ${applied.stderr}`);
}

/** Waits until the controller has written Agent scale-worker's Ready condition: its informers listed, its queue at work. */
async function controllerReady(cp: ControlPlane): Promise<void> {
  await eventually(
    async () => {
      const r = await cp.kubectl([
        "get",
        "agent",
        "scale-worker",
        "-n",
        NAMESPACE,
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return r.stdout.trim() === "True" ? true : undefined;
    },
    { timeoutMs: 60_000, what: "the controller to mark Agent scale-worker Ready" },
  );
}

/** The kwok cluster of a run: its nodes, its pods' run time and logs; the tools variant's workers held until their calls are made. */
function kwokFor(opts: ScaleRunOptions, names: ReturnType<typeof scaleNames>[], tools: boolean, logs: Awaited<ReturnType<typeof podLogs>>) {
  return startKwokCluster({
    nodes: opts.nodes ?? 10,
    podRunMs: opts.podRunMs ?? 1000,
    logs: [
      { name: "workers", file: logs.worker, pods: names.map((x) => x.workerPod) },
      { name: "judges", file: logs.judge, pods: names.flatMap((x) => x.judgePods) },
      ...(tools ? [{ name: "tool-judges", file: logs.toolJudge, pods: names.flatMap((x) => x.toolJudgePods) }] : []),
    ],
    // A worker's pod runs until its program has made its calls (scale-tools.ts).
    ...(tools ? { held: { pods: names.map((x) => x.workerPod), annotation: PROGRAM_ENDED } } : {}),
  });
}

/** Runs `executions` Executions at once on a fresh kwok cluster and measures them (see ScaleRun). */
export async function scaleRun(opts: ScaleRunOptions): Promise<ScaleRun> {
  const n = opts.executions;
  const variant = opts.variant ?? "semantic";
  const dir = await mkdtemp(join(tmpdir(), "gavel-scale-"));
  const names = Array.from({ length: n }, (_, i) => scaleNames(i, variant));
  const tools = variant === "tools";
  const cluster = await kwokFor(opts, names, tools, await podLogs(dir));
  const { cp } = cluster;
  let controller: ReturnType<typeof startController> | undefined;
  let nats: ScaleNats | undefined;
  let calls: Awaited<ReturnType<typeof startToolCalls>> | undefined;
  try {
    await prepare(cp, variant);
    if (tools) nats = await startScaleNats(cp, NAMESPACE, dir);
    controller = startController(cp, opts.cpuProfileDir, nats?.controllerArgs);
    await controllerReady(cp);
    if (nats !== undefined) calls = await startToolCalls(cp, NAMESPACE, dir, nats);
    await sleep(2000);
    const samples = sampler(controller.pid, controller.metricsUrl);
    const idle = await samples.once();
    const seen = await watchRun(cp);
    const apiBefore = await cluster.apiMetrics();
    const start = performance.now();
    const sent = await createExecutions(
      cp,
      names.map((x) => x.execution),
    );
    const createSeconds = (performance.now() - start) / 1000;
    await eventually(() => (seen.ended.size === n ? true : undefined), {
      timeoutMs: opts.timeoutMs ?? 600_000,
      everyMs: 200,
      what: `${n} Executions to end (${seen.ended.size} ended)`,
    });
    const last = Math.max(...[...seen.ended.values()].map((e) => e.at));
    const toolsOutcome = await calls?.finish();
    // The controller sends Kubernetes Events in the background: all of them are counted.
    await eventually(async () => (sumOf((await samples.once()).text, "gavel_kube_events_pending") === 0 ? true : undefined), {
      timeoutMs: 120_000,
      what: "the controller's queued Kubernetes Events to be sent",
    });
    // The last status writes land right after the phase: let them in before counting.
    await sleep(3000);
    const apiAfter = await cluster.apiMetrics();
    const end = await samples.once();
    await samples.stop();
    await seen.stop();
    await opts.inspect?.(cp, NAMESPACE);
    const phases: Record<string, number> = {};
    for (const e of seen.ended.values()) phases[e.phase] = (phases[e.phase] ?? 0) + 1;
    return {
      executions: n,
      variant,
      judgesPerExecution: judgesOf(variant).length + (tools ? 1 : 0),
      phases,
      drainSeconds: (last - start) / 1000,
      createSeconds,
      createToPodSeconds: names
        .map((x) => ((seen.podSeen.get(x.workerPod) ?? NaN) - (sent.get(x.execution) ?? NaN)) / 1000)
        .sort((a, b) => a - b),
      reconciles: sumOf(end.text, "controller_runtime_reconcile_total") - sumOf(idle.text, "controller_runtime_reconcile_total"),
      rss: { idle: idle.rss, peak: samples.peaks.rssPeak },
      heap: { idle: idle.heap, peak: samples.peaks.heapPeak },
      queueDepthPeak: samples.peaks.depthPeak,
      queueDepth: samples.depths.filter((d) => d.at >= start).map((d) => ({ atSeconds: (d.at - start) / 1000, depth: d.depth })),
      apiBefore,
      apiAfter,
      // The tools variant's worker pods: the harness marks each one's program ended (scale-tools.ts).
      harnessWrites: { "POST 100monkeys.ai/executions": n, ...(tools ? { "PATCH /pods": n } : {}) },
      pods: seen.created,
      ...(toolsOutcome !== undefined ? { tools: toolsOutcome } : {}),
    };
  } catch (err) {
    throw new Error(`scale run of ${n}: ${messageOf(err)}\ncontroller log (tail):\n${controller?.log().slice(-4000) ?? ""}`, {
      cause: err,
    });
  } finally {
    await calls?.stop();
    await controller?.stop();
    await nats?.stop();
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
