// Tests of multi_judge consensus: each mode on hand-computed cases (docs/consensus.md), and
// properties that hold for any votes.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ConsensusStrategy, JudgeRejectionReason, MultiJudgeValidatorSpec } from "../api/types.js";
import { agreementOf, aggregateConsensus, type JudgeVote } from "./consensus.js";

function spec(extra: Partial<MultiJudgeValidatorSpec> = {}): MultiJudgeValidatorSpec {
  return { type: "multi_judge", judges: ["a", "b", "c", "d"], min_score: 0.8, min_confidence: 0.5, ...extra };
}
function v(judge: string, score: number, confidence: number, reasoning = `${judge} says so`): JudgeVote {
  return { judge, result: { score, confidence, reasoning } };
}
function r(judge: string, rejection: JudgeRejectionReason): JudgeVote {
  return { judge, rejection };
}

describe("weighted_average", () => {
  const votes = [v("a", 0.9, 0.8), v("b", 0.6, 0.6), v("c", 0.9, 1.0)];

  it("is the default mode and weighs an unnamed judge 1", () => {
    // score (2·0.9 + 0.6 + 0.9) / 4 = 0.825; confidence (2·0.8 + 0.6 + 1.0) / 4 = 0.8
    const out = aggregateConsensus(spec({ weights: { a: 2 } }), votes);
    expect(out.score).toBeCloseTo(0.825, 12);
    expect(out.confidence).toBeCloseTo(0.8, 12);
    expect(out.passed).toBe(true);
    expect(out.signals.find((s) => s.category === "agreement")?.score).toBeCloseTo(0.7, 12);
  });

  it("fails below min_score with equal weights", () => {
    // (0.9 + 0.6 + 0.9) / 3 = 0.8 exactly passes; lower b a little and it fails
    expect(aggregateConsensus(spec({ consensus: "weighted_average" }), votes).score).toBeCloseTo(0.8, 12);
    const out = aggregateConsensus(spec(), [v("a", 0.9, 0.8), v("b", 0.5, 0.6), v("c", 0.9, 1.0)]);
    expect(out.score).toBeCloseTo(2.3 / 3, 12);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain("below min_score 0.80");
  });

  it("is not pushed below an exact threshold by floating-point noise", () => {
    // Naively (0.1·0.7 + 0.2·0.7 + 0.3·0.7) / 0.6 = 0.6999999999999997 and 7 × 0.8 / 7 = 0.7999999999999999.
    const same = aggregateConsensus(spec({ min_score: 0.7, weights: { a: 0.1, b: 0.2, c: 0.3 } }), [
      v("a", 0.7, 1),
      v("b", 0.7, 1),
      v("c", 0.7, 1),
    ]);
    expect([same.score, same.passed]).toEqual([0.7, true]);
    const seven = ["a", "b", "c", "d", "e", "f", "g"].map((j) => v(j, 0.8, 0.9));
    for (const consensus of ["weighted_average", "majority"] as const) {
      expect(aggregateConsensus(spec({ consensus }), seven)).toMatchObject({ score: 0.8, passed: true });
    }
    // A mean that is mathematically the threshold: (0.7 + 0.8 + 0.6) / 3 = 0.7.
    expect(aggregateConsensus(spec({ min_score: 0.7 }), [v("a", 0.7, 1), v("b", 0.8, 1), v("c", 0.6, 1)]).passed).toBe(true);
  });

  it("multiplies weights by confidence when confidence_weighting is set", () => {
    // w = 2·0.8, 0.6, 1.0 → score (1.44 + 0.36 + 0.9) / 3.2 = 0.84375; confidence stays base-weighted 0.8
    const out = aggregateConsensus(spec({ weights: { a: 2 }, confidence_weighting: true }), votes);
    expect(out.score).toBeCloseTo(0.84375, 12);
    expect(out.confidence).toBeCloseTo(0.8, 12);
    expect(out.passed).toBe(true);
    expect(out.reasoning).toContain("weights × confidence");
  });

  it("mutes a judge of weight 0 in score, confidence and agreement, but counts it as answering", () => {
    const out = aggregateConsensus(spec({ weights: { b: 0 }, min_agreement_confidence: 0.95, min_judges_required: 3 }), [
      v("a", 0.9, 0.8),
      v("b", 0.0, 0.1),
      v("c", 0.9, 1.0),
    ]);
    expect(out.score).toBeCloseTo(0.9, 12);
    expect(out.confidence).toBeCloseTo(0.9, 12);
    expect(out.passed).toBe(true);
    expect(out.reasoning).toContain("3 of 3 judges answered");
  });

  it("fails when every weight is 0 or every confidence-weighted weight is 0", () => {
    const allZero = aggregateConsensus(spec({ weights: { a: 0, b: 0 } }), [v("a", 1, 1), v("b", 1, 1)]);
    expect(allZero.passed).toBe(false);
    expect(allZero.reasoning).toContain("weight 0");
    const noConfidence = aggregateConsensus(spec({ min_confidence: 0, min_score: 0, confidence_weighting: true }), [
      v("a", 1, 0),
      v("b", 1, 0),
    ]);
    expect(noConfidence.passed).toBe(false);
    expect(noConfidence.reasoning).toContain("confidence 0");
  });

  it("handles huge weights without overflowing", () => {
    const out = aggregateConsensus(spec({ weights: { a: 1e308, b: 1e308, c: 0 } }), [v("a", 0.9, 0.8), v("b", 0.7, 0.6), v("c", 0, 0)]);
    expect(out.score).toBeCloseTo(0.8, 12);
    expect(out.confidence).toBeCloseTo(0.7, 12);
  });

  it("rejects a negative or non-finite weight, naming it", () => {
    const out = aggregateConsensus(spec({ weights: { b: -1 } }), [v("a", 1, 1), v("b", 1, 1)]);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain("weights.b must be a finite number >= 0");
    expect(aggregateConsensus(spec({ weights: { a: Number.NaN } }), [v("a", 1, 1)]).reasoning).toContain("weights.a");
  });
});

describe("majority", () => {
  const m = spec({ consensus: "majority" });

  it("passes when more than half pass; reports the passing side's mean", () => {
    const out = aggregateConsensus(m, [v("a", 0.9, 0.9), v("b", 0.85, 0.7), v("c", 0.2, 0.9)]);
    expect(out.passed).toBe(true);
    expect(out.score).toBeCloseTo(0.875, 12);
    expect(out.confidence).toBeCloseTo(0.8, 12);
    expect(out.reasoning).toContain("2 pass, 1 fail");
  });

  it("a judge with a high score but low confidence votes fail", () => {
    const out = aggregateConsensus(m, [v("a", 0.9, 0.9), v("b", 1.0, 0.4), v("c", 0.2, 0.9)]);
    expect(out.passed).toBe(false);
    // failing side is b and c: lowest score 0.2, lowest confidence 0.4
    expect(out.score).toBeCloseTo(0.2, 12);
    expect(out.confidence).toBeCloseTo(0.4, 12);
    expect(out.reasoning).toContain("a majority of judges fail (1 pass, 2 fail)");
  });

  it("a tie fails, reporting the failing side's lowest score and confidence", () => {
    // c fails on score, d on confidence: min score 0.5 and min confidence 0.2 from different judges
    const out = aggregateConsensus(m, [v("a", 0.9, 0.9), v("b", 1.0, 0.6), v("c", 0.5, 0.9), v("d", 0.95, 0.2)]);
    expect(out.passed).toBe(false);
    expect(out.score).toBeCloseTo(0.5, 12);
    expect(out.confidence).toBeCloseTo(0.2, 12);
    expect(out.reasoning).toContain("the judges are tied (2 pass, 2 fail); a tie fails");
  });

  it("counts only valid votes: 2 pass, 1 fail, 1 timed out passes", () => {
    const out = aggregateConsensus(m, [v("a", 0.9, 0.9), v("b", 0.8, 0.5), v("c", 0.1, 0.9), r("d", "timed_out")]);
    expect(out.passed).toBe(true);
    expect(out.score).toBeCloseTo(0.85, 12);
    expect(out.reasoning).toContain("- d: rejected (timed_out)");
  });

  it("1 pass, 1 fail, 1 crashed is a tie", () => {
    const out = aggregateConsensus(m, [v("a", 0.9, 0.9), r("b", "failed"), v("c", 0.1, 0.9)]);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain("tie");
  });
});

describe("unanimous", () => {
  const u = spec({ consensus: "unanimous" });
  it("passes when every valid judge passes; score and confidence are the minimum", () => {
    const out = aggregateConsensus(u, [v("a", 0.9, 0.6), v("b", 0.8, 0.95), r("c", "malformed_output")]);
    expect(out.passed).toBe(true);
    expect(out.score).toBeCloseTo(0.8, 12);
    expect(out.confidence).toBeCloseTo(0.6, 12);
  });
  it("one dissenting judge fails it and is named", () => {
    const out = aggregateConsensus(u, [v("a", 1, 1), v("b", 1, 1), v("c", 0.79, 1)]);
    expect(out.passed).toBe(false);
    expect(out.score).toBeCloseTo(0.79, 12);
    expect(out.reasoning).toContain("not unanimous: c fail");
  });
});

describe("best_of_n", () => {
  const b = spec({ consensus: "best_of_n" });
  it("takes the highest-scoring passing judge, not a higher score with too little confidence", () => {
    const out = aggregateConsensus(b, [v("a", 0.95, 0.1), v("b", 0.9, 0.9), v("c", 0.3, 0.9)]);
    expect(out.passed).toBe(true);
    expect(out.score).toBeCloseTo(0.9, 12);
    expect(out.confidence).toBeCloseTo(0.9, 12);
    expect(out.reasoning).toContain("b is the highest-scoring passing judge");
  });
  it("with no passing judge takes the highest score, ties broken by confidence then order", () => {
    const out = aggregateConsensus(b, [v("a", 0.7, 0.9), v("b", 0.7, 0.95), v("c", 0.7, 0.95)]);
    expect(out.passed).toBe(false);
    expect(out.confidence).toBeCloseTo(0.95, 12);
    expect(out.reasoning).toContain("b scores highest, and no judge passes");
  });
});

describe("judges required and agreement", () => {
  it("fails when fewer judges than min_judges_required answered, saying how many", () => {
    const out = aggregateConsensus(spec({ min_judges_required: 3 }), [v("a", 1, 1), r("b", "cancelled"), v("c", 1, 1)]);
    expect(out.passed).toBe(false);
    expect(out.score).toBe(0);
    expect(out.reasoning).toContain("only 2 of 3 judges returned a valid verdict; min_judges_required is 3");
    expect(out.reasoning).toContain("- b: rejected (cancelled)");
  });

  it("fails when every judge was rejected, whatever the mode", () => {
    for (const consensus of ["weighted_average", "majority", "unanimous", "best_of_n"] as const) {
      const out = aggregateConsensus(spec({ consensus }), [r("a", "timed_out"), r("b", "malformed_output")]);
      expect(out.passed).toBe(false);
      expect(out.reasoning).toContain("only 0 of 2");
    }
    expect(aggregateConsensus(spec(), []).passed).toBe(false);
  });

  it("treats a verdict with an out-of-range number as no verdict", () => {
    const out = aggregateConsensus(spec({ min_judges_required: 2 }), [v("a", 1, 1), v("b", 1.5, 1)]);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain("- b: rejected (verdict out of range)");
  });

  it("a single judge gives its own verdict in every mode, with agreement 1", () => {
    for (const consensus of ["weighted_average", "majority", "unanimous", "best_of_n"] as const) {
      const pass = aggregateConsensus(spec({ consensus, min_agreement_confidence: 1 }), [v("a", 0.85, 0.7)]);
      expect([pass.passed, pass.score, pass.confidence]).toEqual([true, 0.85, 0.7]);
      const fail = aggregateConsensus(spec({ consensus }), [v("a", 0.75, 0.7)]);
      expect([fail.passed, fail.score]).toEqual([false, 0.75]);
    }
  });

  it("enforces min_agreement_confidence from the spread of scores", () => {
    // scores 1.0 and 0.7: weighted mean 0.85 passes, agreement 1 − 0.3 = 0.7
    const votes = [v("a", 1.0, 1), v("b", 0.7, 1)];
    expect(aggregateConsensus(spec({ min_agreement_confidence: 0.7 }), votes).passed).toBe(true);
    const out = aggregateConsensus(spec({ min_agreement_confidence: 0.8 }), votes);
    expect(out.passed).toBe(false);
    expect(out.score).toBeCloseTo(0.85, 12);
    expect(out.reasoning).toContain("agreement 0.70 is below min_agreement_confidence 0.80");
  });

  it("agreement is 1 − (max − min), clamped", () => {
    expect(agreementOf([])).toBe(1);
    expect(agreementOf([0.3])).toBe(1);
    expect(agreementOf([0, 1])).toBe(0);
    expect(agreementOf([0.2, 0.5, 0.4])).toBeCloseTo(0.7, 12);
  });

  it("uses the given default min_score when the spec has none", () => {
    const s: MultiJudgeValidatorSpec = { type: "multi_judge", judges: ["a"] };
    expect(aggregateConsensus(s, [v("a", 0.9, 1)]).passed).toBe(false);
    expect(aggregateConsensus(s, [v("a", 0.9, 1)], 0.7).passed).toBe(true);
  });

  it("lists each judge's score, confidence and reasoning", () => {
    const out = aggregateConsensus(spec({ weights: { a: 2 } }), [v("a", 0.9, 0.8, "tests pass"), r("b", "failed")]);
    expect(out.reasoning).toContain("- a: score 0.90, confidence 0.80, weight 2.00: tests pass");
    expect(out.reasoning).toContain("- b: rejected (failed)");
    expect(out.signals).toContainEqual({ category: "judge:a", score: 0.9, message: "confidence 0.80" });
  });
});

describe("configuration edges", () => {
  it("treats min_judges_required 0 as 1 and cannot pass when it exceeds the judges", () => {
    expect(aggregateConsensus(spec({ min_judges_required: 0 }), [r("a", "failed")]).reasoning).toContain("min_judges_required is 1");
    const out = aggregateConsensus(spec({ min_judges_required: 5 }), [v("a", 1, 1), v("b", 1, 1)]);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain("only 2 of 2 judges returned a valid verdict; min_judges_required is 5");
  });

  it("ignores weights in the other modes and weights naming no voting judge", () => {
    const votes = [v("a", 0.9, 0.9), v("b", 0.5, 0.9), v("c", 0.85, 0.9)];
    const weights = { b: 100, nobody: 7 };
    expect(aggregateConsensus(spec({ consensus: "majority", weights }), votes).passed).toBe(true);
    expect(aggregateConsensus(spec({ weights: { nobody: 7 } }), votes).score).toBeCloseTo(2.25 / 3, 12);
    expect(aggregateConsensus(spec({ weights }), votes).score).toBeCloseTo((0.9 + 50 + 0.85) / 102, 12);
  });

  it("fails with a clear reason on an unknown consensus mode", () => {
    const out = aggregateConsensus(spec({ consensus: "loudest" as ConsensusStrategy }), [v("a", 1, 1)]);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain('unknown consensus "loudest"');
  });

  it("a rejection wins over a result carried on the same vote", () => {
    const out = aggregateConsensus(spec(), [{ judge: "a", result: { score: 1, confidence: 1, reasoning: "r" }, rejection: "timed_out" }]);
    expect(out.passed).toBe(false);
    expect(out.reasoning).toContain("- a: rejected (timed_out)");
  });
});

describe("consensus properties", { timeout: 60_000 }, () => {
  const unit = fc.double({ min: 0, max: 1, noNaN: true });
  const voteArb = fc.oneof(
    { weight: 4, arbitrary: fc.record({ score: unit, confidence: unit }).map((x) => ({ result: { ...x, reasoning: "r" } })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom<JudgeRejectionReason>("malformed_output", "failed", "cancelled", "timed_out")
        .map((rejection) => ({ rejection })),
    },
  );
  const votesArb = fc.array(voteArb, { maxLength: 7 }).map((vs) => vs.map((x, i) => ({ judge: `j${i}`, ...x }) as JudgeVote));
  const modeArb = fc.constantFrom<ConsensusStrategy>("weighted_average", "majority", "unanimous", "best_of_n");

  it("a passing outcome always meets both thresholds and lies within the judges' range", () => {
    fc.assert(
      fc.property(votesArb, modeArb, unit, unit, fc.boolean(), (votes, consensus, minScore, minConfidence, cw) => {
        const s = spec({ consensus, min_score: minScore, min_confidence: minConfidence, confidence_weighting: cw });
        const out = aggregateConsensus(s, votes);
        const valid = votes.filter((x) => x.result !== undefined).map((x) => x.result!);
        if (out.passed) {
          expect(out.score).toBeGreaterThanOrEqual(minScore);
          expect(out.confidence).toBeGreaterThanOrEqual(minConfidence);
          expect(valid.length).toBeGreaterThan(0);
        }
        if (valid.length > 0) {
          expect(out.score).toBeGreaterThanOrEqual(Math.min(...valid.map((x) => x.score)) - 1e-12);
          expect(out.score).toBeLessThanOrEqual(Math.max(...valid.map((x) => x.score)) + 1e-12);
        }
      }),
    );
  });

  it("does not depend on the order of the votes (except best_of_n ties) or on the scale of the weights", () => {
    // Every judge named, so that scaling the weights scales all of them (an unnamed judge weighs 1).
    const weightsArb = fc
      .array(fc.double({ min: 0.01, max: 10, noNaN: true }), { minLength: 7, maxLength: 7 })
      .map((ws) => Object.fromEntries(ws.map((w, i) => [`j${i}`, w])));
    fc.assert(
      fc.property(
        votesArb,
        fc.constantFrom<ConsensusStrategy>("weighted_average", "majority", "unanimous"),
        unit,
        weightsArb,
        fc.double({ min: 0.1, max: 10, noNaN: true }),
        fc.boolean(),
        (votes, consensus, minScore, weights, k, cw) => {
          const s = spec({ consensus, min_score: minScore, weights, confidence_weighting: cw });
          const a = aggregateConsensus(s, votes);
          const b = aggregateConsensus(s, [...votes].reverse());
          expect(b.passed).toBe(a.passed);
          expect(b.score).toBeCloseTo(a.score, 9);
          expect(b.confidence).toBeCloseTo(a.confidence, 9);
          const scaled = aggregateConsensus(
            { ...s, weights: Object.fromEntries(Object.entries(weights).map(([j, w]) => [j, w * k])) },
            votes,
          );
          expect(scaled.score).toBeCloseTo(a.score, 9);
          expect(scaled.confidence).toBeCloseTo(a.confidence, 9);
        },
      ),
    );
  });

  it("majority passes exactly when more than half the valid judges pass; unanimous when all do", () => {
    fc.assert(
      fc.property(votesArb, unit, unit, (votes, minScore, minConfidence) => {
        const passes = votes.filter(
          (x) => x.result !== undefined && x.result.score >= minScore && x.result.confidence >= minConfidence,
        ).length;
        const valid = votes.filter((x) => x.result !== undefined).length;
        const base = { min_score: minScore, min_confidence: minConfidence };
        expect(aggregateConsensus(spec({ ...base, consensus: "majority" }), votes).passed).toBe(valid > 0 && 2 * passes > valid);
        expect(aggregateConsensus(spec({ ...base, consensus: "unanimous" }), votes).passed).toBe(valid > 0 && passes === valid);
        expect(aggregateConsensus(spec({ ...base, consensus: "best_of_n" }), votes).passed).toBe(passes > 0);
      }),
    );
  });
});
