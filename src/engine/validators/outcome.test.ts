// Tests of the shared threshold rule: score >= min_score and confidence >= min_confidence.
import { describe, expect, it } from "vitest";
import { applyThresholds, deterministic, thresholdsOf, TOOL_MIN_SCORE } from "./outcome.js";

describe("thresholds", () => {
  it("defaults to min_score 1.0 and min_confidence 0.0 for outer validators", () => {
    expect(thresholdsOf({})).toEqual({ min_score: 1, min_confidence: 0 });
    expect(thresholdsOf({}, TOOL_MIN_SCORE)).toEqual({ min_score: 0.7, min_confidence: 0 });
    expect(thresholdsOf({ min_score: 0.5, min_confidence: 0.2 })).toEqual({ min_score: 0.5, min_confidence: 0.2 });
  });

  it("passes at exactly the thresholds and fails just below the score", () => {
    const t = { min_score: 0.8, min_confidence: 0.7 };
    expect(applyThresholds({ score: 0.8, confidence: 0.7, reasoning: "fine" }, t)).toMatchObject({ passed: true, reasoning: "fine" });
    const low = applyThresholds({ score: 0.79, confidence: 0.9, reasoning: "meh" }, t);
    expect(low.passed).toBe(false);
    expect(low.reasoning).toContain("score 0.79 is below min_score 0.80");
  });

  it("fails a perfect score with a confidence below min_confidence and says the judge is not re-run", () => {
    const r = applyThresholds(
      { score: 1, confidence: 0.5, reasoning: "unsure", signals: [{ category: "c", score: 1, message: "m" }] },
      { min_score: 0.8, min_confidence: 0.7 },
    );
    expect(r.passed).toBe(false);
    expect(r.reasoning).toContain("confidence 0.50 is below min_confidence 0.70");
    expect(r.reasoning).toContain("not re-run");
    expect(r.signals).toHaveLength(1);
  });

  it("deterministic outcomes are 1 or 0 with full confidence", () => {
    expect(deterministic(true, "x")).toEqual({ score: 1, confidence: 1, reasoning: "x", signals: [], passed: true });
    expect(deterministic(false, "y")).toMatchObject({ score: 0, confidence: 1, passed: false });
  });
});
