// The Kubernetes driver of the outer loop: watches Executions and their pods and reconciles
// one Execution at a time with the engine (src/engine/outer-loop.ts). State lives in the
// Execution's status and is rebuilt on every reconcile; workloads have deterministic names;
// judges are child Executions this same reconciler runs. Level-triggered and idempotent, so a
// restarted controller picks every run up where the status says it was. This file wires the
// concerns and holds the reconcile body's first steps (get, deletion, ended); a run is
// execution-runs.ts', a judge child judge-children.ts'.
import * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import type { Execution } from "../api/types.js";
import { defaultImages } from "../children/images.js";
import type { RuntimeTable } from "../children/runtime-table.js";
import { isTerminal } from "../engine/outer-loop.js";
import { cachedPod, LABELS, type PodUser, PodWorkloads } from "../runtime/kubernetes.js";
import type { ExecutionTraces } from "../telemetry/execution-trace.js";
import { silentLogger, type Logger } from "../telemetry/logger.js";
import { executionMetrics, type Registry } from "../telemetry/metrics.js";
import { NO_GATE } from "./gate-guarding.js";
import type { GateStatus } from "./gate-status.js";
import type { ExecutionCredentials } from "./execution-credentials.js";
import type { ExecutionEventPublisher } from "./execution-events.js";
import { requeueAt, type ExecutionParts, type PodPort } from "./execution-parts.js";
import { EXECUTION_INSTANCE } from "./execution-pods.js";
import { executionKeys, podKeys } from "./execution-keys.js";
import { ExecutionRuns } from "./execution-runs.js";
import { CachedResources, readOnlyWatch, reconcilerCaches } from "./cached-resources.js";
import { ExecutionStatusWriter } from "./execution-status.js";
import { FileReaders } from "./file-readers.js";
import type { GavelResources } from "./gavel-resources.js";
import { JudgeChildren } from "./judge-children.js";
import { warmJudgesOf, type WarmJudges } from "./warm-judges.js";
import { Controller, type ControllerOptions } from "./runtime/controller.js";
import { Informer, podResource, splitKey } from "./runtime/informer.js";
import type { WorkQueue, WorkQueueOptions } from "./runtime/work-queue.js";
import { WorkspaceCopies } from "./workspace-copies.js";
import { WorkspaceSnapshots } from "./workspace-snapshots.js";

/** Seconds a finished pod is kept for its logs when the options say nothing. */
const DEFAULT_POD_RETENTION_SECONDS = 600;

/** The reconciler's pods: the informer of the pods it makes (its watch) and the Workloads port over them. */
export interface ExecutionPods {
  informer: Informer<k8s.V1Pod>;
  workloads: PodPort;
}

/** How the reconciler's pods are shaped (podWorkloadsFor). */
export interface PodShapeOptions {
  /** Namespace to watch; all namespaces when undefined. */
  namespace?: string;
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  /** Pull policy when an Agent sets none (default IfNotPresent; tests with imported images use Never). */
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** User of workers (pods with a writable workspace); default nobody. */
  writerUser?: PodUser;
  /**
   * The gavel-launch binary (dist/bin/gavel-launch): kept in a ConfigMap of each namespace that
   * worker and judge pods whose program is known mount and run it under, so their log keeps
   * stdout apart from stderr (log-streams.ts). Unset: programs run bare (the log merges them).
   */
  launcher?: Buffer;
  logger?: Logger;
  now?: () => number;
}

/** The reconciler's pods on a cluster: an informer of its instance's pods and PodWorkloads reading it. */
export function podWorkloadsFor(kc: k8s.KubeConfig, opts: PodShapeOptions = {}): ExecutionPods {
  const informer = new Informer<k8s.V1Pod>({
    kc,
    resource: podResource(kc, `${LABELS.instance}=${EXECUTION_INSTANCE}`),
    ...(opts.namespace !== undefined ? { namespaces: [opts.namespace] } : {}),
    ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
    transform: cachedPod,
    logger: opts.logger ?? silentLogger,
  });
  const workloads = new PodWorkloads({
    core: kc.makeApiClient(k8s.CoreV1Api),
    net: kc.makeApiClient(k8s.NetworkingV1Api),
    pods: informer,
    instance: EXECUTION_INSTANCE,
    ...(opts.imagePullPolicy !== undefined ? { imagePullPolicy: opts.imagePullPolicy } : {}),
    ...(opts.writerUser !== undefined ? { writerUser: opts.writerUser } : {}),
    ...(opts.launcher !== undefined ? { launcher: opts.launcher } : {}),
    ...(opts.now !== undefined ? { now: opts.now } : {}),
  });
  return { informer, workloads };
}

/** Options of ExecutionReconciler. */
export interface ExecutionReconcilerOptions {
  kc: k8s.KubeConfig;
  /** Its pods: the informer it watches and the Workloads port that makes them (podWorkloadsFor; a test passes a double). */
  pods: ExecutionPods;
  /** gavel's Executions and Agents; default read through the reconciler's caches (CachedResources). */
  resources?: GavelResources;
  /** Namespace to watch; all namespaces when undefined. */
  namespace?: string;
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  /** Concurrent reconciles (of different Executions). Default 4. */
  workers?: number;
  /** Image of the workspace file reader and copier (needs sh, cat, cp, tar). Default gavel/base:bookworm-node20. */
  readerImage?: string;
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
  /** Warm judge pods per tool_validation judge at most (ADR 0070; needs the launcher); undefined or 0 keeps none. */
  warmJudges?: number;
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
   * The tool-call gate's port (gate-supervisor.ts): an Execution whose Agent needs one never starts while it cannot serve
   * (fail closed); its decided calls are summarised in the status. Undefined: NO_GATE, such Executions wait (and time out) saying so.
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

/** Runs Executions on pods: watches Executions and their pods, reconciles one key at a time. */
export class ExecutionReconciler {
  private readonly executions: Informer<Execution>;
  private readonly controller: Controller<Execution>;
  private readonly parts: ExecutionParts;
  private readonly status: ExecutionStatusWriter;
  private readonly runs: ExecutionRuns;
  private readonly judges: JudgeChildren;
  /** The warm judge pods of runs' tool-call judges (ADR 0070), kept in a step of their own (ADR 0079); none when the controller keeps none. */
  private readonly warm: WarmJudges | undefined;

  constructor(private readonly opts: ExecutionReconcilerOptions) {
    const logger = opts.logger ?? silentLogger;
    const now = opts.now ?? Date.now;
    const cached = reconcilerCaches(opts.kc, opts.namespace === undefined ? undefined : [opts.namespace], logger, opts.scope);
    this.executions = cached.executions;
    const pods = opts.pods.informer;
    this.controller = new Controller<Execution>({
      name: "execution",
      kc: opts.kc,
      // An Execution wakes itself (first while not started) and its parent, a pod its owner; Agents are only read.
      primary: { informer: this.executions, keys: executionKeys },
      watches: [{ informer: pods, keys: podKeys }, readOnlyWatch(cached.agents)],
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      resyncMs: opts.resyncMs ?? 60_000,
      ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
      ...leaderElectionOf(opts.leaderElection),
      logger,
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
    });
    const { reconcile: m, labels } = this.controller.metrics;
    this.parts = {
      resources: opts.resources ?? new CachedResources(opts.kc, cached),
      core: opts.kc.makeApiClient(k8s.CoreV1Api),
      workloads: opts.pods.workloads,
      settings: {
        readerImage: opts.readerImage ?? defaultImages().reader,
        natsUrl: opts.natsUrl ?? "",
        ...(opts.runtimes !== undefined ? { runtimes: opts.runtimes } : {}),
        retentionSeconds: opts.podRetentionSeconds ?? DEFAULT_POD_RETENTION_SECONDS,
      },
      count: {
        statusWrite: () => m.statusWrites.inc(labels),
        podCreated: () => m.podsCreated.inc(labels),
        childCreated: () => m.childrenCreated.inc(labels),
      },
      now,
      logger,
    };
    const { events, traces, gate, credentials } = opts;
    const optional = { ...(traces !== undefined ? { traces } : {}), ...(gate !== undefined ? { gate } : {}) };
    this.status = new ExecutionStatusWriter(this.parts, {
      outcomes: executionMetrics(this.controller.metrics.registry),
      ...optional,
      ...(events !== undefined ? { events } : {}),
      ...(opts.agentGraceMs !== undefined ? { agentGraceMs: opts.agentGraceMs } : {}),
    });
    const copies = new WorkspaceCopies(this.parts, { kc: opts.kc, pods });
    const snapshots = new WorkspaceSnapshots(opts.kc);
    const judgeAccess = { status: this.status, copies, snapshots, ...(gate !== undefined ? { gate } : {}) };
    const warm = warmJudgesOf(this.parts, opts.kc, pods, opts.warmJudges);
    this.warm = warm.warm;
    this.judges = new JudgeChildren(this.parts, { ...judgeAccess, ...warm });
    this.runs = new ExecutionRuns(this.parts, {
      status: this.status,
      judges: this.judges,
      readers: new FileReaders(this.parts),
      copies,
      snapshots,
      caches: { pods, executions: this.executions },
      ...optional,
      gate: gate ?? NO_GATE,
      ...(credentials !== undefined ? { credentials } : {}),
    });
  }

  /** The work queue (keys namespace/name); the tool-call gate wakes an Execution through it. */
  get queue(): WorkQueue {
    return this.controller.queue;
  }

  /** Counters; errors and conflicts are the runtime's (reconciles that threw, retried with backoff). */
  get stats(): ExecutionStats {
    const { reconcile: m, labels } = this.controller.metrics;
    const { reconciles, errors, conflicts } = this.controller.stats;
    return {
      reconciles,
      errors,
      conflicts,
      statusWrites: m.statusWrites.get(labels),
      podsCreated: m.podsCreated.get(labels),
      childrenCreated: m.childrenCreated.get(labels),
    };
  }

  /** Fills the caches and starts the watches, then the workers: at once, or once this replica holds the Lease (keys queue up meanwhile). */
  async start(): Promise<void> {
    await this.controller.start();
  }

  /** Why the caches are not synced yet (the informers still waiting for a first list), or undefined once they are (readiness). */
  unsynced(): string | undefined {
    return this.controller.unsynced();
  }

  /** The Executions as this replica's cache holds them, and their changes (every replica watches, leader or not). */
  get cache(): Pick<Informer<Execution>, "get" | "on"> {
    return this.executions;
  }

  /** Whether this replica reconciles (always true without leader election). */
  get isLeader(): boolean {
    return this.controller.isLeader;
  }

  /** Stops watching and reconciling; resolves when in-flight reconciles have returned and their Events are sent. Pods keep running. */
  async stop(): Promise<void> {
    await this.controller.stop();
    await this.status.flushEvents();
  }

  /**
   * Reconciles one Execution (key namespace/name); returns when to look again. Get; deletion
   * (no finalizer: every object it made is owned by it, so the garbage collector removes
   * them; its pods go at once); an ended one's leftovers; else a run (then its warm pools, from
   * the status it wrote) or a judge child.
   */
  async reconcile(key: string): Promise<{ requeueAfterMs?: number }> {
    const { namespace, name } = splitKey(key);
    // Never older than the status this process last wrote (CachedResources): a stale one would redo that work.
    const ex = await this.parts.resources.execution(namespace, name);
    if (ex === undefined) {
      this.status.forget(key);
      this.opts.traces?.deleted(namespace, name);
      await this.parts.workloads.retireOwned(namespace, name, 0);
      await this.opts.credentials?.release(namespace, name);
      return {};
    }
    if (ex.metadata.deletionTimestamp !== undefined) return {};
    // Events a previous controller staged for a status write it made but did not publish go first.
    await this.opts.events?.recover(ex);
    if (isTerminal(ex.status?.phase)) {
      this.status.forget(key);
      const kept = await this.parts.workloads.retireOwned(namespace, name, this.parts.settings.retentionSeconds);
      await this.opts.credentials?.release(namespace, name, ex.metadata.uid);
      return kept === undefined ? {} : { requeueAfterMs: requeueAt(kept, this.parts.now()) };
    }
    if (ex.spec.parent !== undefined) return this.judges.reconcile(ex);
    const result = await this.runs.reconcile(ex);
    // The pools learn their demand from the run as written, not from the run's reconcile (ADR 0079).
    await this.warm?.reconcile(namespace, name);
    return result;
  }
}

/** The runtime's leader election options from the reconciler's. */
function leaderElectionOf(le: ExecutionReconcilerOptions["leaderElection"]): Pick<ControllerOptions<Execution>, "leaderElection"> {
  if (le === undefined) return {};
  return {
    leaderElection: {
      namespace: le.namespace,
      identity: le.identity,
      name: le.leaseName ?? "gavel-execution-controller",
      ...(le.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: le.leaseDurationSeconds } : {}),
      ...(le.retryMs !== undefined ? { retryMs: le.retryMs } : {}),
      ...(le.onLost !== undefined ? { onLost: le.onLost } : {}),
    },
  };
}
