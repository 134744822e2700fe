// The shape every gavel controller has (controller-runtime's Controller, in small): informers
// map changes to keys, a de-duplicating queue hands each key to one reconcile at a time, a
// failed reconcile is retried with per-key backoff, a terminal one is recorded and not retried,
// everything is looked at again every resync, optionally only while holding a leader Lease.
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { classify, isConflict, messageOf, typedError, type TerminalError } from "../../errors.js";
import { EventRecorder, type EventNote } from "./event-recorder.js";
import { objectKey, splitKey, type ApiObject, type Informer } from "./informer.js";
import { LeaderLease, type LeaderLeaseOptions } from "./leader-lease.js";
import { PRIORITY, runWorkers, WorkQueue, type PrioritizedKey, type ProcessResult, type WorkQueueOptions } from "./work-queue.js";
import { silentLogger, type Logger } from "../../telemetry/logger.js";
import { reconcileMetrics, Registry, workQueueMetrics, type ReconcileMetrics } from "../../telemetry/metrics.js";

/** What a reconcile returns: done, or look at the key again after requeueAfterMs. */
export type ReconcileResult = ProcessResult;

/** An informer and the keys of the primary objects a change of one of its objects concerns. */
export interface WatchSource<T extends ApiObject> {
  informer: Informer<T>;
  /** Keys (namespace/name of primary objects) to reconcile when `obj` changes; a bare key is queued at PRIORITY.normal. */
  keys(obj: T): Iterable<string | PrioritizedKey>;
}

/** Leader election: the Lease, and what to do once it is lost (reconciling has stopped then). */
export type LeaderElection = Omit<LeaderLeaseOptions, "kc" | "log"> & { onLost?: () => void };

/** Options of a Controller. */
export interface ControllerOptions<P extends ApiObject> {
  /** Name for logs: agent, execution, guardpolicy. */
  name: string;
  kc: k8s.KubeConfig;
  /** The kind reconciled: keys are its objects' namespace/name; resync and terminal Events use it. Keys default to the object's own. */
  primary: { informer: Informer<P>; keys?: (obj: P) => Iterable<string | PrioritizedKey> };
  /** Other kinds whose changes wake primary keys (owned pods, child objects). Started before the primary. */
  watches?: WatchSource<ApiObject>[];
  /** Level-triggered: reads state by key, acts, returns when to look again. Throw to retry with backoff; throw TerminalError to stop. */
  reconcile(key: string): Promise<ReconcileResult | void>;
  /** Concurrent reconciles (of different keys); 0 runs none (the caller calls reconcile itself). Default 2. */
  workers?: number;
  /** Every resyncMs every primary key is queued again. 0 = never (default). */
  resyncMs?: number;
  queue?: WorkQueueOptions;
  /** Reconcile only while holding this Lease; without it, reconciling starts at once. */
  leaderElection?: LeaderElection;
  /**
   * Records why a key stopped on a terminal error. Default: a Warning Event on the primary
   * object with the error's reason and message (one per distinct reason and message).
   */
  onTerminal?: (key: string, err: TerminalError) => Promise<void>;
  now?: () => Date;
  logger?: Logger;
  /**
   * Where its counters live: controller-runtime's reconcile and work queue metrics and the
   * Lease status, labelled with `name`. Default: its own registry (only `stats` reads it).
   */
  metrics?: Registry;
}

/** What the runtime has done for a controller (read from its metrics). */
export interface ControllerStats {
  reconciles: number;
  /** Reconciles that threw (all kinds). */
  errors: number;
  /** Of those, lost write races (409): retried like any transient error. */
  conflicts: number;
  /** Of those, terminal: recorded and not retried. */
  terminal: number;
}

/** Runs one reconcile function over the keys its informers produce. */
export class Controller<P extends ApiObject> {
  readonly queue: WorkQueue;
  /** The controller's counters, and the registry they are in (with its name as label). */
  readonly metrics: { registry: Registry; reconcile: ReconcileMetrics; labels: { controller: string } };
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly events: EventRecorder;
  private workers: Promise<void> | undefined;
  private resync: NodeJS.Timeout | undefined;
  private lease: LeaderLease | undefined;
  private stopped = false;

  constructor(private readonly opts: ControllerOptions<P>) {
    const registry = opts.metrics ?? new Registry();
    const labels = { controller: opts.name };
    const reconcile = reconcileMetrics(registry);
    this.metrics = { registry, reconcile, labels };
    for (const result of ["success", "error", "requeue", "requeue_after"]) reconcile.total.inc({ ...labels, result }, 0);
    for (const c of [reconcile.errors, reconcile.terminal, reconcile.conflicts]) c.inc(labels, 0);
    reconcile.maxConcurrent.set(labels, opts.workers ?? 2);
    reconcile.activeWorkers.set(labels, 0);
    this.queue = new WorkQueue({ ...opts.queue, metrics: { family: workQueueMetrics(registry), labels: { ...labels, name: opts.name } } });
    this.logger = (opts.logger ?? silentLogger).child({ controller: opts.name });
    this.now = opts.now ?? (() => new Date());
    this.events = new EventRecorder(opts.kc.makeApiClient(k8s.CoreV1Api), `gavel-${opts.name}-controller`, this.logger, () =>
      this.now().getTime(),
    );
    const primaryKeys =
      opts.primary.keys ??
      ((obj: P) => {
        const key = objectKey(obj);
        return key === undefined ? [] : [key];
      });
    opts.primary.informer.on((_event, obj) => this.enqueue(primaryKeys(obj)));
    for (const w of opts.watches ?? []) w.informer.on((_event, obj) => this.enqueue(w.keys(obj)));
  }

  /**
   * Fills every cache (secondary first, so a primary key never sees an empty one), then starts
   * the workers at once, or once this replica holds the Lease (keys queue up meanwhile).
   */
  async start(): Promise<void> {
    for (const w of this.opts.watches ?? []) await w.informer.start();
    await this.opts.primary.informer.start();
    // stop() while a first list was still being retried: nothing more starts.
    if (this.stopped) return;
    const le = this.opts.leaderElection;
    if (le === undefined) {
      this.startWorkers();
      return;
    }
    const { onLost, ...lease } = le;
    this.lease = new LeaderLease({ ...lease, kc: this.opts.kc, logger: this.logger, metrics: this.metrics.registry });
    this.lease
      .acquire(() => {
        // A replica that may no longer lead must not act on anything: stop, and let it restart.
        this.queue.shutDown();
        onLost?.();
      })
      .then(
        (ok) => {
          if (ok && !this.stopped) this.startWorkers();
        },
        (err: unknown) => this.logger.error({ err: messageOf(err) }, "leader election failed"),
      );
  }

  /** What the runtime has done for this controller: reconciles, errors, conflicts, terminal errors. */
  get stats(): ControllerStats {
    const { reconcile: m, labels } = this.metrics;
    const reconciles = ["success", "error", "requeue", "requeue_after"].reduce((n, result) => n + m.total.get({ ...labels, result }), 0);
    return { reconciles, errors: m.errors.get(labels), conflicts: m.conflicts.get(labels), terminal: m.terminal.get(labels) };
  }

  /** Whether this replica reconciles: it holds the Lease, or (without election) its workers run. */
  get isLeader(): boolean {
    return this.lease === undefined ? this.workers !== undefined : this.lease.isLeader;
  }

  /** Why this controller's caches are not synced yet (each informer still waiting for its first list), or undefined once they are. */
  unsynced(): string | undefined {
    const waiting = [...(this.opts.watches ?? []).map((w) => w.informer), this.opts.primary.informer]
      .map((i) => i.unsynced())
      .filter((w) => w !== undefined);
    return waiting.length === 0 ? undefined : `${this.opts.name}: ${waiting.join("; ")}`;
  }

  /** Queues every known primary object again (the resync's PRIORITY.resync: behind every change; a key queued higher stays). */
  requeueAll(priority: number = PRIORITY.normal): void {
    for (const obj of this.opts.primary.informer.list()) {
      const key = objectKey(obj);
      if (key !== undefined) this.queue.add(key, priority);
    }
  }

  /** Stops the watches and the workers; resolves when in-flight reconciles have returned, then hands the Lease back. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resync !== undefined) clearInterval(this.resync);
    this.queue.shutDown();
    await this.opts.primary.informer.stop();
    for (const w of this.opts.watches ?? []) await w.informer.stop();
    await this.workers;
    // Handed back only after the last reconcile returned, so two replicas never overlap.
    await this.lease?.stop();
  }

  private enqueue(keys: Iterable<string | PrioritizedKey>): void {
    for (const k of keys) {
      if (typeof k === "string") this.queue.add(k);
      else this.queue.add(k.key, k.priority);
    }
  }

  private startWorkers(): void {
    const workers = this.opts.workers ?? 2;
    if (workers <= 0) return;
    this.workers = runWorkers(
      this.queue,
      workers,
      (key) => this.process(key),
      (key, err) => {
        this.logger.warn(
          { key, kind: isConflict(err) ? "conflict" : "transient", retryInMs: this.queue.nextBackoffMs(key), err: messageOf(err) },
          "reconcile failed, retrying with backoff",
        );
      },
    );
    // Everything known is looked at once: keys queued before the workers ran are not lost either way.
    this.requeueAll();
    const resyncMs = this.opts.resyncMs ?? 0;
    if (resyncMs > 0) this.resync = setInterval(() => this.requeueAll(PRIORITY.resync), resyncMs);
  }

  /** One reconcile: a terminal error is recorded and ends the key's retries; anything else is rethrown (backoff). */
  private async process(key: string): Promise<ReconcileResult | void> {
    const { reconcile: m, labels } = this.metrics;
    const started = performance.now();
    m.activeWorkers.inc(labels);
    const count = (result: string) => {
      m.total.inc({ ...labels, result });
      m.time.observe(labels, (performance.now() - started) / 1000);
      m.activeWorkers.dec(labels);
    };
    try {
      const r = await this.opts.reconcile(key);
      const after = r?.requeueAfterMs;
      count(after === undefined ? "success" : after > 0 ? "requeue_after" : "requeue");
      return r;
    } catch (err) {
      count("error");
      m.errors.inc(labels);
      const kind = classify(err);
      if (kind === "conflict") m.conflicts.inc(labels);
      if (kind !== "terminal") throw err;
      m.terminal.inc(labels);
      const terminal = typedError(err) as TerminalError;
      this.logger.error({ key, reason: terminal.reason, err: terminal.message }, "reconcile failed for good, not retried");
      await (this.opts.onTerminal ?? ((k, e) => this.recordEvent(k, e)))(key, terminal).catch((e: unknown) => {
        this.logger.warn({ key, err: messageOf(e) }, "recording the terminal error failed");
      });
      return undefined;
    }
  }

  /** A Warning Event on the primary object; one per distinct reason and message. */
  private async recordEvent(key: string, err: TerminalError): Promise<void> {
    const { namespace, name } = splitKey(key);
    const obj = this.opts.primary.informer.get(name, namespace === "" ? undefined : namespace);
    if (obj !== undefined) await this.events.record(obj, terminalNote(obj, err));
  }
}

/** The Warning that records a terminal error on an object: the error's reason and message, once per distinct pair. */
export function terminalNote(obj: ApiObject, err: TerminalError): EventNote {
  const digest = createHash("sha256")
    .update(`${obj.metadata?.uid ?? ""}\n${err.reason}\n${err.message}`)
    .digest("hex")
    .slice(0, 16);
  return { type: "Warning", reason: err.reason, message: err.message, once: `terminal-${digest}` };
}
