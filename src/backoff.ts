// The one backoff of gavel's retry loops: pauses that double from a first one up to a cap,
// each shortened by a random part (jitter) so that many clients that failed together do not
// retry together, and a sleep that an abort signal or a deadline ends early.

/** How a retry loop pauses. */
export interface BackoffOptions {
  /** The pause after the first failure. */
  initialMs: number;
  /** No pause is longer. */
  maxMs: number;
  /** The share of each pause that is random (0 to 1; default 0.2): a pause lies in [(1 - jitter) p, p]. */
  jitter?: number;
  /** For tests: a random number in [0, 1). */
  random?: () => number;
}

/** The pause after failure n (from 1): initialMs doubled n - 1 times, at most maxMs, less its jitter. */
export function backoffDelay(failures: number, o: BackoffOptions): number {
  const pause = Math.min(o.maxMs, o.initialMs * 2 ** Math.max(0, failures - 1));
  const jitter = Math.min(1, Math.max(0, o.jitter ?? 0.2));
  return Math.round(pause * (1 - jitter * (o.random ?? Math.random)()));
}

/**
 * Sleeps `ms`; true when it slept the whole time, false when the signal aborted it first.
 * `unref`: the pause alone does not keep the process alive (a retry pending at shutdown);
 * never for a process that has nothing else to wait on (Node would exit 13 mid-await).
 */
export function sleep(ms: number, signal?: AbortSignal, opts: { unref?: boolean } = {}): Promise<boolean> {
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (whole: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
      resolve(whole);
    };
    const aborted = () => done(false);
    const timer = setTimeout(() => done(true), Math.max(0, ms));
    if (opts.unref === true) timer.unref();
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

/** What ends a wait early: an abort signal, a deadline (epoch ms), or both. */
export interface WaitLimits {
  signal?: AbortSignal;
  deadline?: number;
  now?: () => number;
}

/** The pauses of one retry loop: next() after each failure, reset() after a success. */
export class Backoff {
  private failures = 0;

  constructor(private readonly o: BackoffOptions) {}

  /** How many failures since the start or the last reset. */
  get attempts(): number {
    return this.failures;
  }

  /** The pause after one more failure. */
  next(): number {
    this.failures++;
    return backoffDelay(this.failures, this.o);
  }

  /** Starts the pauses over from initialMs. */
  reset(): void {
    this.failures = 0;
  }

  /**
   * Sleeps the next pause, cut at the deadline; false (at once, or when woken) when the
   * signal aborts or the deadline has passed, so the loop stops instead of trying again.
   */
  async wait(limits: WaitLimits = {}): Promise<boolean> {
    const pause = this.next();
    const left = limits.deadline === undefined ? pause : limits.deadline - (limits.now ?? Date.now)();
    if (left <= 0) return false;
    return (await sleep(Math.min(pause, left), limits.signal)) && (limits.deadline === undefined || left > pause);
  }
}
