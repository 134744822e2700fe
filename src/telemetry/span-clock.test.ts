import { describe, expect, it } from "vitest";
import { spanTime } from "./span-clock.js";

const ns = ([s, n]: [number, number]): bigint => BigInt(s) * 1_000_000_000n + BigInt(n);

describe("spanTime", () => {
  it("keeps the order and spacing of performance.now() readings, in wall-clock time", () => {
    const reads = Array.from({ length: 2000 }, () => performance.now());
    const times = reads.map((t) => ns(spanTime(t)));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThanOrEqual(times[i - 1] ?? 0n);
    const first = reads[0] ?? 0;
    const last = reads.at(-1) ?? 0;
    // The spacing survives to the µs; the wall clock lies within a second of Date.now().
    expect(Math.abs(Number((times.at(-1) ?? 0n) - (times[0] ?? 0n)) / 1e6 - (last - first))).toBeLessThan(0.002);
    expect(Math.abs(Number(ns(spanTime(performance.now())) / 1_000_000n) - Date.now())).toBeLessThan(1000);
  });

  it("takes a Date as it is, and never gives a nanosecond part of a whole second or more", () => {
    expect(spanTime(new Date(1_765_000_000_123))).toEqual([1_765_000_000, 123_000_000]);
    for (const t of [0.9999999999, 999.9999999999, 1e9 - 1e-7]) {
      const [, n] = spanTime(t);
      expect(n).toBeGreaterThanOrEqual(0);
      expect(n).toBeLessThan(1e9);
    }
  });
});
