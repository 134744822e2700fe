// The worker's first connect to the gate's NATS on a simulated clock: retried with backoff
// until the budget ends, credentials refusals final, the budget's margin before the deadline.
import { describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectWithBackoff, gateBudgetEnd, GateUnreachableError, isTransientConnectError } from "./gate-connection.js";

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** A clock that advances only when the code under test sleeps. */
function clock() {
  let t = 1_000_000;
  return { now: () => t, sleep: (ms: number) => ((t += ms), Promise.resolve()) };
}

const connection = {} as NatsConnection;

describe("worker's connect to the gate", () => {
  it("keeps dialing a refused server and returns the connection once it answers, logging each wait", async () => {
    const c = clock();
    const logs: Record<string, unknown>[] = [];
    let dials = 0;
    const nc = await connectWithBackoff(
      () => (++dials < 4 ? Promise.reject(named("ConnectionError", "connection refused")) : Promise.resolve(connection)),
      { url: "nats://n:4222", deadlineMs: c.now() + 60_000, log: (e) => logs.push(e), backoffJitter: 0, ...c },
    );
    expect(nc).toBe(connection);
    expect(dials).toBe(4);
    expect(logs.map((l) => l.event)).toEqual(["nats_unreachable", "nats_unreachable", "nats_unreachable", "nats_connected"]);
    expect(logs[0]).toMatchObject({ nats: "nats://n:4222", error: "connection refused", attempt: 1, retryInMs: 250 });
    expect(logs[3]).toMatchObject({ attempts: 4, waitedMs: 1750 });
  });

  it("gives up at the deadline with how long it waited and the last error", async () => {
    const c = clock();
    const start = c.now();
    const err = await connectWithBackoff(() => Promise.reject(named("ConnectionError", "connection refused")), {
      url: "nats://n:4222",
      deadlineMs: start + 30_000,
      log: () => undefined,
      ...c,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GateUnreachableError);
    const u = (err as GateUnreachableError).unreachable;
    expect(c.now() - start).toBeLessThanOrEqual(30_000);
    expect(u.seconds).toBeGreaterThanOrEqual(25);
    expect(u.detail).toMatch(/^NATS at nats:\/\/n:4222: connection refused \(\d+ attempt\(s\)\)$/);
  });

  it("tries once even when the budget is already spent", async () => {
    const c = clock();
    let dials = 0;
    const p = connectWithBackoff(() => (dials++, Promise.reject(named("ConnectionError", "refused"))), {
      url: "u",
      deadlineMs: c.now() - 1,
      log: () => undefined,
      ...c,
    });
    await expect(p).rejects.toBeInstanceOf(GateUnreachableError);
    expect(dials).toBe(1);
  });

  it("does not retry a refusal of its credentials", async () => {
    const c = clock();
    let dials = 0;
    const p = connectWithBackoff(() => (dials++, Promise.reject(named("AuthorizationError", "Authorization Violation"))), {
      url: "u",
      deadlineMs: c.now() + 60_000,
      log: () => undefined,
      ...c,
    });
    await expect(p).rejects.toThrow(/Authorization Violation/);
    expect(dials).toBe(1);
    expect(isTransientConnectError(named("ConnectionError", "x"))).toBe(true);
    expect(isTransientConnectError(new Error("getaddrinfo ENOTFOUND gavel-nats"))).toBe(true);
    expect(isTransientConnectError(named("UserAuthenticationExpiredError", "x"))).toBe(false);
  });

  it("ends the wait before the iteration's deadline, by a margin of 10 % between 2 s and 15 s", () => {
    expect(gateBudgetEnd(0, 30_000, 330_000)).toBe(27_000);
    expect(gateBudgetEnd(0, 10_000, 330_000)).toBe(8000);
    expect(gateBudgetEnd(0, 300_000, 330_000)).toBe(285_000);
    expect(gateBudgetEnd(0, 1000, 330_000)).toBe(1000);
    expect(gateBudgetEnd(0, undefined, 330_000)).toBe(330_000);
  });

  it("ends it 2 s before the driver's deadline when that comes first (the pod started late)", () => {
    expect(gateBudgetEnd(5000, 30_000, 330_000, 30_000)).toBe(28_000);
    expect(gateBudgetEnd(0, 30_000, 330_000, 60_000)).toBe(27_000);
    expect(gateBudgetEnd(0, undefined, 330_000, 60_000)).toBe(58_000);
  });
});
