// WorkQueue: de-duplication, one worker per key, re-processing of keys added while in flight,
// per-key exponential backoff with a cap, and shutdown.
import { describe, expect, it } from "vitest";
import { PRIORITY, runWorkers, WorkQueue } from "./work-queue.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("WorkQueue", () => {
  it("hands out a key once however often it was added while queued, in first-added order", async () => {
    const q = new WorkQueue();
    q.add("a");
    q.add("b");
    q.add("a");
    q.add("a");
    expect(q.length).toBe(2);
    expect(await q.get()).toBe("a");
    expect(await q.get()).toBe("b");
    expect(q.length).toBe(0);
  });

  it("does not hand a key to a second worker while it is processed, and hands it again after done()", async () => {
    const q = new WorkQueue();
    q.add("a");
    const first = await q.get();
    expect(first).toBe("a");
    q.add("a");
    q.add("a");
    // A second worker waits: "a" is in flight.
    let second: string | undefined | null = null;
    void q.get().then((k) => (second = k));
    await sleep(10);
    expect(second).toBeNull();
    q.done("a");
    await sleep(0);
    expect(second).toBe("a");
    q.done("a");
    expect(q.length).toBe(0);
  });

  it("hands out higher priorities first, each priority in first-added order", async () => {
    const q = new WorkQueue();
    q.add("running-1");
    q.add("resynced", PRIORITY.resync);
    q.add("new-1", PRIORITY.first);
    q.add("running-2", PRIORITY.normal);
    q.add("new-2", PRIORITY.first);
    expect(q.length).toBe(5);
    const order = [];
    for (let i = 0; i < 5; i++) order.push(await q.get());
    expect(order).toEqual(["new-1", "new-2", "running-1", "running-2", "resynced"]);
    expect(q.length).toBe(0);
  });

  it("moves a waiting key up when it is added again at a higher priority, never down, and hands it out once", async () => {
    const q = new WorkQueue();
    q.add("a");
    q.add("b");
    q.add("c");
    q.add("b", PRIORITY.first);
    q.add("a", PRIORITY.resync);
    expect(q.length).toBe(3);
    const order = [];
    for (let i = 0; i < 3; i++) order.push(await q.get());
    expect(order).toEqual(["b", "a", "c"]);
    expect(q.length).toBe(0);
    // The entry b left behind in the normal lane is dead: nothing more is handed out.
    const next = await Promise.race([q.get(), sleep(20).then(() => "none")]);
    expect(next).toBe("none");
    q.shutDown();
  });

  it("a key added at a higher priority while it is processed is queued again at that priority after done()", async () => {
    const q = new WorkQueue();
    q.add("a");
    const k = await q.get();
    q.add("a", PRIORITY.first);
    q.add("b");
    q.done(k!);
    expect(await q.get()).toBe("a");
    expect(await q.get()).toBe("b");
  });

  it("processes a key once after it is done when nobody re-added it", async () => {
    const q = new WorkQueue();
    q.add("a");
    const k = await q.get();
    q.done(k!);
    expect(q.length).toBe(0);
  });

  it("runWorkers never runs two calls for one key at once and runs a key added mid-call again", async () => {
    const q = new WorkQueue();
    const running = new Set<string>();
    let overlap = 0;
    const calls: string[] = [];
    const workers = runWorkers(q, 4, async (key) => {
      if (running.has(key)) overlap++;
      running.add(key);
      calls.push(key);
      if (calls.length === 1) {
        // Re-add the key being processed, many times: one more call, after this one.
        q.add("x");
        q.add("x");
      }
      await sleep(20);
      running.delete(key);
    });
    q.add("x");
    q.add("y");
    await sleep(150);
    q.shutDown();
    await workers;
    expect(overlap).toBe(0);
    expect(calls.filter((c) => c === "x")).toHaveLength(2);
    expect(calls.filter((c) => c === "y")).toHaveLength(1);
  });

  it("backs off per key exponentially up to the cap, and forget() resets it", () => {
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 100 });
    const delays: number[] = [];
    for (let i = 0; i < 7; i++) {
      delays.push(q.nextBackoffMs("a"));
      q.addRateLimited("a");
    }
    expect(delays).toEqual([10, 20, 40, 80, 100, 100, 100]);
    expect(q.nextBackoffMs("b")).toBe(10);
    expect(q.failuresOf("a")).toBe(7);
    q.forget("a");
    expect(q.nextBackoffMs("a")).toBe(10);
    q.shutDown();
  });

  it("a failing key is retried after its backoff while other keys go on; success forgets the failures", async () => {
    const q = new WorkQueue({ baseDelayMs: 20, maxDelayMs: 1000 });
    const times: number[] = [];
    const errors: string[] = [];
    let okCalls = 0;
    const start = Date.now();
    const workers = runWorkers(
      q,
      1,
      (key) => {
        if (key === "ok") {
          okCalls++;
          return Promise.resolve();
        }
        times.push(Date.now() - start);
        if (times.length < 4) return Promise.reject(new Error(`boom ${times.length}`));
        return Promise.resolve();
      },
      (key, err) => errors.push(`${key}: ${(err as Error).message}`),
    );
    q.add("bad");
    q.add("ok");
    await sleep(400);
    q.shutDown();
    await workers;
    expect(okCalls).toBe(1);
    expect(errors).toEqual(["bad: boom 1", "bad: boom 2", "bad: boom 3"]);
    expect(times).toHaveLength(4);
    // Gaps of ~20, ~40, ~80 ms (timers may fire late, never early).
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(18);
    expect(gaps[1]).toBeGreaterThanOrEqual(38);
    expect(gaps[2]).toBeGreaterThanOrEqual(78);
    expect(q.failuresOf("bad")).toBe(0);
  });

  it("addAfter keeps the earliest pending delay of a key", async () => {
    const q = new WorkQueue();
    q.addAfter("a", 500);
    q.addAfter("a", 10);
    q.addAfter("a", 300);
    const got = await Promise.race([q.get(), sleep(100).then(() => "timeout")]);
    expect(got).toBe("a");
    q.shutDown();
  });

  it("runWorkers honours requeueAfterMs", async () => {
    const q = new WorkQueue();
    let calls = 0;
    const workers = runWorkers(q, 1, () => {
      calls++;
      return Promise.resolve(calls < 3 ? { requeueAfterMs: 10 } : undefined);
    });
    q.add("a");
    await sleep(120);
    q.shutDown();
    await workers;
    expect(calls).toBe(3);
  });

  it("shutDown releases waiting workers, drops delayed keys and refuses new ones", async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.addAfter("later", 20);
    q.shutDown();
    expect(await waiting).toBeUndefined();
    q.add("new");
    expect(q.length).toBe(0);
    await sleep(40);
    expect(await q.get()).toBeUndefined();
    expect(q.isShuttingDown).toBe(true);
  });

  it("shutDown lets an in-flight call finish before runWorkers resolves", async () => {
    const q = new WorkQueue();
    let finished = false;
    const workers = runWorkers(q, 2, async () => {
      await sleep(50);
      finished = true;
    });
    q.add("a");
    await sleep(5);
    q.shutDown();
    await workers;
    expect(finished).toBe(true);
  });
});
