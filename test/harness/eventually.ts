// Waiting in tests, in one place: poll a probe until it has an answer or the time is up.
import { setTimeout as sleep } from "node:timers/promises";
import { messageOf } from "../../src/errors.js";

export { sleep };

export interface EventuallyOptions {
  /** How long to keep trying (default 60 s). */
  timeoutMs?: number;
  /** The pause between tries (default 250 ms). */
  everyMs?: number;
  /** What is awaited, for the timeout's message. */
  what?: string;
}

/**
 * Polls `probe` until it returns a value other than undefined; a throw counts as "not yet"
 * too. After the timeout it throws, naming `what`, with the last error as `cause` (and its
 * message appended, so a failed `expect` inside the probe says what it saw).
 */
export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, timeout: number | EventuallyOptions = {}, what?: string): Promise<T> {
  const o = typeof timeout === "number" ? { timeoutMs: timeout, what } : { what, ...timeout };
  const timeoutMs = o.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError === undefined ? "" : `: ${messageOf(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${o.what ?? "condition"}${why}`, { cause: lastError });
    }
    await sleep(o.everyMs ?? 250);
  }
}
