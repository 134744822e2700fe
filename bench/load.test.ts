import { describe, expect, it } from "vitest";
import { openLoop, percentile } from "./load.js";

describe("bench open loop", () => {
  it("sends every call once, in order, and times each from its send", async () => {
    const seen: number[] = [];
    const r = await openLoop(2000, 0.1, (i) => {
      seen.push(i);
      return new Promise((resolve) => setImmediate(resolve));
    });
    expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(r.latencies).toHaveLength(200);
    expect(r.lags).toHaveLength(200);
    expect(r.latencies.every((l) => l >= 0)).toBe(true);
    expect(r.achieved).toBeGreaterThan(0);
  });

  it("fails when a call fails", async () => {
    await expect(openLoop(1000, 0.01, (i) => (i === 3 ? Promise.reject(new Error("no")) : Promise.resolve()))).rejects.toThrow("no");
  });

  it("percentile is the nearest rank", () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([5, 1, 4, 2, 3], 99)).toBe(5);
  });
});
