// Running one workload to its end over the level-triggered port (ADR 0030): ensure it, observe
// it until it has ended, collect its output, retire it. What local mode waits on, for any
// driver; the controller instead observes on its next reconcile and never waits.
import type { WorkloadObservation, WorkloadPlacement, WorkloadResult, Workloads, WorkloadSpec } from "./workload.js";

/** How long a stopped workload is kept for its log between the kill and its output. */
const STOP_RETENTION_SECONDS = 60;
/** First and longest pause between two observations. */
const FIRST_POLL_MS = 20;
const MAX_POLL_MS = 250;

/** Runs a workload to its end: ensure, then `followToEnd`. */
export async function runToEnd<P extends WorkloadPlacement>(
  workloads: Workloads<P>,
  spec: WorkloadSpec,
  place: P,
  opts: { signal?: AbortSignal } = {},
): Promise<WorkloadResult> {
  await workloads.ensure(spec, place);
  return followToEnd(workloads, spec, place, new Date(), opts);
}

/**
 * Observes an ensured workload until it has ended (the driver kills it past its deadline;
 * the pause before a look never passes the deadline), then returns its output and retires it.
 * Aborting `signal` kills it: it ends `cancelled` (when the kill ended it), with what it printed.
 */
export async function followToEnd<P extends WorkloadPlacement>(
  workloads: Workloads<P>,
  spec: WorkloadSpec,
  place: P,
  startedAt: Date,
  opts: { signal?: AbortSignal } = {},
): Promise<WorkloadResult> {
  const deadline = startedAt.getTime() + spec.timeoutSeconds * 1000;
  let stopped = false;
  let pause = FIRST_POLL_MS;
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
          finishedAt: seen.finishedAt ?? new Date(),
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
      await pauseFor(Math.max(1, Math.min(pause, deadline - Date.now() + 1)), opts.signal);
      pause = Math.min(MAX_POLL_MS, Math.round(pause * 1.5));
    }
  } finally {
    await workloads.retire(spec.name, place, 0).catch(() => undefined);
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pauseFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
