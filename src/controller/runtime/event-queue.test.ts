// EventQueue: Events leave the caller's path, go out in the order queued with the time they
// were queued, a bounded number at once; a full backlog waits instead of dropping; flush waits
// for every one.
import { describe, expect, it } from "vitest";
import type { EventNote, EventSubject } from "./event-recorder.js";
import { EventQueue } from "./event-queue.js";

/** A recorder whose sends finish only when the test lets them. */
function heldRecorder() {
  const sent: { name: string; reason: string; at: number }[] = [];
  const open: (() => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  return {
    sent,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    /** Lets the oldest send in flight finish. */
    finishOne() {
      open.shift()?.();
    },
    record(obj: EventSubject, note: EventNote, at?: Date): Promise<void> {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      sent.push({ name: obj.metadata?.name ?? "", reason: note.reason, at: at?.getTime() ?? -1 });
      return new Promise<void>((resolve) => open.push(resolve)).then(() => {
        inFlight--;
      });
    },
  };
}

const note = (reason: string): EventNote => ({ type: "Normal", reason, message: reason });
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("EventQueue", () => {
  it("returns before the Event is sent, sends in queued order with the queueing time, at most inFlight at once", async () => {
    const rec = heldRecorder();
    let now = 1000;
    const q = new EventQueue(rec, { inFlight: 2, now: () => now });
    for (const r of ["A", "B", "C", "D"]) {
      await q.record({ metadata: { name: "ex", namespace: "ns" } }, note(r));
      now += 10;
    }
    expect(q.pending).toBe(4);
    expect(rec.sent.map((s) => s.reason)).toEqual(["A", "B"]);
    while (rec.sent.length < 4 || rec.inFlight > 0) {
      rec.finishOne();
      await tick();
    }
    expect(rec.sent).toEqual([
      { name: "ex", reason: "A", at: 1000 },
      { name: "ex", reason: "B", at: 1010 },
      { name: "ex", reason: "C", at: 1020 },
      { name: "ex", reason: "D", at: 1030 },
    ]);
    expect(rec.maxInFlight).toBe(2);
    expect(q.pending).toBe(0);
  });

  it("keeps the subject as it was when queued, whatever the caller changes afterwards", async () => {
    const rec = heldRecorder();
    const q = new EventQueue(rec, { inFlight: 1 });
    const ex = { apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { name: "a", namespace: "ns", uid: "u1" } };
    await q.record(ex, note("First"));
    await q.record(ex, note("Second"));
    ex.metadata.name = "changed";
    rec.finishOne();
    await tick();
    expect(rec.sent.map((s) => s.name)).toEqual(["a", "a"]);
  });

  it("makes record() wait while the backlog is full and drops nothing; flush() resolves once all are sent", async () => {
    const rec = heldRecorder();
    const q = new EventQueue(rec, { inFlight: 1, maxBacklog: 2 });
    await q.record({ metadata: { name: "x" } }, note("E1")); // sent at once
    await q.record({ metadata: { name: "x" } }, note("E2"));
    await q.record({ metadata: { name: "x" } }, note("E3"));
    let fourthQueued = false;
    const fourth = q.record({ metadata: { name: "x" } }, note("E4")).then(() => (fourthQueued = true));
    await tick();
    expect(fourthQueued).toBe(false);
    let flushed = false;
    const flush = q.flush().then(() => (flushed = true));
    rec.finishOne();
    await fourth;
    expect(fourthQueued).toBe(true);
    for (let i = 0; i < 10 && !flushed; i++) {
      rec.finishOne();
      await tick();
    }
    await flush;
    expect(rec.sent.map((s) => s.reason)).toEqual(["E1", "E2", "E3", "E4"]);
    expect(q.pending).toBe(0);
    await q.flush();
  });
});
