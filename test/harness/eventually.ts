// Waiting in tests, in one place: poll a probe until it has an answer or the time is up.
import { setTimeout as sleep } from "node:timers/promises";
import { isNotFound, messageOf } from "../../src/errors.js";

export { sleep };

export interface EventuallyOptions {
  /** How long to keep trying (default 60 s). */
  timeoutMs?: number;
  /** The pause between tries (default 250 ms). */
  everyMs?: number;
  /** What is awaited, for the timeout's message. */
  what?: string;
}

/** An answer of a probe: anything but undefined, null or void (a probe that returns nothing would poll until its timeout). */
export type Answer = object | string | number | boolean | bigint | symbol;

/**
 * Polls `probe` until it returns a value other than undefined; a throw counts as "not yet"
 * too. After the timeout it throws, naming `what`, with the last error as `cause` (and its
 * message appended, so a failed `expect` inside the probe says what it saw), or saying that
 * the last try returned undefined when it did.
 */
export async function eventually<T extends Answer>(
  probe: () => T | undefined | Promise<T | undefined>,
  timeout: number | EventuallyOptions = {},
  what?: string,
): Promise<T> {
  const o = typeof timeout === "number" ? { timeoutMs: timeout, what } : { what, ...timeout };
  const timeoutMs = o.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let lastThrew = false;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
      lastThrew = false;
    } catch (err) {
      lastError = err;
      lastThrew = true;
    }
    if (Date.now() > deadline) {
      const earlier = lastError === undefined ? "" : ` (an earlier try: ${messageOf(lastError)})`;
      const why = lastThrew ? `: ${messageOf(lastError)}` : `: the last try returned undefined${earlier}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${o.what ?? "condition"}${why}`, { cause: lastError });
    }
    await sleep(o.everyMs ?? 250);
  }
}

/** Waits until `read` (a GET of one Kubernetes object) answers 404; another error or an answer is "not yet". */
export async function eventuallyGone(read: () => Promise<unknown>, timeoutMs: number, what: string): Promise<void> {
  await eventually(
    async () => {
      try {
        await read();
        return undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    },
    timeoutMs,
    `${what} to be deleted`,
  );
}
