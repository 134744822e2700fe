import { describe, expect, it } from "vitest";
import type { GuardPolicy } from "../api/types.js";
import { JOIN_GRACE_MS, policyLag, replicaEntries, sameEntries, withMyEntry } from "./policy-enforcement.js";
import { liveHolders, replicaLeaseName } from "./runtime/replica-leases.js";

const NOW = new Date("2026-12-07T18:00:00Z");
const ago = (ms: number) => new Date(NOW.getTime() - ms);

function policy(generation: number, replicas?: unknown): GuardPolicy {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "GuardPolicy",
    metadata: { name: "team", namespace: "ns", generation },
    spec: {},
    ...(replicas !== undefined ? { status: { replicas } } : {}),
  } as GuardPolicy;
}

describe("status.replicas: what each replica reports", () => {
  it("replaces this replica's entry, keeps the live others', drops the gone ones, sorted by name", () => {
    const existing = [
      { name: "c", observedGeneration: 1 },
      { name: "a", observedGeneration: 1, enforcedGeneration: 1 },
      { name: "gone", observedGeneration: 1 },
    ];
    const live = new Map([
      ["a", NOW],
      ["c", NOW],
    ]);
    expect(withMyEntry(existing, { name: "a", observedGeneration: 2, enforcedGeneration: 2 }, live)).toEqual([
      { name: "a", observedGeneration: 2, enforcedGeneration: 2 },
      { name: "c", observedGeneration: 1 },
    ]);
  });

  it("keeps every other entry while the live replicas are not known yet", () => {
    const existing = [{ name: "b", observedGeneration: 1 }];
    expect(withMyEntry(existing, { name: "a", observedGeneration: 1 }, undefined).map((e) => e.name)).toEqual(["a", "b"]);
  });

  it("reads only well-formed entries, and compares lists whatever their order", () => {
    expect(replicaEntries({ replicas: [{ name: "a", observedGeneration: 1 }, { name: 3 }, "x"] })).toEqual([
      { name: "a", observedGeneration: 1 },
    ]);
    expect(replicaEntries(undefined)).toEqual([]);
    const a = { name: "a", observedGeneration: 1 };
    const b = { name: "b", observedGeneration: 2, enforcedGeneration: 1 };
    expect(sameEntries([a, b], [b, a])).toBe(true);
    expect(sameEntries([a, b], [a, { ...b, enforcedGeneration: 2 }])).toBe(false);
  });
});

describe("policyLag: what an Agent still waits for", () => {
  it("nothing once every live replica reports the policy's generation", () => {
    const live = new Map([
      ["a", ago(60_000)],
      ["b", ago(60_000)],
    ]);
    const p = policy(3, [
      { name: "a", observedGeneration: 3 },
      { name: "b", observedGeneration: 3 },
      { name: "dead", observedGeneration: 1 },
    ]);
    expect(policyLag([p], live, NOW)).toBeUndefined();
  });

  it("names the policy, its generation and each replica behind it", () => {
    const live = new Map([
      ["a", ago(60_000)],
      ["b", ago(60_000)],
      ["c", ago(JOIN_GRACE_MS)],
    ]);
    const p = policy(4, [
      { name: "a", observedGeneration: 4 },
      { name: "b", observedGeneration: 3 },
    ]);
    expect(policyLag([p], live, NOW)).toBe(
      "GuardPolicy ns/team generation 4 is not yet enforced by b (at generation 3), c (nothing reported)",
    );
  });

  it("gives a replica that has just started a moment to report before waiting for it", () => {
    const live = new Map([["new", ago(JOIN_GRACE_MS - 1)]]);
    expect(policyLag([policy(1)], live, NOW)).toBeUndefined();
  });
});

describe("replica Leases", () => {
  it("counts a Lease live until its renewTime plus its duration, with its acquireTime", () => {
    const lease = (holder: string, renewedMsAgo: number, duration = 30) => ({
      metadata: { name: holder },
      spec: { holderIdentity: holder, leaseDurationSeconds: duration, renewTime: ago(renewedMsAgo), acquireTime: ago(100_000) },
    });
    const live = liveHolders([lease("a", 1_000), lease("b", 30_000), lease("c", 30_001), { metadata: { name: "x" }, spec: {} }], NOW);
    expect([...live.keys()]).toEqual(["a", "b"]);
    expect(live.get("a")).toEqual(ago(100_000));
  });

  it("names a Lease after the group and the identity, a DNS label of at most 63 characters", () => {
    expect(replicaLeaseName("gavel-controller", "gavel-7d9f-abcde")).toBe("gavel-controller-gavel-7d9f-abcde");
    const odd = replicaLeaseName("gavel-controller", "Host.Example_1-4242");
    expect(odd).toMatch(/^gavel-controller-host-example-1-4242-[0-9a-f]{10}$/);
    const long = replicaLeaseName("gavel-controller", "x".repeat(80));
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(replicaLeaseName("gavel-controller", "y".repeat(80))).not.toBe(long);
  });
});
