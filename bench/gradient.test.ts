// The gradient bench measures what it claims: real parses of a 1 MiB output that find the
// embedded verdict, with finite figures and ratios.
import { describe, expect, it } from "vitest";
import { parseGradientResult } from "../src/engine/gradient.js";
import { runGradientBench, transcript } from "./gradient.js";

describe("gradient bench", () => {
  it("builds a 1 MiB transcript with no verdict in it", () => {
    const t = transcript();
    expect(t.length).toBe(1 << 20);
    expect(parseGradientResult(t).ok).toBe(false);
  });

  it("reports four finite measurements against same-run baselines", () => {
    const results = runGradientBench(3);
    expect(results.map((r) => r.name)).toHaveLength(4);
    for (const r of results) {
      expect(Number.isFinite(r.value) && r.value > 0).toBe(true);
      expect(Number.isFinite(r.baseline) && r.baseline > 0).toBe(true);
      expect(r.ratio).toBeCloseTo(r.value / r.baseline, 9);
      expect(r.met).toBe(r.value < 5);
    }
  }, 60_000);
});
