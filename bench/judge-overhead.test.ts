// The nearest-rank percentile the judge-overhead bench reports.
import { describe, expect, it } from "vitest";
import { percentile } from "./judge-overhead.js";

describe("percentile", () => {
  it("takes the nearest rank", () => {
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 90)).toBe(4);
    expect(percentile([7], 50)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });
});
