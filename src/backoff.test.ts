// The one backoff: doubling up to a cap, jitter below each pause, a sleep that a signal or a deadline ends.
import { describe, expect, it } from "vitest";
import { Backoff, backoffDelay, sleep } from "./backoff.js";

describe("backoffDelay", () => {
  it("doubles from the first pause up to the cap", () => {
    const o = { initialMs: 100, maxMs: 1000, jitter: 0 };
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, o))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(backoffDelay(0, o)).toBe(100);
  });

  it("takes the jitter off the pause, never adding to it", () => {
    expect(backoffDelay(3, { initialMs: 100, maxMs: 1000, jitter: 0.5, random: () => 0.999 })).toBe(200);
    expect(backoffDelay(3, { initialMs: 100, maxMs: 1000, jitter: 0.5, random: () => 0 })).toBe(400);
    const pauses = Array.from({ length: 200 }, () => backoffDelay(4, { initialMs: 100, maxMs: 1000 }));
    expect(Math.min(...pauses)).toBeGreaterThanOrEqual(640);
    expect(Math.max(...pauses)).toBeLessThanOrEqual(800);
    expect(new Set(pauses).size).toBeGreaterThan(1);
  });
});

describe("Backoff", () => {
  it("counts failures and starts over after reset", () => {
    const b = new Backoff({ initialMs: 10, maxMs: 40, jitter: 0 });
    expect([b.next(), b.next(), b.next(), b.next()]).toEqual([10, 20, 40, 40]);
    expect(b.attempts).toBe(4);
    b.reset();
    expect(b.next()).toBe(10);
  });

  it("stops waiting when the signal aborts or the deadline has passed", async () => {
    const ac = new AbortController();
    const b = new Backoff({ initialMs: 60_000, maxMs: 60_000, jitter: 0 });
    const waiting = b.wait({ signal: ac.signal });
    ac.abort();
    expect(await waiting).toBe(false);
    expect(await b.wait({ deadline: Date.now() - 1 })).toBe(false);
    // Cut at a near deadline: it sleeps until then and says stop.
    const t0 = Date.now();
    expect(await b.wait({ deadline: t0 + 20 })).toBe(false);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(await new Backoff({ initialMs: 1, maxMs: 1 }).wait({ deadline: Date.now() + 10_000 })).toBe(true);
  });
});

describe("sleep", () => {
  it("is true when it slept the whole time and false when aborted", async () => {
    expect(await sleep(1)).toBe(true);
    const ac = new AbortController();
    ac.abort();
    expect(await sleep(60_000, ac.signal)).toBe(false);
  });
});
