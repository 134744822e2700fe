// Warm judge pods (issue 26, ADR 0070): while a run's worker runs, each judge its tool_validation
// names keeps a few ready pods (warm-judge-pods.ts: the judge's own pod, waiting); a judged call's
// child is handed to one (claimed with a compare-and-set on the pod: its annotation and owner
// become the child's) and the controller runs the judge program in it through pods/exec, the
// payload on stdin. The pod serves that one call and is deleted; the run's next reconcile makes
// another. What the exec printed and its exit code stay in memory until the child's reconcile
// turns them into its status; a controller that dies meanwhile leaves a claimed pod no process
// runs, which the next one deletes, and the child runs again on the cold path.
import { PassThrough, Writable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { withDefaults } from "../api/defaults.js";
import type { Agent, Execution } from "../api/types.js";
import { CHILD_LABELS, labelValue, ownerMarks, ownerOf, type OwnerMarks } from "../children/workloads.js";
import { workerName } from "../engine/child-names.js";
import { childTimeoutSeconds, iterationTimeoutSeconds } from "../engine/durations.js";
import { isTerminal } from "../engine/phases.js";
import type { JudgeWorkloadEnd } from "../engine/judge-run.js";
import { ignoreNotFound, isConflict, isNotFound, messageOf } from "../errors.js";
import { MAIN_CONTAINER } from "../runtime/kubernetes.js";
import { OUTPUT_CAP_BYTES, type WorkloadSpec } from "../runtime/workload.js";
import { ensureWorkload, namespaceOf, type ExecutionParts } from "./execution-parts.js";
import { workloadPodName } from "./execution-pods.js";
import { judgeAgents } from "./execution-state.js";
import {
  judgeExecCommand,
  WARM_CLAIM_ANNOTATION,
  WARM_LABELS,
  WARM_ROLE,
  warmFingerprint,
  warmPools,
  type PoolAgents,
  type WarmPod,
} from "./warm-judge-pods.js";
import { runExec } from "./workspace-stream.js";

/** What the warm pools need beyond the reconciler's parts. */
export interface WarmJudgesOptions {
  /** For pods/exec. */
  kc: k8s.KubeConfig;
  /** The reconciler's pod cache. */
  pods: { list(namespace?: string): k8s.V1Pod[] };
  /** Warm pods per judge at most (the chart's warmJudges.max); 0 keeps none. */
  max: number;
}

/** A call handed to a warm pod: the pod, and once the exec ended, how. */
interface WarmRun {
  pod: string;
  end?: JudgeWorkloadEnd;
}

/** Text a Writable collects, up to `max` bytes (the rest dropped, as a pod log is capped). */
function collect(max: number): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  let size = 0;
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      if (size < max) chunks.push(chunk.subarray(0, max - size));
      size += chunk.length;
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

/** Is a pool pod ready to take a call: running, not being deleted, not claimed. */
function idle(pod: k8s.V1Pod): boolean {
  return (
    pod.metadata?.deletionTimestamp === undefined &&
    pod.metadata?.annotations?.[WARM_CLAIM_ANNOTATION] === undefined &&
    pod.status?.phase === "Running" &&
    (pod.status.containerStatuses ?? []).some((c) => c.name === MAIN_CONTAINER && c.state?.running !== undefined)
  );
}

/** The warm pools of a reconciler whose cap is `max` (none when it is 0 or unset), as JudgeChildren takes them. */
export function warmJudgesOf(parts: ExecutionParts, kc: k8s.KubeConfig, pods: WarmJudgesOptions["pods"], max = 0): { warm?: WarmJudges } {
  return max > 0 ? { warm: new WarmJudges(parts, { kc, pods, max }) } : {};
}

/** Keeps the warm pools of running Executions and runs judged calls in them. */
export class WarmJudges {
  /** Calls handed to a warm pod by this process, by child key (namespace/name). */
  private readonly runs = new Map<string, WarmRun>();
  /** Children whose warm run could not be made to run: they take the cold path. */
  private readonly cold = new Set<string>();
  private readonly exec: k8s.Exec;

  constructor(
    private readonly parts: ExecutionParts,
    private readonly opts: WarmJudgesOptions,
  ) {
    this.exec = new k8s.Exec(opts.kc);
  }

  /**
   * One reconcile of a run's warm pools, the reconciler's step after the run's own (ADR 0079):
   * the demand is read from the run as stored, not handed over by its reconcile: while its
   * status says its worker runs, ready pods per tool_validation judge of its Agents
   * (warmPools), living an iteration's lifetime; pods of a stale spec, of a judge or slot no
   * longer wanted, or of a run no longer running go, and so do claimed pods no call of this
   * process holds. A run that is gone or ended has none to keep (its pods go with the rest it
   * owns: retireOwned).
   */
  async reconcile(namespace: string, name: string): Promise<void> {
    if (this.opts.max <= 0) return;
    // Never older than the status this process last wrote (CachedResources): the run's reconcile just wrote it.
    const run = await this.parts.resources.execution(namespace, name);
    if (run === undefined || run.spec.parent !== undefined || isTerminal(run.status?.phase)) return;
    const iteration = run.status?.iterations?.at(-1);
    const running = run.status?.phase === "Running" && iteration?.phase === "Running" ? iteration.number : undefined;
    const raw = running === undefined ? undefined : await this.parts.resources.agent(namespace, run.spec.agentRef.name);
    const agent = raw === undefined ? undefined : withDefaults(raw);
    const wanted =
      running === undefined || agent === undefined
        ? new Map<string, WarmPod>()
        : this.wanted(ownerMarks(run), running, { agent, judges: await judgeAgents(this.parts.resources, namespace, agent) });
    const have = new Set<string>();
    for (const pod of this.poolPods(namespace, labelValue(name))) {
      const podName = pod.metadata?.name ?? "";
      if (this.keeps(pod, namespace, wanted.get(podName))) have.add(podName);
      else await this.deletePod(namespace, podName);
    }
    for (const [podName, w] of wanted)
      if (!have.has(podName)) await ensureWorkload(this.parts, w.spec, w.place).catch((err: unknown) => this.failedToWarm(podName, err));
  }

  /** The pods the pools of the run that `owner` marks should have while the worker of `iteration` runs, by name. */
  private wanted(owner: OwnerMarks, iteration: number, agents: PoolAgents): Map<string, WarmPod> {
    // The worker's node, from the cache: a judge of a ReadWriteOnce claim runs beside it.
    const worker = workloadPodName(workerName(owner.name, iteration));
    const workerNode = this.opts.pods.list(owner.namespace).find((p) => p.metadata?.name === worker)?.spec?.nodeName;
    const pools = warmPools(owner, agents, this.parts.settings, {
      iteration,
      lifetimeSeconds: iterationTimeoutSeconds(agents.agent),
      cap: this.opts.max,
      workerNode,
    });
    if (pools.problem !== undefined) this.parts.logger.warn({ agent: agents.agent.metadata.name }, pools.problem);
    return pools.pods;
  }

  /** Whether a pool pod stays: a claimed one while a call of this process runs in it, an idle one while wanted as it is. */
  private keeps(pod: k8s.V1Pod, namespace: string, wanted: WarmPod | undefined): boolean {
    const claim = pod.metadata?.annotations?.[WARM_CLAIM_ANNOTATION];
    if (claim !== undefined) return this.runs.has(`${namespace}/${claim}`);
    const ended = pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
    return (
      wanted !== undefined && !ended && pod.metadata?.labels?.[WARM_LABELS.fingerprint] === wanted.spec.labels?.[WARM_LABELS.fingerprint]
    );
  }

  /** What this process knows of a child's warm run: undefined when it has none (the cold path's pod is the truth then). */
  observe(child: Execution): { end?: JudgeWorkloadEnd } | undefined {
    const run = this.runs.get(`${namespaceOf(child)}/${child.metadata.name}`);
    return run === undefined ? undefined : run.end === undefined ? {} : { end: run.end };
  }

  /**
   * Hands a judge child to an idle warm pod of its parent's pool whose spec equals the one its
   * own pod would get (`built`, on `node`) and starts its judge there; false when none is (the
   * caller makes the cold pod). A claimed pod that no run of this process holds is deleted first.
   */
  async start(child: Execution, judge: Agent, parent: Execution, built: WarmPod, node: string | undefined): Promise<boolean> {
    const namespace = namespaceOf(child);
    const key = `${namespace}/${child.metadata.name}`;
    const pool = this.poolPods(namespace, labelValue(parent.metadata.name));
    for (const pod of pool)
      if (pod.metadata?.annotations?.[WARM_CLAIM_ANNOTATION] === child.metadata.name && !this.runs.has(key))
        await this.deletePod(namespace, pod.metadata.name ?? "");
    // Its call runs in a warm pod already (the child is reconciled again while it does).
    if (this.runs.has(key)) return true;
    if (this.opts.max <= 0 || this.cold.has(key) || built.place.parts !== undefined) return false;
    const fingerprint = warmFingerprint(built.spec, node);
    for (const pod of pool) {
      const labels = pod.metadata?.labels ?? {};
      if (labels[WARM_LABELS.fingerprint] !== fingerprint || labels[WARM_LABELS.judge] !== labelValue(judge.metadata.name) || !idle(pod))
        continue;
      const name = pod.metadata?.name ?? "";
      if ([...this.runs.values()].some((r) => r.pod === name)) continue;
      this.runs.set(key, { pod: name });
      if (!(await this.claim(pod, child))) {
        this.runs.delete(key);
        continue;
      }
      void this.run(child, judge, built.spec, name);
      return true;
    }
    return false;
  }

  /** Drops a finished child's warm run (its status holds the outcome now). */
  forget(child: Execution): void {
    const key = `${namespaceOf(child)}/${child.metadata.name}`;
    this.runs.delete(key);
    this.cold.delete(key);
  }

  /** The pool pods of one Execution (by its label value) in the cache, claimed ones included. */
  private poolPods(namespace: string, parent: string): k8s.V1Pod[] {
    return this.opts.pods
      .list(namespace)
      .filter((p) => p.metadata?.labels?.[CHILD_LABELS.role] === WARM_ROLE && p.metadata.labels[CHILD_LABELS.parent] === parent);
  }

  /**
   * Claims a warm pod for a child: its annotation names the child and the child becomes its
   * controlling owner (so its end wakes the child, and the child's end removes it), written only
   * if the pod is still the version the cache showed idle. False when another write came first.
   */
  private async claim(pod: k8s.V1Pod, child: Execution): Promise<boolean> {
    const body = {
      metadata: {
        resourceVersion: pod.metadata?.resourceVersion,
        annotations: { [WARM_CLAIM_ANNOTATION]: child.metadata.name },
        ownerReferences: [ownerOf(child)],
      },
    };
    try {
      await this.parts.core.patchNamespacedPod(
        { name: pod.metadata?.name ?? "", namespace: namespaceOf(child), body },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      return true;
    } catch (err) {
      // Taken by another write (or gone) since the cache showed it idle.
      if (isConflict(err) || isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * The judged call in its warm pod: the judge program by exec with the payload on stdin, killed
   * (its pod deleted) at the child's deadline. Its end is kept for the child's reconcile, which the
   * pod's deletion wakes; an exec that could not run sends the child to the cold path.
   */
  private async run(child: Execution, judge: Agent, childSpec: WorkloadSpec, pod: string): Promise<void> {
    const namespace = namespaceOf(child);
    const key = `${namespace}/${child.metadata.name}`;
    const stdout = collect(OUTPUT_CAP_BYTES);
    const stderr = collect(OUTPUT_CAP_BYTES);
    const stdin = new PassThrough();
    stdin.end(JSON.stringify(child.spec.input ?? {}));
    let timedOut = false;
    const timeoutSeconds = childTimeoutSeconds(child, judge);
    const timer = setTimeout(() => {
      timedOut = true;
      void this.deletePod(namespace, pod);
    }, timeoutSeconds * 1000);
    const end = await runExec(
      this.exec,
      { namespace, pod, container: MAIN_CONTAINER, command: judgeExecCommand(childSpec) },
      { stdout: stdout.stream, stderr: stderr.stream, stdin },
    );
    clearTimeout(timer);
    if ("problem" in end && !timedOut) {
      this.parts.logger.warn({ child: key, pod, err: end.problem }, "a warm judge pod could not run the call; it runs in a pod of its own");
      this.cold.add(key);
      this.runs.delete(key);
    } else {
      const exitCode = "code" in end ? end.code : 137;
      this.runs.set(key, { pod, end: { exitCode, stdout: stdout.text(), stderr: stderr.text(), timedOut } });
    }
    // One call per pod; its deletion wakes the child (its owner now).
    await this.deletePod(namespace, pod);
    // A child stopped by its parent never comes back to forget its run.
    setTimeout(() => this.forget(child), (timeoutSeconds + 600) * 1000).unref();
  }

  private async deletePod(namespace: string, name: string): Promise<void> {
    await this.parts.core
      .deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })
      .then(() => undefined, ignoreNotFound)
      .catch((err: unknown) =>
        this.parts.logger.warn({ pod: `${namespace}/${name}`, err: messageOf(err) }, "deleting a warm judge pod failed"),
      );
  }

  private failedToWarm(pod: string, err: unknown): void {
    this.parts.logger.warn({ pod, err: messageOf(err) }, "a warm judge pod could not be made; judged calls take the cold path");
  }
}
