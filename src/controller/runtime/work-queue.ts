// A de-duplicating work queue of string keys for level-triggered controllers (client-go's
// workqueue, in small): one worker per key at a time, per-key exponential backoff, and
// client-go's workqueue metrics. No Kubernetes.
import { backoffDelay } from "../../backoff.js";
import type { Labels, WorkQueueMetrics } from "../../telemetry/metrics.js";

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
 * Keys waiting to be processed. A key is queued at most once (dirty set); a key being processed
 * is not handed to a second worker, and a key added meanwhile is handed out again after done().
 */
export class WorkQueue {
  private readonly order: string[] = [];
  private readonly dirty = new Set<string>();
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

  /** Queues the key unless it is already waiting; ignored after shutDown(). */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
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
    const key = this.order.shift();
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
    return this.order.length;
  }

  private backoffMs(failures: number): number {
    // No jitter, as client-go's per-item limiter: the delay logged is the delay taken, and
    // keys fail at different times anyway.
    return backoffDelay(failures + 1, { initialMs: this.baseDelayMs, maxMs: this.maxDelayMs, jitter: 0 });
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
      this.metrics.family.depth.set(this.metrics.labels, this.order.length);
    }
    return key;
  }

  private hand(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter !== undefined) waiter(this.take(key));
    else {
      this.order.push(key);
      this.metrics?.family.depth.set(this.metrics.labels, this.order.length);
    }
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
