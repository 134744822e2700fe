// Running one workload to its end over the level-triggered port (ADR 0030): ensure it, observe
// it until it has ended, collect its output, retire it. What local mode waits on, for any
// driver; the controller instead observes on its next reconcile and never waits.
import type { WorkloadObservation, WorkloadPlacement, WorkloadResult, Workloads, WorkloadSpec } from "./workload.js";

/** How long a stopped workload is kept for its log between the kill and its output. */
const STOP_RETENTION_SECONDS = 60;
/** First and longest pause between two observations. */
const FIRST_POLL_MS = 20;
const MAX_POLL_MS = 250;

/** What a run's stop is read through: an AbortSignal, or the cheaper `Stop`. */
export interface StopSignal {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * A stop for one run, for callers that make one per workload (local mode): Node 20 builds each
 * AbortSignal with a prototype swap (about 3 µs, and slow property reads after), which cost the
 * engine bench some 12 % of its iterations per second; this one is a flag and a set.
 */
export class Stop implements StopSignal {
  aborted = false;
  private readonly listeners = new Set<() => void>();

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const l of this.listeners) l();
    this.listeners.clear();
  }

  addEventListener(_type: "abort", listener: () => void): void {
    if (!this.aborted) this.listeners.add(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    this.listeners.delete(listener);
  }
}

/** Runs a workload to its end: ensure, then `followToEnd`. */
export async function runToEnd<P extends WorkloadPlacement>(
  workloads: Workloads<P>,
  spec: WorkloadSpec,
  place: P,
  opts: { signal?: StopSignal } = {},
): Promise<WorkloadResult> {
  // The run starts when it is asked for: a short workload can end before ensure returns (its
  // create and start calls answered late on a busy machine).
  const startedAt = new Date();
  await workloads.ensure(spec, place);
  return followToEnd(workloads, spec, place, startedAt, opts);
}

/**
 * Observes an ensured workload until it has ended (the driver kills it past its deadline;
 * the pause before a look never passes the deadline, and ends early when the driver's
 * `mayHaveEnded` hint fires), then returns its output and retires it.
 * Aborting `signal` kills it: it ends `cancelled` (when the kill ended it), with what it printed.
 */
export async function followToEnd<P extends WorkloadPlacement>(
  workloads: Workloads<P>,
  spec: WorkloadSpec,
  place: P,
  startedAt: Date,
  opts: { signal?: StopSignal } = {},
): Promise<WorkloadResult> {
  const deadline = startedAt.getTime() + spec.timeoutSeconds * 1000;
  let stopped = false;
  let pause = FIRST_POLL_MS;
  // With the driver's hint, a look is due when it fires, at the deadline or on a stop; after
  // it has fired (or without one), looks are polled.
  let hint: Promise<void> | undefined = workloads.mayHaveEnded?.(spec.name, place).then(
    () => undefined,
    () => undefined,
  );
  try {
    for (;;) {
      const seen: WorkloadObservation = await workloads.observe(spec.name, place);
      if (seen.state === "ended") {
        const out = await workloads.output(spec.name, place);
        return {
          exitCode: seen.exitCode,
          stdout: out.stdout,
          stderr: out.stderr,
          truncated: out.truncated,
          timedOut: seen.timedOut,
          // A workload that ended on its own as the stop came is not cancelled.
          cancelled: stopped && !seen.timedOut && seen.exitCode === 137,
          startedAt,
          // A driver's clock (Docker's, a kubelet's whole seconds) can put the end before the
          // start gavel took: a run never ends before it started.
          finishedAt: new Date(Math.max(startedAt.getTime(), (seen.finishedAt ?? new Date()).getTime())),
        };
      }
      if (seen.state === "absent") throw new Error(`workload ${spec.name} is gone before it ended (removed from outside gavel?)`);
      if (seen.state === "stuck") throw new Error(`workload ${spec.name} cannot run: ${seen.reason}`);
      if (opts.signal?.aborted === true && !stopped) {
        stopped = true;
        // Killed and kept for its log; retired below.
        await workloads.retire(spec.name, place, STOP_RETENTION_SECONDS);
        continue;
      }
      const untilDeadline = Math.max(1, deadline - Date.now() + 1);
      // Once stopped, the aborted signal would end every pause at once.
      const signal = stopped ? undefined : opts.signal;
      if (hint !== undefined) {
        let fired = false;
        await pauseFor(
          untilDeadline,
          signal,
          hint.then(() => void (fired = true)),
        );
        if (fired) hint = undefined;
        continue;
      }
      await pauseFor(Math.min(pause, untilDeadline), signal);
      pause = Math.min(MAX_POLL_MS, Math.round(pause * 1.5));
    }
  } finally {
    await workloads.retire(spec.name, place, 0).catch(() => undefined);
  }
}

/** Waits `ms` (at most setTimeout's 2^31-1), or less when `signal` aborts or `wake` settles. */
function pauseFor(ms: number, signal: StopSignal | undefined, wake?: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
    signal?.addEventListener("abort", done, { once: true });
    void wake?.then(done);
  });
}
