// Why a worker's run ends its iteration without its validators: killed at its deadline,
// stopped, or it gave up waiting for an unreachable tool-call gate (exit 75 with its line,
// src/api/gate-unreachable.ts), which is not a failure of the agent's code either.
import { describeGateUnreachable, gateUnreachableOf } from "../api/gate-unreachable.js";

/** An iteration that ends without validation: the reason (its feedback) and what the worker.finished event adds. */
export interface UnvalidatedEnd {
  reason: string;
  data: Record<string, unknown>;
}

/** How a worker's run ended, as much as this needs of a WorkerObservation. */
interface WorkerEnd {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  cancelled: boolean;
  streamsMerged?: string;
}

/** Why the run ends its iteration without validators, or undefined when its validators judge it. */
export function unvalidatedEnd(w: WorkerEnd, iterationTimeoutSeconds: number): UnvalidatedEnd | undefined {
  if (w.timedOut) return { reason: `the worker ran past its iteration deadline of ${iterationTimeoutSeconds}s and was killed`, data: {} };
  if (w.cancelled) return { reason: "the worker was stopped before it finished", data: {} };
  // Where a driver merged the streams, the worker's stderr line is in stdout.
  const unreachable = gateUnreachableOf(w.exitCode, w.stderr, w.streamsMerged !== undefined ? w.stdout : "");
  if (unreachable === undefined) return undefined;
  const reason = describeGateUnreachable(unreachable);
  return { reason, data: { gateUnreachable: reason } };
}
