// The worker's connection to the tool-call gate's NATS: a refused or lost connection is
// transient (the chart's NATS pod restarting, rescheduled, not up yet), so the first connect
// is retried with backoff until the worker's wait budget ends, and a lost connection is
// logged while the client reconnects by itself. Only a refusal of the worker's credentials
// is final. When the budget ends the worker exits 75 (src/api/gate-unreachable.ts).
import { backoffDelay, sleep } from "../backoff.js";
import type { NatsConnection } from "@nats-io/transport-node";
import type { GateUnreachable } from "../api/gate-unreachable.js";

/** The worker could not reach the gate's NATS before its wait budget ended. */
export class GateUnreachableError extends Error {
  override readonly name = "GateUnreachableError";
  constructor(
    readonly unreachable: GateUnreachable,
    options?: ErrorOptions,
  ) {
    super(`the tool-call gate could not be reached for ${unreachable.seconds} s: ${unreachable.detail}`, options);
  }
}

// nats.js error names that no retry can fix: the server refused these credentials, or the
// options are wrong. Everything else (refused, reset, timed out, DNS) may pass.
const FINAL_ERRORS = new Set(["AuthorizationError", "UserAuthenticationExpiredError", "InvalidArgumentError"]);

/** Whether a failed connect is worth another try. */
export function isTransientConnectError(err: unknown): boolean {
  return !(err instanceof Error && FINAL_ERRORS.has(err.name));
}

/**
 * When the worker stops waiting for the gate: its run's end less a margin to exit and be
 * read, by its own start plus its timeout and by the driver's deadline, whichever is first;
 * without either, after one call's wait (the first connect only).
 */
export function gateBudgetEnd(
  startedAtMs: number,
  iterationTimeoutMs: number | undefined,
  callTimeoutMs: number,
  deadlineMs?: number,
): number {
  const ends: number[] = [];
  if (iterationTimeoutMs !== undefined) {
    // The pod's deadline counts from before the process started (image, volumes, init
    // containers): give up early enough that exit 75 and its line are seen rather than a kill.
    const margin = Math.min(15_000, Math.max(2000, iterationTimeoutMs / 10));
    ends.push(startedAtMs + Math.max(1000, iterationTimeoutMs - margin));
  }
  // Stamped when the workload was made, before its kill's clock started: only the exit needs time.
  if (deadlineMs !== undefined) ends.push(deadlineMs - 2000);
  return ends.length === 0 ? startedAtMs + callTimeoutMs : Math.min(...ends);
}

export interface GateConnectOptions {
  /** The server, for the log and the outcome (credentials never appear). */
  url: string;
  /** Epoch ms after which no further attempt starts. */
  deadlineMs: number;
  log: (event: Record<string, unknown>) => void;
  /** Pause after the first failure, doubled up to backoffMaxMs; default 250 ms .. 5 s. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** The random share of each pause (src/backoff.ts; default 0.2): workers started together do not dial together. */
  backoffJitter?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = async (ms: number): Promise<void> => void (await sleep(ms));

/**
 * Dials until a connection is made (`dial` gets how long one attempt may take), a final error
 * occurs (rethrown), or the deadline passes (GateUnreachableError). One attempt is always made.
 */
export async function connectWithBackoff(
  dial: (attemptTimeoutMs: number) => Promise<NatsConnection>,
  o: GateConnectOptions,
): Promise<NatsConnection> {
  const now = o.now ?? Date.now;
  const pauseFor = o.sleep ?? realSleep;
  const backoff = {
    initialMs: o.backoffInitialMs ?? 250,
    maxMs: o.backoffMaxMs ?? 5000,
    ...(o.backoffJitter !== undefined ? { jitter: o.backoffJitter } : {}),
  };
  const started = now();
  for (let attempt = 1; ; attempt++) {
    try {
      // A black-holed address would otherwise hold one attempt for nats.js's 20 s.
      const nc = await dial(Math.max(1000, Math.min(10_000, o.deadlineMs - now())));
      if (attempt > 1) o.log({ event: "nats_connected", nats: o.url, attempts: attempt, waitedMs: now() - started });
      return nc;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!isTransientConnectError(err)) throw err;
      const pause = backoffDelay(attempt, backoff);
      const left = o.deadlineMs - now();
      if (left <= pause) {
        const unreachable = {
          seconds: Math.round((now() - started) / 1000),
          detail: `NATS at ${o.url}: ${message} (${attempt} attempt(s))`,
        };
        throw new GateUnreachableError(unreachable, { cause: err });
      }
      o.log({ event: "nats_unreachable", nats: o.url, error: message, attempt, retryInMs: pause, giveUpInMs: left });
      await pauseFor(pause);
    }
  }
}

/** Logs the connection's losses and recoveries (the client reconnects by itself; pending proposals wait). */
export function logConnectionChanges(
  nc: NatsConnection,
  url: string,
  log: (event: Record<string, unknown>) => void,
  now: () => number = Date.now,
): void {
  let lostAt: number | undefined;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") {
        lostAt = now();
        log({ event: "nats_disconnected", nats: url, note: "reconnecting; pending tool calls wait until the iteration's deadline" });
      } else if (s.type === "reconnect") {
        log({ event: "nats_reconnected", nats: url, ...(lostAt !== undefined ? { downMs: now() - lostAt } : {}) });
        lostAt = undefined;
      }
    }
  })().catch(() => undefined);
}
