// The Kubernetes driver of the outer loop: watches Executions and runs each one with the
// engine (src/engine/outer-loop.ts). State lives in the Execution's status and is rebuilt
// on every reconcile (execution-state.ts); workloads are pods with deterministic names;
// judges are child Executions this same reconciler runs. Level-triggered and idempotent,
// so a restarted controller picks every run up where the status says it was.
import * as k8s from "@kubernetes/client-node";
import { withDefaults } from "../api/defaults.js";
import type { Agent, Condition, Execution, ExecutionStatus, VolumeSpec } from "../api/types.js";
import { GROUP, VERSION } from "../api/types.js";
import { SPAWN_ERROR_ANNOTATION, validationJudgeChild } from "../children/child-executions.js";
import { defaultImages } from "../children/images.js";
import { CHILD_LABELS, type WorkerRun } from "../children/workloads.js";
import { agentImage, runtimeTable, type RuntimeTable } from "../children/runtime-table.js";
import { workerName } from "../engine/child-names.js";
import { iterationTimeoutSeconds } from "../engine/durations.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { judgeRunStep, stoppedByParent, type JudgeRunContext, type JudgeRunObservation, type JudgeRunStep } from "../engine/judge-run.js";
import { judgeStatus, outcomeOfStatus } from "../engine/phases.js";
import {
  decide,
  isTerminal,
  nextDeadline,
  observeFile,
  observeWorker,
  requestCancel,
  restoreState,
  type EngineAction,
  type EngineContext,
  type EngineState,
  type FileRequest,
  type JudgeChildRequest,
  type WorkerObservation,
} from "../engine/outer-loop.js";
import type { FileContent } from "../engine/validators/outcome.js";
import { imageReader, readerContent, volumeReader } from "../runtime/file-reader.js";
import { LABELS, type PodUser } from "../runtime/kubernetes/pod-spec.js";
import { observationOf, PodWorkloads, type PodPlacement } from "../runtime/kubernetes/pod-workloads.js";
import type { WorkloadOutput, WorkloadSpec } from "../runtime/workload.js";
import {
  CANCEL_ANNOTATION,
  EXECUTION_INSTANCE,
  chooseSnapshotClass,
  claimManifest,
  claimName,
  controllingExecution,
  COPY_SOURCE_ANNOTATION,
  COPY_SOURCE_CONTAINER,
  copierName,
  copierWorkload,
  copySourceCommand,
  streamCopierWorkload,
  copyClaimManifest,
  judgeSpec,
  judgeWorkspaces,
  placementOf,
  readerName,
  readerWorkload,
  restoredClaimManifest,
  resultConfigMaps,
  resultName,
  SNAPSHOT_GROUP,
  SNAPSHOT_VERSION,
  snapshotClassOf,
  snapshotError,
  volumeSnapshotManifest,
  workerPlacement,
  workerSpec,
  workspaceMounts,
  type SnapshotClass,
  type WorkspaceCopy,
} from "./execution-pods.js";
import { judgeNamesOf, sameStatus } from "./execution-state.js";
import { removeEarlierRun } from "./earlier-run.js";
import { copyWorkspace } from "./workspace-stream.js";
import { createJudgeChild, readWorkerResult, storeWorkerResult } from "./stored-parts.js";
import type { ExecutionCredentials } from "./execution-credentials.js";
import { gateRequirement } from "../gate/enforcement.js";
import { gateBlocks, mergeToolJudgeRefs, setGuarded, waitingForGate, type GateStatus } from "./cluster-gate.js";
import { gateAccess, isRestrictedWorker, workerGatePolicy, type GateAccess } from "./gate-egress.js";
import { toGavelEvents, type ExecutionEventPublisher } from "./execution-events.js";
import { KubernetesEventRecorder } from "./kubernetes-events.js";
import type { ExecutionTraces, TracedExecution } from "../telemetry/execution-trace.js";
import { Controller } from "./runtime/controller.js";
import { customResource, Informer, objectKey, podResource, splitKey } from "./runtime/informer.js";
import type { WorkQueue, WorkQueueOptions } from "./runtime/work-queue.js";
import { createOrAdopt, httpStatusOf, isConflict, isNotFound, messageOf, TerminalError } from "../errors.js";
import { silentLogger, type Logger } from "../telemetry/logger.js";
import { executionMetrics, type ExecutionMetrics, type Registry } from "../telemetry/metrics.js";

/** Condition type the reconciler sets when it cannot run an Execution as specified. */
export const ACCEPTED = "Accepted";
/** Seconds a finished pod is kept for its logs when the options say nothing. */
export const DEFAULT_POD_RETENTION_SECONDS = 600;
/** A running Execution's tool-call counts reach its status at most this often (unless it is written anyway). */
const TOOL_CALL_FOLD_MS = 1000;

/** Options of ExecutionReconciler. */
export interface ExecutionReconcilerOptions {
  kc: k8s.KubeConfig;
  /** Namespace to watch; all namespaces when undefined. */
  namespace?: string;
  /** Concurrent reconciles (of different Executions). Default 4. */
  workers?: number;
  /** Pull policy when an Agent sets none (default IfNotPresent; tests with imported images use Never). */
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** User of workers (pods with a writable workspace); default nobody. */
  writerUser?: PodUser;
  /** Image of the workspace file reader (needs sh and cat). Default gavel/base:bookworm-node20. */
  readerImage?: string;
  /**
   * The gavel-launch binary (dist/bin/gavel-launch): kept in a ConfigMap of each namespace that
   * worker and judge pods whose program is known mount and run it under, so their log keeps
   * stdout apart from stderr (log-streams.ts). Unset: programs run bare (the log merges them).
   */
  launcher?: Buffer;
  /** NATS URL handed to workers for the inner-loop gate; "" (default) when none runs. */
  natsUrl?: string;
  /** Images of language runtimes (`spec.runtime.language` + `version`); default the built-in table. */
  runtimes?: RuntimeTable;
  /**
   * Seconds a finished worker or judge pod is kept (its output is already stored, so only for
   * `kubectl logs` and describe) before it is deleted. Default 600; 0 deletes it at once.
   */
  podRetentionSeconds?: number;
  /** How long an Execution waits for its Agent to appear before it fails. Default 10 s. */
  agentGraceMs?: number;
  /** Every resyncMs every known Execution is reconciled again. Default 60 000; 0 = never. */
  resyncMs?: number;
  queue?: WorkQueueOptions;
  /** Reconcile only while holding this Lease (one active replica); without it every replica reconciles. */
  leaderElection?: {
    /** Namespace of the Lease (the controller's own). */
    namespace: string;
    /** This replica's name in the Lease. */
    identity: string;
    leaseName?: string;
    leaseDurationSeconds?: number;
    retryMs?: number;
    /** Called once if the Lease is lost: reconciling has stopped; the process should exit and restart. */
    onLost?: () => void;
  };
  /** Publishes each Execution's engine events to the JetStream event stream after the status write; none when undefined. */
  events?: ExecutionEventPublisher;
  /** Traces of the Executions (spans from the events of each status write; workers get their TRACEPARENT); none when undefined. */
  traces?: ExecutionTraces;
  /** Mints each Execution's NATS worker credential (mounted into its worker pods) and revokes it when the Execution ends or goes; none when undefined. */
  credentials?: ExecutionCredentials;
  /**
   * The tool-call gate (cluster-gate.ts). An Execution whose Agent needs one never starts
   * while it cannot serve (fail closed); its decided calls are summarised in the status.
   * Undefined: no gate runs, so such Executions wait (and time out) with a condition saying so.
   */
  gate?: GateStatus;
  now?: () => number;
  logger?: Logger;
  /** Where its counters live (the runtime's, labelled controller="execution", and the outcomes of runs and judges); default its own. */
  metrics?: Registry;
}

/** Counters of what the reconciler did (tests and logs read them), from its metrics. */
export interface ExecutionStats {
  reconciles: number;
  statusWrites: number;
  conflicts: number;
  errors: number;
  podsCreated: number;
  childrenCreated: number;
}

const PLURAL = "executions";

/** Runs Executions on pods: watches Executions and their pods, reconciles one key at a time. */
export class ExecutionReconciler {
  private readonly outcomes: ExecutionMetrics;
  private readonly executions: Informer<Execution>;
  private readonly pods: Informer<k8s.V1Pod>;
  private readonly controller: Controller<Execution>;
  private readonly api: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly storage: k8s.StorageV1Api;
  private readonly net: k8s.NetworkingV1Api;
  private readonly now: () => number;
  private readonly logger: Logger;
  /** Engine events as Kubernetes Events on the Execution. */
  private readonly kubeEvents: KubernetesEventRecorder;
  /** Stream copies started by this process, by copier pod (namespace/name): why the source failed, once known. */
  private readonly streams = new Map<string, { problem?: string }>();
  /** The worker, judge, reader and copier pods (the Workloads port, ADR 0030). */
  private readonly workloads: PodWorkloads;
  /** When each running Execution's tool calls were last folded into its status (foldToolCalls). */
  private readonly toolCallsFolded = new Map<string, number>();

  constructor(private readonly opts: ExecutionReconcilerOptions) {
    this.api = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
    this.storage = opts.kc.makeApiClient(k8s.StorageV1Api);
    this.net = opts.kc.makeApiClient(k8s.NetworkingV1Api);
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger ?? silentLogger;
    this.kubeEvents = new KubernetesEventRecorder(this.core, this.logger, this.now);
    const namespaces = opts.namespace === undefined ? {} : { namespaces: [opts.namespace] };
    this.executions = new Informer<Execution>({ kc: opts.kc, resource: customResource<Execution>(opts.kc, "execution", PLURAL), ...namespaces, logger: this.logger });
    this.pods = new Informer<k8s.V1Pod>({ kc: opts.kc, resource: podResource(opts.kc, `${LABELS.instance}=${EXECUTION_INSTANCE}`), ...namespaces, logger: this.logger });
    this.workloads = new PodWorkloads({
      core: this.core,
      net: this.net,
      pods: this.pods,
      instance: EXECUTION_INSTANCE,
      ...(opts.imagePullPolicy !== undefined ? { imagePullPolicy: opts.imagePullPolicy } : {}),
      ...(opts.writerUser !== undefined ? { writerUser: opts.writerUser } : {}),
      ...(opts.launcher !== undefined ? { launcher: opts.launcher } : {}),
      now: this.now,
    });
    const le = opts.leaderElection;
    this.controller = new Controller<Execution>({
      name: "execution",
      kc: opts.kc,
      // An Execution's change wakes it and its parent (a judge child finished: the parent goes on).
      primary: { informer: this.executions, keys: (ex) => [objectKey(ex), ownerKey(ex)].filter((k) => k !== undefined) },
      // A pod's change wakes the Execution that owns it.
      watches: [{ informer: this.pods, keys: (pod) => [ownerKey(pod)].filter((k) => k !== undefined) }],
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      resyncMs: opts.resyncMs ?? 60_000,
      ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
      ...(le !== undefined
        ? {
            leaderElection: {
              namespace: le.namespace,
              identity: le.identity,
              name: le.leaseName ?? "gavel-execution-controller",
              ...(le.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: le.leaseDurationSeconds } : {}),
              ...(le.retryMs !== undefined ? { retryMs: le.retryMs } : {}),
              ...(le.onLost !== undefined ? { onLost: le.onLost } : {}),
            },
          }
        : {}),
      logger: this.logger,
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
    });
    this.outcomes = executionMetrics(this.controller.metrics.registry);
  }

  /** The work queue (keys namespace/name); the tool-call gate wakes an Execution through it. */
  get queue(): WorkQueue {
    return this.controller.queue;
  }

  /** Counters; errors and conflicts are the runtime's (reconciles that threw, retried with backoff). */
  get stats(): ExecutionStats {
    const { reconcile: m, labels } = this.controller.metrics;
    const { reconciles, errors, conflicts } = this.controller.stats;
    return { reconciles, errors, conflicts, statusWrites: m.statusWrites.get(labels), podsCreated: m.podsCreated.get(labels), childrenCreated: m.childrenCreated.get(labels) };
  }

  /**
   * Fills both caches and starts the watches; starts the workers at once, or with leader
   * election once this replica holds the Lease (keys queue up meanwhile).
   */
  async start(): Promise<void> {
    await this.controller.start();
  }

  /** Why the caches are not synced yet (the informers still waiting for a first list), or undefined once they are (readiness). */
  unsynced(): string | undefined {
    return this.controller.unsynced();
  }

  /** The Execution as this replica's cache holds it (every replica watches, leader or not). */
  cached(namespace: string, name: string): Execution | undefined {
    return this.executions.get(name, namespace);
  }

  /** Whether this replica reconciles (always true without leader election). */
  get isLeader(): boolean {
    return this.controller.isLeader;
  }

  /** Stops watching and reconciling; resolves when in-flight reconciles have returned. Pods keep running. */
  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** Reconciles one Execution (key namespace/name); returns when to look again. */
  async reconcile(key: string): Promise<{ requeueAfterMs?: number }> {
    const { namespace: ns, name } = splitKey(key);
    // Read from the API, not the cache: a stale status would redo work the last reconcile did.
    const ex = await this.getExecution(ns, name);
    if (ex === undefined) {
      this.toolCallsFolded.delete(key);
      this.opts.traces?.deleted(ns, name);
      await this.removeOrphanPods(ns, name, 0);
      await this.opts.credentials?.release(ns, name);
      return {};
    }
    if (ex.metadata.deletionTimestamp !== undefined) return {};
    // Events a previous controller staged for a status write it made but did not publish go first.
    await this.opts.events?.recover(ex);
    if (isTerminal(ex.status?.phase)) {
      this.toolCallsFolded.delete(key);
      const kept = await this.removeOrphanPods(ns, name);
      await this.opts.credentials?.release(ns, name, ex.metadata.uid);
      return kept === undefined ? {} : { requeueAfterMs: Math.max(50, kept - this.now() + 50) };
    }
    return ex.spec.parent !== undefined ? this.reconcileJudge(ex) : this.reconcileRun(ex);
  }

  // ------------------------------------------------------------------ the outer loop

  /**
   * One pass of the outer loop for a run: gather what is observed (its Agent and judges, the
   * stored worker result, the judge children's outcomes, the worker pod), let the engine
   * decide until it has nothing more to observe, write the status, then act on its end.
   */
  private async reconcileRun(ex: Execution): Promise<{ requeueAfterMs?: number }> {
    const ns = ex.metadata.namespace ?? "default";
    const raw = await this.getAgent(ns, ex.spec.agentRef.name);
    if (raw === undefined) return this.agentMissing(ex);
    const agent = withDefaults(raw);
    const unguarded = gateBlocks(this.opts.gate, agent, ns);
    const held = await this.holdBeforeStart(ex, agent, unguarded);
    if (held !== undefined) return held;
    const ctx: EngineContext = { execution: ex, agent, judges: await this.judgeAgents(ns, agent) };
    const state = await this.restoreRun(ctx);
    const events = await this.decideAll(ctx, state);
    const foldAgainInMs = await this.writeRunStatus(ctx, state, events, unguarded);
    if (isTerminal(state.status.phase)) {
      await this.removeOrphanPods(ns, ex.metadata.name);
      await this.opts.credentials?.release(ns, ex.metadata.name, ex.metadata.uid);
    }
    const deadline = nextDeadline(ctx, state);
    const wake = Math.min(deadline === undefined ? Infinity : Math.max(50, deadline - this.now() + 50), foldAgainInMs ?? Infinity);
    return wake === Infinity ? {} : { requeueAfterMs: wake };
  }

  /**
   * Why a run that has not started yet must not start now, as the reconcile's result: no gate
   * can decide its tool calls (fail closed), or its judges cannot get its volumes by snapshot.
   * Undefined when it may go on (or has already started).
   */
  private async holdBeforeStart(ex: Execution, agent: Agent, unguarded: string | undefined): Promise<{ requeueAfterMs?: number } | undefined> {
    if (ex.status?.startTime !== undefined) return undefined;
    if (unguarded !== undefined) {
      // Fail closed: a worker whose tool calls nobody could decide is never started.
      const waiting = waitingForGate(ex, agent, unguarded, this.now());
      await this.writeStatus(ex, waiting.status);
      return waiting.requeueAfterMs === undefined ? {} : { requeueAfterMs: waiting.requeueAfterMs };
    }
    // Deleted and created again at once: the earlier run's pods and results must not pass for this run's.
    const claims = (agent.spec.volumes ?? []).map((v) => claimName(ex.metadata.name, v.name));
    const earlier = await removeEarlierRun({ core: this.core, pods: this.pods, executions: this.executions }, ex, claims);
    if (earlier !== undefined) {
      await this.writeStatus(ex, { ...ex.status, phase: "Pending", message: earlier });
      return { requeueAfterMs: 1000 };
    }
    // Refused before any pod starts: the worker would run for judges that cannot get its volumes.
    const problem = agent.spec.workspace_strategy === "snapshot" ? await this.snapshotProblem(agent) : undefined;
    return problem === undefined ? undefined : this.refuse(ex, "WorkspaceStrategyUnsupported", problem);
  }

  /** The judge Agents the run's validators name (those that exist), with defaults. */
  private async judgeAgents(namespace: string, agent: Agent): Promise<Map<string, Agent>> {
    const judges = new Map<string, Agent>();
    for (const j of judgeNamesOf(agent)) {
      const a = await this.getAgent(namespace, j);
      if (a !== undefined) judges.set(j, withDefaults(a));
    }
    return judges;
  }

  /**
   * The engine's state rebuilt from the status and what is observed: the current iteration's
   * stored worker result and its validation judges' outcomes. Unless the run is being
   * cancelled, judges the status says were asked for are (re)spawned and the worker pod observed.
   */
  private async restoreRun(ctx: EngineContext): Promise<EngineState> {
    const ex = ctx.execution;
    const namespace = ns(ex);
    const iteration = ex.status?.iteration;
    const stored = iteration === undefined ? undefined : await readWorkerResult(this.core, namespace, workerName(ex.metadata.name, iteration));
    const outcomes = new Map<string, JudgeOutcome | null>();
    for (const ref of ex.status?.children ?? []) {
      // Tool-judge children are the gate's to wait on, not the outer loop's.
      if (ref.iteration !== iteration || ref.purpose !== "validation") continue;
      const child = await this.getExecution(namespace, ref.name);
      if (child !== undefined) outcomes.set(ref.name, outcomeOfStatus(child.status) ?? null);
    }
    const { state, respawn } = restoreState(ctx, { ...(stored !== undefined ? { worker: stored } : {}), judges: outcomes });
    // The gate's tool-judge children are listed too, so a cancel or deadline stops them with the run.
    mergeToolJudgeRefs(state.status, this.executions.list(namespace).filter((c) => c.spec?.parent?.name === ex.metadata.name));
    if (ex.metadata.annotations?.[CANCEL_ANNOTATION] !== undefined) {
      // Nothing is (re)started for a run being cancelled; decide stops what runs.
      requestCancel(state);
    } else {
      for (const req of respawn) await this.spawnJudge(ctx, state, req);
      await this.observeWorkerPod(ctx, state);
    }
    return state;
  }

  /** Runs decide and performs its actions until an action observes nothing new; returns the events. */
  private async decideAll(ctx: EngineContext, state: EngineState): Promise<{ event: string; data: Record<string, unknown> }[]> {
    const events: { event: string; data: Record<string, unknown> }[] = [];
    for (let round = 0; round < 100; round++) {
      const actions = decide(ctx, state, this.now());
      let observed = false;
      for (const a of actions) {
        if (a.type === "event") events.push(a);
        observed = (await this.perform(ctx, state, a)) || observed;
      }
      if (!observed) break;
    }
    return events;
  }

  /**
   * Writes the run's status (with the gate's part: guarded condition, tool calls); its events
   * are staged before (an outbox a restarted controller reads) and published, traced, counted
   * and recorded only once the status that holds the transitions is written: a retried
   * reconcile (409) decides them again then. Returns, when the tool-call fold was skipped,
   * how soon to look again.
   */
  private async writeRunStatus(ctx: EngineContext, state: EngineState, events: { event: string; data: Record<string, unknown> }[], unguarded: string | undefined): Promise<number | undefined> {
    const ex = ctx.execution;
    const before = ex.metadata.resourceVersion;
    const streamed = this.opts.events === undefined && this.opts.traces === undefined ? [] : toGavelEvents(ex, events, new Date(this.now()));
    const staged = streamed.length > 0 && this.opts.events !== undefined ? await this.opts.events.stage(ex, streamed, state.status) : undefined;
    if (gateRequirement(ctx.agent, this.opts.gate?.policiesInScope(ns(ex)) ?? false) !== undefined) setGuarded(state.status, unguarded, new Date(this.now()), ex.metadata.generation);
    const foldAgainInMs = this.foldToolCalls(ex, state.status);
    await this.writeStatus(ex, state.status);
    if (ex.metadata.resourceVersion !== before) {
      this.opts.events?.commit(ex, streamed, staged);
      if (ex.spec.parent === undefined && streamed.length > 0) this.opts.traces?.observe(traced(ex, ctx.agent), streamed);
      this.countOutcomes(events);
      await this.kubeEvents.record(ex, events);
    }
    return foldAgainInMs;
  }

  /**
   * Folds the gate's tool calls into a status about to be written, at most once per
   * TOOL_CALL_FOLD_MS for an Execution unless the status changes anyway: every decision
   * changes the counts, and each status write wakes this reconciler again through the
   * watch, so folding on every reconcile kept a busy worker's Execution in a loop of
   * GET, GET, PUT on the event loop the gate answers from. Returns, when it skipped the
   * fold, how soon to look again.
   */
  private foldToolCalls(ex: Execution, status: ExecutionStatus): number | undefined {
    const gate = this.opts.gate;
    if (gate === undefined) return undefined;
    const key = `${ex.metadata.namespace ?? "default"}/${ex.metadata.name}`;
    const since = this.now() - (this.toolCallsFolded.get(key) ?? -Infinity);
    if (since < TOOL_CALL_FOLD_MS && sameStatus(ex.status, status)) return TOOL_CALL_FOLD_MS - since;
    gate.annotate(ex, status);
    if (isTerminal(status.phase)) this.toolCallsFolded.delete(key);
    else this.toolCallsFolded.set(key, this.now());
    return undefined;
  }

  /** Performs one engine action; true when it observed something (decide must run again). */
  private async perform(ctx: EngineContext, state: EngineState, a: EngineAction): Promise<boolean> {
    const ex = ctx.execution;
    switch (a.type) {
      case "event":
        this.logger.info({ execution: `${ns(ex)}/${ex.metadata.name}`, ...(typeof a.data.iteration === "number" ? { iteration: a.data.iteration } : {}), event: a.event, data: a.data }, "loop event");
        return false;
      case "start_worker":
        await this.ensureClaims(ex, ctx.agent);
        await this.createWorkerPod(ctx, state, a);
        return false;
      case "read_files": {
        // Level-triggered: each file's reader is a pod observed on a later reconcile (its end
        // wakes this Execution); a reconcile never waits for one.
        let observed = false;
        for (const f of a.files) {
          const content = await this.readerContent(ctx, a.iteration, f);
          if (content === undefined) continue;
          observeFile(state, f.key, content);
          observed = true;
        }
        return observed;
      }
      case "spawn_judge":
        await this.spawnJudge(ctx, state, a.child);
        return false;
      case "stop":
        for (const name of a.names) await this.stopWorkload(ex, name, a.reason);
        return false;
      case "finish":
        return false;
    }
  }

  /** The current iteration's worker: collects it when it ended, creates it when it is missing. */
  private async observeWorkerPod(ctx: EngineContext, state: EngineState): Promise<void> {
    const record = state.status.iterations?.at(-1);
    if (record === undefined) return;
    const ex = ctx.execution;
    const worker = workerName(ex.metadata.name, record.number);
    const place = placementOf(ex, "apart");
    const seen = await this.workloads.observe(worker, place);
    if (state.worker !== undefined) {
      // Its result is kept: the pod goes once its retention has passed.
      if (seen.state !== "absent") await this.workloads.retire(worker, place, this.retention);
      return;
    }
    if (record.phase !== "Running") return;
    if (seen.state === "absent") {
      // Never created (the controller stopped first) or gone before its result was kept: run it.
      await this.ensureClaims(ex, ctx.agent);
      const timeoutSeconds = Math.max(1, Math.ceil(((state.iterationStartedAtMs ?? this.now()) + iterationLimitMs(ctx) - this.now()) / 1000));
      await this.createWorkerPod(ctx, state, { name: worker, iteration: record.number, ...(record.feedback !== undefined ? { feedback: record.feedback } : {}), timeoutSeconds });
      return;
    }
    if (seen.state !== "ended" && seen.state !== "stuck") return;
    const end = seen.state === "stuck" ? { exitCode: -1, timedOut: false, node: seen.node } : seen;
    const out = seen.state === "stuck" ? { stdout: `pod ${this.workloads.podName(worker)} cannot start: ${seen.reason}`, stderr: seen.reason } : streamsOf(await this.workloads.output(worker, place));
    const w: WorkerObservation = { iteration: record.number, exitCode: end.exitCode, ...out, timedOut: end.timedOut, cancelled: false };
    // Kept before the pod goes: its log goes with it.
    await storeWorkerResult(this.core, ns(ex), resultConfigMaps(ex, worker, w, end.node));
    observeWorker(state, w);
    await this.workloads.retire(worker, place, this.retention);
  }

  private async spawnJudge(ctx: EngineContext, state: EngineState, c: JudgeChildRequest): Promise<void> {
    const ex = ctx.execution;
    // The iteration's decided tool calls as the gate has them now (the judge's tool_call_history).
    this.opts.gate?.annotate(ex, state.status);
    const { execution: body } = validationJudgeChild({
      status: state.status,
      parent: ex,
      worker: ctx.agent,
      judge: ctx.judges.get(c.judge),
      request: c,
      output: state.worker?.stdout ?? "",
      workerMounts: workspaceMounts(ex.metadata.name, ctx.agent, true),
    });
    if (await createJudgeChild({ core: this.core, custom: this.api }, body)) this.controller.metrics.reconcile.childrenCreated.inc(this.controller.metrics.labels);
  }

  /** Stops the worker pod or a judge child (its status says why; its pod is deleted). */
  private async stopWorkload(ex: Execution, name: string, reason: "cancelled" | "timed_out"): Promise<void> {
    const namespace = ns(ex);
    const child = (ex.status?.children ?? []).some((c) => c.name === name) ? await this.getExecution(namespace, name) : undefined;
    if (child !== undefined && !isTerminal(child.status?.phase)) {
      await this.writeStatus(child, judgeStatus(child.status, stoppedByParent(reason), new Date(this.now()))).catch((err: unknown) => {
        // The child's own reconcile may have just finished it; its verdict stands then.
        if (!isConflict(err)) throw err;
      });
    }
    await this.workloads.retire(name, { namespace }, this.retention);
  }

  /**
   * A worker pod with its credential. A worker whose network is restricted (none, or an
   * allowlist) gets the gate's address and an egress rule to it (gate-egress.ts), so its tool
   * calls still reach the gate and nothing else opens up.
   */
  private async createWorkerPod(ctx: EngineContext, state: EngineState, run: WorkerRun): Promise<void> {
    const ex = ctx.execution;
    await this.removeReaders(ex, run.iteration);
    const trace = this.opts.traces === undefined ? {} : { traceParent: this.opts.traces.iterationParent(traced(ex, ctx.agent), run.iteration) };
    let spec = workerSpec(ex, ctx.agent, run, { ...this.specOptions(), ...trace });
    let place: PodPlacement = workerPlacement(ex, ctx.agent, this.opts.readerImage ?? defaultImages().reader);
    if ((this.opts.natsUrl ?? "") !== "" && isRestrictedWorker(spec)) {
      const access = await this.gateAccess();
      spec = workerSpec(ex, ctx.agent, run, { ...this.specOptions(), ...trace, natsUrl: access.url });
      place = { ...place, gate: { policy: workerGatePolicy(access), egress: access.egress } };
    }
    const credentials = this.opts.credentials;
    if (credentials !== undefined) place = { ...place, credentialSecret: await credentials.ensure(ctx, state.startedAtMs ?? this.now()) };
    await this.ensureWorkload(spec, place);
  }

  /** The gate access of restricted workers, resolved once (a failure is tried again next time). */
  private gateAccess(): Promise<GateAccess> {
    this.gateAccessing ??= gateAccess(this.opts.natsUrl ?? "", (name, namespace) => this.core.readNamespacedService({ name, namespace })).catch((err: unknown) => {
      this.gateAccessing = undefined;
      throw err;
    });
    return this.gateAccessing;
  }
  private gateAccessing: Promise<GateAccess> | undefined;

  private async ensureClaims(ex: Execution, agent: Agent): Promise<void> {
    for (const v of agent.spec.volumes ?? []) {
      await createOrAdopt(() => this.core.createNamespacedPersistentVolumeClaim({ namespace: ns(ex), body: claimManifest(ex, v) }));
    }
  }

  // ------------------------------------------------------------------ judge children

  /** Counts the iterations and runs that ended in a status just written (engine events `iteration.finished`, `execution.phase`). */
  private countOutcomes(events: readonly { event: string; data: Record<string, unknown> }[]): void {
    for (const e of events) {
      if (e.event === "iteration.finished" && typeof e.data.outcome === "string") this.outcomes.iterations.inc({ outcome: e.data.outcome });
      if (e.event === "execution.phase" && typeof e.data.phase === "string" && isTerminal(e.data.phase as ExecutionStatus["phase"])) this.outcomes.executions.inc({ phase: e.data.phase });
    }
  }

  /**
   * A judge child: one pod of the judge Agent with the payload. The engine (judge-run.ts)
   * decides from what this observes (a spawn error, the judge, the parent, the pod's end, the
   * clock) whether the pod runs or the child ends; a pod that cannot be made ends it too.
   */
  private async reconcileJudge(child: Execution): Promise<{ requeueAfterMs?: number }> {
    const namespace = ns(child);
    const spawnError = child.metadata.annotations?.[SPAWN_ERROR_ANNOTATION];
    const raw = spawnError === undefined ? await this.getAgent(namespace, child.spec.agentRef.name) : undefined;
    const ctx: JudgeRunContext = { child, judge: raw === undefined ? undefined : withDefaults(raw) };
    const observed = spawnError !== undefined ? { problem: spawnError } : ctx.judge === undefined ? {} : await this.observeJudgeChild(child);
    let step = judgeRunStep(ctx, observed, this.now());
    if (step.type === "run" && observed.parentObject !== undefined) {
      const problem = await this.startJudgePod(child, ctx.judge as Agent, observed.parentObject);
      if (problem !== undefined) step = judgeRunStep(ctx, { ...observed, problem }, this.now());
    }
    if (step.type === "finish") return this.finishJudge(child, step);
    await this.writeStatus(child, step.status);
    return { requeueAfterMs: Math.max(50, step.deadlineMs - this.now() + 50) };
  }

  /** What the engine needs of a judge child whose judge exists: its parent and its pod's end. */
  private async observeJudgeChild(child: Execution): Promise<JudgeRunObservation & { parentObject?: Execution }> {
    const namespace = ns(child);
    const parent = child.spec.parent === undefined ? undefined : await this.getExecution(namespace, child.spec.parent.name);
    if (parent === undefined) return { parent: "gone" };
    const observed = { parentObject: parent, ...(parent.status?.phase !== undefined ? { parent: parent.status.phase } : {}) };
    const place = placementOf(child, "apart");
    const seen = await this.workloads.observe(child.metadata.name, place);
    if (seen.state === "stuck") return { ...observed, stuck: `the judge pod cannot start: ${seen.reason}` };
    if (seen.state !== "ended") return observed;
    // stdout apart from stderr when the pod ran under gavel-launch; else the merged log.
    const streams = streamsOf(await this.workloads.output(child.metadata.name, place));
    return { ...observed, end: { exitCode: seen.exitCode, ...streams, timedOut: seen.timedOut } };
  }

  /** Writes a judge child's final status, counts it once, and retires its pod. */
  private async finishJudge(child: Execution, step: Extract<JudgeRunStep, { type: "finish" }>): Promise<{ requeueAfterMs?: number }> {
    const before = child.metadata.resourceVersion;
    await this.writeStatus(child, step.status);
    if (child.metadata.resourceVersion !== before) {
      // Counted once, with the write that ends the child.
      const purpose = child.spec.parent?.purpose ?? "validation";
      const started = Date.parse(child.status?.startTime ?? "");
      this.outcomes.judgeResults.inc({ purpose, result: step.outcome.ok ? "verdict" : step.outcome.rejection });
      if (!Number.isNaN(started)) this.outcomes.judgeSeconds.observe({ purpose }, Math.max(0, this.now() - started) / 1000);
    }
    // An ended pod stays for its retention (the terminal child's reconciles delete it then); a running one goes now.
    const place = placementOf(child);
    if ((await this.workloads.observe(child.metadata.name, place)).state !== "absent") await this.workloads.retire(child.metadata.name, place, this.retention);
    return {};
  }

  /**
   * The engine's `run` step: creates the judge's pod when it is missing (after the private
   * copies of the worker's volumes, for the copy strategy). Returns why it cannot run, if so.
   */
  private async startJudgePod(child: Execution, judge: Agent, parent: Execution): Promise<string | undefined> {
    const namespace = ns(child);
    const parentAgent = await this.getAgent(namespace, parent.spec.agentRef.name);
    const { mounts, copies, snapshots, onWorkerNode } =
      parentAgent === undefined ? { mounts: [], copies: [], snapshots: [], onWorkerNode: false } : judgeWorkspaces(parent.metadata.name, withDefaults(parentAgent), child.metadata.name);
    // The snapshot strategy: a restore the CSI driver reports failed will never let the pod start.
    if ((await this.workloads.observe(child.metadata.name, { namespace })).state !== "absent") return this.snapshotFailure(child, snapshots);
    const built = judgeSpec(child, judge, mounts, this.specOptions());
    if (typeof built === "string") return built;
    // A pod that mounts the worker's ReadWriteOnce claim runs where that claim is attached.
    const node = onWorkerNode ? await this.workerNode(parent, child.spec.parent?.iteration ?? 1) : undefined;
    // The snapshot strategy: a VolumeSnapshot of each worker claim and a claim restored from it (the judge's pod waits for the restore).
    const snapped = snapshots.length === 0 ? undefined : await this.ensureSnapshots(child, snapshots);
    if (snapped !== undefined) return snapped;
    // The copy strategy: the judge starts once its private copies of the worker's volumes are made.
    const copied = copies.length === 0 ? "done" : await this.ensureCopies(child, copies, node);
    if (typeof copied === "object") return copied.failed;
    if (copied !== "done") return undefined;
    try {
      await this.ensureWorkload(built.spec, node === undefined ? built.place : { ...built.place, node });
    } catch (err) {
      // An allowlisted host that does not resolve: the judge cannot run as declared.
      if (err instanceof TerminalError) return err.message;
      throw err;
    }
    // The copier holds the copies (ReadWriteOncePod): it goes now that the judge's pod exists.
    if (copies.length > 0) await this.workloads.retire(copierName(child.metadata.name), { namespace }, 0);
    return undefined;
  }

  /**
   * The judge's copies of the worker's volumes (workspace strategy `copy`): their claims and
   * a copier pod, created once; "done" when the copier succeeded, "copying" while it runs,
   * or why it failed. Level-triggered: the copier pod's phase is the state. A tool-call judge
   * of a worker whose pod carries the copy source, while that pod runs, gets its copies
   * streamed out of it (ADR 0041): the worker's ReadWriteOncePod claims cannot be mounted elsewhere.
   */
  private async ensureCopies(child: Execution, copies: WorkspaceCopy[], node: string | undefined): Promise<"done" | "copying" | { failed: string }> {
    const namespace = ns(child);
    const name = copierName(child.metadata.name);
    const place = placementOf(child);
    const seen = await this.workloads.observe(name, place);
    if (seen.state === "absent") {
      // A cache that has not seen the judge's pod yet must not start a second copy under it.
      if ((await this.workloads.observe(child.metadata.name, place, { uncached: true })).state !== "absent") return "done";
      for (const c of copies) await createOrAdopt(() => this.core.createNamespacedPersistentVolumeClaim({ namespace, body: copyClaimManifest(child, c) }));
      const image = this.opts.readerImage ?? defaultImages().reader;
      const source = this.copySource(child);
      if (source !== undefined) await this.ensureWorkload(streamCopierWorkload(child, copies, image), { ...place, annotations: { [COPY_SOURCE_ANNOTATION]: source } });
      else await this.ensureWorkload(copierWorkload(child, copies, image), node === undefined ? place : { ...place, node });
      return "copying";
    }
    const key = `${namespace}/${name}`;
    if (seen.state === "stuck") return { failed: `the workspace copy cannot start: ${seen.reason}` };
    if (seen.state !== "ended") {
      // A stream copier names its source pod; the stream starts once the copier's container runs.
      const source = this.pods.get(this.workloads.podName(name), namespace)?.metadata?.annotations?.[COPY_SOURCE_ANNOTATION];
      if (source !== undefined && seen.state === "running" && !this.streams.has(key)) this.startStream(key, namespace, source, this.workloads.podName(name), copies);
      return "copying";
    }
    if (seen.exitCode === 0) return "done";
    const log = (await this.workloads.output(name, place)).stdout;
    const sourceProblem = this.streams.get(key)?.problem;
    return { failed: `the workspace copy failed (exit ${seen.exitCode}${seen.timedOut ? ", deadline" : ""}): ${log.slice(-500)}${sourceProblem !== undefined ? ` (${sourceProblem})` : ""}` };
  }

  /** The worker pod a tool-call judge's copies are streamed from: its parent's current worker pod, while it runs with the copy source; else undefined. */
  private copySource(child: Execution): string | undefined {
    if (child.spec.parent?.purpose !== "tool_validation") return undefined;
    const worker = this.workloads.podName(workerName(child.spec.parent.name, child.spec.parent.iteration ?? 1));
    const pod = this.pods.get(worker, ns(child));
    const carries = pod?.spec?.initContainers?.some((c) => c.name === COPY_SOURCE_CONTAINER) ?? false;
    const state = observationOf(pod).state;
    return carries && (state === "pending" || state === "running") ? worker : undefined;
  }

  /**
   * Starts one stream copy (once per copier in this process; its commit wakes the child through
   * the copier pod's end). A copier left running by a controller that died mid-copy gets its
   * copy from here, from the start (ADR 0044): nothing of a cut attempt is committed.
   */
  private startStream(key: string, namespace: string, sourcePod: string, copierPod: string, copies: WorkspaceCopy[]): void {
    const entry: { problem?: string } = {};
    this.streams.set(key, entry);
    this.logger.info({ copier: key, source: sourcePod }, "workspace stream copy started");
    copyWorkspace(this.opts.kc, { namespace, sourcePod, copierPod, command: copySourceCommand(copies) }).then(
      (problem) => {
        if (problem !== undefined) entry.problem = problem;
      },
      (err: unknown) => {
        entry.problem = messageOf(err);
      },
    ).finally(() => {
      if (entry.problem !== undefined) this.logger.warn({ copier: key, problem: entry.problem }, "workspace stream failed");
      // Forgotten once its copier can no longer need it.
      setTimeout(() => this.streams.delete(key), 10 * 60_000).unref();
    });
  }
  /**
   * The judge's VolumeSnapshots of the worker's claims and the claims restored from them
   * (workspace strategy `snapshot`), created once (adopted on a retry); why not, naming the field.
   */
  private async ensureSnapshots(child: Execution, snapshots: WorkspaceCopy[]): Promise<string | undefined> {
    const namespace = ns(child);
    for (const s of snapshots) {
      const chosen = await this.snapshotClassFor(s.volume);
      if ("problem" in chosen) return chosen.problem;
      const body = volumeSnapshotManifest(child, s, chosen.name);
      await createOrAdopt(() => this.api.createNamespacedCustomObject({ group: SNAPSHOT_GROUP, version: SNAPSHOT_VERSION, namespace, plural: "volumesnapshots", body }));
      await createOrAdopt(() => this.core.createNamespacedPersistentVolumeClaim({ namespace, body: restoredClaimManifest(child, s) }));
    }
    return undefined;
  }

  /** Why one of the judge's VolumeSnapshots failed (the CSI driver's status.error); undefined while they are fine. */
  private async snapshotFailure(child: Execution, snapshots: WorkspaceCopy[]): Promise<string | undefined> {
    for (const s of snapshots) {
      const got: unknown = await this.api
        .getNamespacedCustomObject({ group: SNAPSHOT_GROUP, version: SNAPSHOT_VERSION, namespace: ns(child), plural: "volumesnapshots", name: s.to.source })
        .catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
      const error = snapshotError(got);
      if (error !== undefined) return `spec.workspace_strategy: the VolumeSnapshot ${s.to.source} of volume ${s.volume.name} failed: ${error}`;
    }
    return undefined;
  }

  /** Why `snapshot` cannot serve one of the Agent's volumes (the first), naming the field; undefined when every volume has a class. */
  private async snapshotProblem(agent: Agent): Promise<string | undefined> {
    for (const v of agent.spec.volumes ?? []) {
      const chosen = await this.snapshotClassFor(v);
      if ("problem" in chosen) return chosen.problem;
    }
    return undefined;
  }

  /** The VolumeSnapshotClass for a volume's claims: its StorageClass (or the cluster's default) names the CSI driver. */
  private async snapshotClassFor(volume: VolumeSpec): Promise<{ name: string } | { problem: string }> {
    try {
      return await this.readSnapshotClassFor(volume);
    } catch (err) {
      if (httpStatusOf(err) !== 403) throw err;
      return { problem: `spec.workspace_strategy: snapshot needs to list StorageClasses and VolumeSnapshotClasses (cluster-scoped), which this controller may not (${messageOf(err)})` };
    }
  }

  private async readSnapshotClassFor(volume: VolumeSpec): Promise<{ name: string } | { problem: string }> {
    const classes = (await this.storage.listStorageClass()).items;
    const sc = volume.storage_class !== undefined ? classes.find((c) => c.metadata?.name === volume.storage_class) : classes.find((c) => c.metadata?.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true");
    if (sc === undefined) {
      const which = volume.storage_class !== undefined ? `StorageClass ${volume.storage_class} does not exist` : "the cluster has no default StorageClass";
      return { problem: `spec.workspace_strategy: snapshot cannot serve volume ${volume.name}: ${which}` };
    }
    let snapshotClasses: SnapshotClass[] | undefined;
    try {
      const list = (await this.api.listClusterCustomObject({ group: SNAPSHOT_GROUP, version: SNAPSHOT_VERSION, plural: "volumesnapshotclasses" })) as { items?: unknown[] };
      snapshotClasses = (list.items ?? []).map(snapshotClassOf).filter((c): c is SnapshotClass => c !== undefined);
    } catch (err) {
      // 404: the CRDs (external-snapshotter) are not installed.
      if (!isNotFound(err)) throw err;
    }
    return chooseSnapshotClass(volume.name, sc.metadata?.name ?? "", sc.provisioner, snapshotClasses);
  }

  /** The node the worker of `iteration` ran on: its pod's, else the one its stored result names. */
  private async workerNode(parent: Execution, iteration: number): Promise<string | undefined> {
    const worker = workerName(parent.metadata.name, iteration);
    const seen = await this.workloads.observe(worker, { namespace: ns(parent) });
    const onPod = "node" in seen ? seen.node : undefined;
    if (onPod !== undefined) return onPod;
    const stored = await this.core.readNamespacedConfigMap({ name: resultName(worker), namespace: ns(parent) }).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    return stored?.data?.node;
  }

  // ------------------------------------------------------------------ I/O helpers

  private specOptions() {
    return { natsUrl: this.opts.natsUrl ?? "", ...(this.opts.runtimes !== undefined ? { runtimes: this.opts.runtimes } : {}) };
  }

  /** Seconds a finished pod gavel no longer needs is kept. */
  private get retention(): number {
    return this.opts.podRetentionSeconds ?? DEFAULT_POD_RETENTION_SECONDS;
  }

  /** Creates a workload's pod when it is absent, counting it. */
  private async ensureWorkload(spec: WorkloadSpec, place: PodPlacement): Promise<void> {
    if (await this.workloads.ensure(spec, place)) this.controller.metrics.reconcile.podsCreated.inc(this.controller.metrics.labels);
  }

  /**
   * A validator's file, read by a pod of its own: a workspace file through a reader with the
   * claim mounted read-only, an image file through a reader of the agent's image. Creates the
   * pod when it is missing; undefined until it has ended. Finished readers stay (a later
   * reconcile that rebuilt its state reads them again) until the next iteration starts or the
   * Execution ends.
   */
  private async readerContent(ctx: EngineContext, iteration: number, f: FileRequest): Promise<FileContent | undefined> {
    const ex = ctx.execution;
    const name = readerName(ex.metadata.name, iteration, f.key);
    const place = placementOf(ex);
    const seen = await this.workloads.observe(name, place);
    if (seen.state === "absent") {
      const spec = this.readerSpec(ctx, name, f);
      if ("problem" in spec) return { ok: false, reason: "unreadable", detail: spec.problem };
      await this.ensureWorkload(readerWorkload(ex, spec, iteration), place);
      return undefined;
    }
    if (seen.state === "stuck") return { ok: false, reason: "unreadable", detail: `the reader pod ${this.workloads.podName(name)} cannot start: ${seen.reason}` };
    if (seen.state !== "ended") return undefined;
    const out = await this.workloads.output(name, place);
    // A reader's pod log merges stderr into stdout: an error's message is in the log, a content never has stderr.
    return readerContent({ exitCode: seen.exitCode, stdout: out.stdout, stderr: "", timedOut: seen.timedOut, truncated: out.truncated }, f.from);
  }

  private readerSpec(ctx: EngineContext, name: string, f: FileRequest): WorkloadSpec | { problem: string } {
    const timeoutSeconds = 60;
    if (f.from === "image") {
      const image = agentImage(ctx.agent, this.opts.runtimes ?? runtimeTable(), defaultImages().worker) ?? defaultImages().worker;
      return imageReader(name, image, f.path, timeoutSeconds);
    }
    const mounts = workspaceMounts(ctx.execution.metadata.name, ctx.agent, true);
    const mount = mounts
      .filter((m) => f.path === m.mountPath || f.path.startsWith(m.mountPath.endsWith("/") ? m.mountPath : `${m.mountPath}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (mount === undefined) return { problem: `${f.path} is not inside any workspace volume (${mounts.map((m) => m.mountPath).join(", ") || "none"})` };
    return volumeReader(name, this.opts.readerImage ?? defaultImages().reader, mount, f.path, timeoutSeconds);
  }

  /** Deletes the finished readers of iterations before `iteration` (their validators are recorded). */
  private async removeReaders(ex: Execution, iteration: number): Promise<void> {
    for (const pod of this.pods.list(ns(ex))) {
      const labels = pod.metadata?.labels ?? {};
      if (controllingExecution(pod) !== ex.metadata.name || labels[CHILD_LABELS.role] !== "reader") continue;
      if (Number(labels[CHILD_LABELS.iteration]) >= iteration) continue;
      await this.workloads.retirePod(pod, 0);
    }
  }

  /**
   * Deletes the reconciler pods controlled by an Execution that is gone or finished, except
   * ended ones within their retention; returns when the first kept one expires.
   */
  private async removeOrphanPods(namespace: string, execution: string, retentionSeconds?: number): Promise<number | undefined> {
    let next: number | undefined;
    for (const pod of this.pods.list(namespace === "" ? undefined : namespace)) {
      if (controllingExecution(pod) !== execution) continue;
      const until = await this.workloads.retirePod(pod, retentionSeconds ?? this.retention);
      if (until !== undefined) next = Math.min(next ?? until, until);
    }
    return next;
  }

  private async agentMissing(ex: Execution): Promise<{ requeueAfterMs?: number }> {
    const name = ex.spec.agentRef.name;
    const created = Date.parse(ex.metadata.creationTimestamp ?? "") || this.now();
    const grace = this.opts.agentGraceMs ?? 10_000;
    // Applied together, the Execution may arrive before its Agent: wait a little first.
    if (this.now() - created < grace) return { requeueAfterMs: Math.min(1000, grace) };
    return this.refuse(ex, "AgentNotFound", `spec.agentRef.name: Agent "${name}" not found in namespace ${ns(ex)}`);
  }

  /** Ends an Execution that cannot run as declared: Failed, with an Accepted=False condition whose message names the field. */
  private async refuse(ex: Execution, reason: string, message: string): Promise<{ requeueAfterMs?: number }> {
    const now = new Date(this.now()).toISOString();
    const condition: Condition = { type: ACCEPTED, status: "False", reason, message, lastTransitionTime: now, ...(ex.metadata.generation !== undefined ? { observedGeneration: ex.metadata.generation } : {}) };
    await this.writeStatus(ex, {
      ...ex.status,
      phase: "Failed",
      message,
      completionTime: now,
      conditions: [...(ex.status?.conditions ?? []).filter((c) => c.type !== ACCEPTED), condition],
      ...(ex.metadata.generation !== undefined ? { observedGeneration: ex.metadata.generation } : {}),
    });
    return {};
  }

  /** Replaces the status when it changed; the resourceVersion makes a stale write a 409 (retried). */
  private async writeStatus(ex: Execution, status: ExecutionStatus): Promise<void> {
    if (sameStatus(ex.status, status)) return;
    const body = { ...ex, status };
    try {
      const got = (await this.api.replaceNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace: ns(ex), plural: PLURAL, name: ex.metadata.name, body })) as Execution;
      this.controller.metrics.reconcile.statusWrites.inc(this.controller.metrics.labels);
      ex.metadata.resourceVersion = got.metadata.resourceVersion;
      ex.status = got.status;
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  private async getExecution(namespace: string, name: string): Promise<Execution | undefined> {
    try {
      return (await this.api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as Execution;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async getAgent(namespace: string, name: string): Promise<Agent | undefined> {
    try {
      return (await this.api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "agents", name })) as Agent;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/** The key of the Execution that controls an object (a pod, a judge child), if any. */
function ownerKey(obj: { metadata?: { namespace?: string; ownerReferences?: k8s.V1OwnerReference[] } }): string | undefined {
  const owner = controllingExecution(obj);
  return owner === undefined ? undefined : `${obj.metadata?.namespace ?? ""}/${owner}`;
}

/** A workload's two output streams (and why they are merged, if so), without its truncation mark. */
function streamsOf(out: WorkloadOutput): { stdout: string; stderr: string; streamsMerged?: string } {
  return { stdout: out.stdout, stderr: out.stderr, ...(out.streamsMerged !== undefined ? { streamsMerged: out.streamsMerged } : {}) };
}

function ns(ex: Execution): string {
  return ex.metadata.namespace ?? "default";
}

function iterationLimitMs(ctx: EngineContext): number {
  return iterationTimeoutSeconds(ctx.agent) * 1000;
}

/** What a trace says about an Execution. */
function traced(ex: Execution, agent: Agent): TracedExecution {
  return { namespace: ns(ex), name: ex.metadata.name, ...(ex.metadata.uid !== undefined ? { uid: ex.metadata.uid } : {}), agent: agent.metadata.name };
}
