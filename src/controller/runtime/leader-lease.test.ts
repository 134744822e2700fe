// The Lease decision: create when absent, renew our own, take an empty or expired one, wait otherwise.
import { describe, expect, it } from "vitest";
import type * as k8s from "@kubernetes/client-node";
import { leaseAction } from "./leader-lease.js";

const now = new Date("2026-11-23T13:00:00Z");
const lease = (holderIdentity: string | undefined, renewedSecondsAgo: number, leaseDurationSeconds = 15): k8s.V1Lease => ({
  metadata: { name: "l" },
  spec: {
    ...(holderIdentity !== undefined ? { holderIdentity } : {}),
    leaseDurationSeconds,
    renewTime: new Date(now.getTime() - renewedSecondsAgo * 1000),
  },
});

describe("leaseAction", () => {
  it("creates a missing Lease and renews its own", () => {
    expect(leaseAction(undefined, "a", now)).toBe("create");
    expect(leaseAction(lease("a", 100), "a", now)).toBe("renew");
  });
  it("takes a Lease nobody holds or whose holder stopped renewing; waits for a live holder", () => {
    expect(leaseAction(lease("", 1), "a", now)).toBe("take");
    expect(leaseAction(lease(undefined, 1), "a", now)).toBe("take");
    expect(leaseAction(lease("b", 16), "a", now)).toBe("take");
    expect(leaseAction(lease("b", 14), "a", now)).toBe("wait");
    expect(leaseAction(lease("b", 14, 10), "a", now)).toBe("take");
  });
});
