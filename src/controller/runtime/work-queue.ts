// A de-duplicating work queue of string keys for level-triggered controllers (client-go's
// workqueue, in small): one worker per key at a time, per-key exponential backoff, and
// client-go's workqueue metrics. Keys carry a priority (controller-runtime's priority queue,
// 2024): a higher one is handed out first, keys of one priority in the order they came, so the
// first look at a new object does not wait behind wake-ups of objects already at work. No Kubernetes.
import { backoffDelay } from "../../backoff.js";
import type { Labels, WorkQueueMetrics } from "../../telemetry/metrics.js";

/**
 * Priorities a key may be queued with. `first`: an object no reconcile has acted on yet (its
 * first reconcile starts its work); `normal`: a change or a requeue; `resync`: the periodic look
 * at everything, which must not push ahead of real changes.
 */
export const PRIORITY = { first: 100, normal: 0, resync: -100 } as const;

/** A key and the priority to queue it with (a bare key is PRIORITY.normal). */
export interface PrioritizedKey {
  key: string;
  priority: number;
}

/** Tuning of a WorkQueue. */
export interface WorkQueueOptions {
  /** First retry delay after a failure, in ms (default 100). Doubles per consecutive failure. */
  baseDelayMs?: number;
  /** Upper bound of the retry delay, in ms (default 60 000). */
  maxDelayMs?: number;
  /** Where adds, depth, waiting and processing times and retries are counted, as `labels`. */
  metrics?: { family: WorkQueueMetrics; labels: Labels };
}

/**
 * Keys waiting to be processed. A key is queued at most once (dirty set), at the highest
 * priority it was added with; a key being processed is not handed to a second worker, and a key
 * added meanwhile is handed out again after done().
 */
export class WorkQueue {
  /** FIFO lanes by priority, highest first. An entry whose seq is no longer its key's in `queued` was superseded (promoted) and is skipped. */
  private readonly lanes: { priority: number; entries: { key: string; seq: number }[] }[] = [];
  /** Keys in a lane, and the seq of their live entry. */
  private readonly queued = new Map<string, number>();
  private seq = 0;
  /** Keys waiting (queued, or to be queued again once processed), each with its priority. */
  private readonly dirty = new Map<string, number>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly metrics: WorkQueueOptions["metrics"];
  /** When each dirty key was added, and when each key being processed was handed out (ms, monotonic). */
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.metrics = opts.metrics;
    this.metrics?.family.depth.set(this.metrics.labels, 0);
    this.metrics?.family.adds.inc(this.metrics.labels, 0);
    this.metrics?.family.retries.inc(this.metrics.labels, 0);
    // Read at scrape time from the keys being processed, as client-go's updateUnfinishedWork does.
    this.metrics?.family.unfinishedWork.readWith(this.metrics.labels, () => this.runningSeconds().reduce((a, b) => a + b, 0));
    this.metrics?.family.longestRunning.readWith(this.metrics.labels, () => Math.max(0, ...this.runningSeconds()));
  }

  /** For how long each key being processed has been. */
  private runningSeconds(): number[] {
    const now = performance.now();
    return [...this.startedAt.values()].map((t) => (now - t) / 1000);
  }

  /**
   * Queues the key unless it is already waiting; one waiting at a lower priority moves up to
   * this one (behind the keys already there). Ignored after shutDown().
   */
  add(key: string, priority: number = PRIORITY.normal): void {
    if (this.shuttingDown) return;
    const waiting = this.dirty.get(key);
    if (waiting !== undefined) {
      if (priority <= waiting) return;
      this.dirty.set(key, priority);
      if (this.queued.has(key)) this.enqueue(key, priority);
      return;
    }
    this.dirty.set(key, priority);
    this.addedAt.set(key, performance.now());
    this.metrics?.family.adds.inc(this.metrics.labels);
    // A key being processed goes back in the queue when its worker calls done().
    if (this.processing.has(key)) return;
    this.hand(key);
  }

  /** Queues the key after delayMs; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending !== undefined) {
      if (pending.at <= at) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    this.timers.set(key, { at, timer });
  }

  /** Queues the key after its backoff delay (base * 2^failures, capped) and counts one more failure. */
  addRateLimited(key: string): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.metrics?.family.retries.inc(this.metrics.labels);
    this.addAfter(key, this.backoffMs(n));
  }

  /** The delay the next addRateLimited(key) would use. */
  nextBackoffMs(key: string): number {
    return this.backoffMs(this.failures.get(key) ?? 0);
  }

  /** Clears the key's failure count (call after a successful process). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Consecutive failures recorded for the key. */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Waits for the next key; undefined once the queue is shut down. Call done(key) when finished. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.next();
    if (key !== undefined) return Promise.resolve(this.take(key));
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; if it was added meanwhile it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) this.metrics?.family.workDuration.observe(this.metrics.labels, (performance.now() - started) / 1000);
    if (this.dirty.has(key) && !this.shuttingDown) this.hand(key);
  }

  /** Stops handing out keys: waiting and later get() calls return undefined; pending delays are dropped. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /** True after shutDown(). */
  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Keys waiting (not counting those being processed or delayed). */
  get length(): number {
    return this.queued.size;
  }

  private backoffMs(failures: number): number {
    // No jitter, as client-go's per-item limiter: the delay logged is the delay taken, and
    // keys fail at different times anyway.
    return backoffDelay(failures + 1, { initialMs: this.baseDelayMs, maxMs: this.maxDelayMs, jitter: 0 });
  }

  /** The first live key of the highest lane, out of its lane; undefined when none waits. */
  private next(): string | undefined {
    for (const lane of this.lanes) {
      for (let e = lane.entries.shift(); e !== undefined; e = lane.entries.shift()) {
        if (this.queued.get(e.key) !== e.seq) continue;
        this.queued.delete(e.key);
        return e.key;
      }
    }
    return undefined;
  }

  /** Puts the key at the end of its priority's lane; an entry it had in a lower lane is left behind, dead. */
  private enqueue(key: string, priority: number): void {
    let lane = this.lanes.find((l) => l.priority === priority);
    if (lane === undefined) {
      lane = { priority, entries: [] };
      this.lanes.push(lane);
      this.lanes.sort((a, b) => b.priority - a.priority);
    }
    const seq = ++this.seq;
    lane.entries.push({ key, seq });
    this.queued.set(key, seq);
    this.metrics?.family.depth.set(this.metrics.labels, this.queued.size);
  }

  private take(key: string): string {
    this.dirty.delete(key);
    this.processing.add(key);
    const now = performance.now();
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    this.startedAt.set(key, now);
    if (this.metrics !== undefined) {
      if (added !== undefined) this.metrics.family.queueDuration.observe(this.metrics.labels, (now - added) / 1000);
      this.metrics.family.depth.set(this.metrics.labels, this.queued.size);
    }
    return key;
  }

  private hand(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter !== undefined) waiter(this.take(key));
    else this.enqueue(key, this.dirty.get(key) ?? PRIORITY.normal);
  }
}

/** What a process function asks for: nothing (done), or to look at the key again after a delay. */
export interface ProcessResult {
  requeueAfterMs?: number;
}

/**
 * Runs `workers` loops that take keys and call process(key). Success forgets the key's backoff
 * (and honours requeueAfterMs); a throw re-adds it rate-limited and reports it to onError.
 * Resolves when the queue is shut down and every in-flight call has returned.
 */
export async function runWorkers(
  queue: WorkQueue,
  workers: number,
  process: (key: string) => Promise<ProcessResult | void>,
  onError: (key: string, err: unknown) => void = () => {},
): Promise<void> {
  const loop = async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        const result = await process(key);
        queue.forget(key);
        if (result?.requeueAfterMs !== undefined) queue.addAfter(key, result.requeueAfterMs);
      } catch (err) {
        onError(key, err);
        queue.addRateLimited(key);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, workers) }, loop));
}
