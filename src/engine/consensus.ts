// Consensus of a multi_judge validator: combines the verdicts of several judges into one
// ValidatorOutcome. A pure function of data; docs/consensus.md states every formula used here.
import type { ConsensusStrategy, GradientResult, JudgeRejectionReason, MultiJudgeValidatorSpec, Signal } from "../api/types.js";
import { applyThresholds, fmt, thresholdsOf, type Thresholds, type ValidatorOutcome } from "./validators/outcome.js";

/** One judge's part in a multi_judge validator: its verdict, or why it gave none. */
export interface JudgeVote {
  judge: string;
  result?: GradientResult;
  rejection?: JudgeRejectionReason;
}

/** A vote that counts: the judge returned a verdict whose numbers are in [0, 1]. */
interface ValidVote {
  judge: string;
  result: GradientResult;
}

/** What a consensus mode computes before thresholds are applied. */
interface ModeResult {
  score: number;
  confidence: number;
  /** Judges whose scores enter the agreement measure (weight 0 mutes a judge). */
  contributing: ValidVote[];
  /** One line about how the mode decided, for the reasoning. */
  summary: string;
  /** Set when the mode itself decided to fail, whatever the numbers say. */
  failure?: string;
}

const DEFAULT_CONSENSUS: ConsensusStrategy = "weighted_average";

function inUnit(n: unknown): n is number {
  return typeof n === "number" && Number.isFinite(n) && n >= 0 && n <= 1;
}

function isValid(v: JudgeVote): v is ValidVote {
  return v.rejection === undefined && v.result !== undefined && inUnit(v.result.score) && inUnit(v.result.confidence);
}

/** Whether one judge's verdict meets the validator's thresholds on its own. */
function votesPass(v: ValidVote, t: Thresholds): boolean {
  return v.result.score >= t.min_score && v.result.confidence >= t.min_confidence;
}

/**
 * Removes floating-point noise from an average of `xs`: rounded to 12 decimals, then kept
 * within [min xs, max xs] as an average must be. Without it three judges at 0.7 average to
 * 0.6999999999999998 and miss a min_score of 0.7.
 */
function settle(avg: number, xs: number[]): number {
  const rounded = Math.round(avg * 1e12) / 1e12;
  return Math.min(Math.max(rounded, Math.min(...xs)), Math.max(...xs));
}

function mean(xs: number[]): number {
  let sum = 0;
  for (const x of xs) sum += x;
  return xs.length === 0 ? 0 : settle(sum / xs.length, xs);
}

/**
 * Agreement between judges from the spread of their scores: 1 − (max − min), clamped to
 * [0, 1]. One judge (or none) agrees with itself: 1.
 */
export function agreementOf(scores: number[]): number {
  if (scores.length <= 1) return 1;
  const spread = Math.max(...scores) - Math.min(...scores);
  return Math.min(1, Math.max(0, 1 - spread));
}

/** A judge's base weight: `weights[judge]`, or 1 when it is not named. */
function baseWeight(spec: MultiJudgeValidatorSpec, judge: string): number {
  const w = spec.weights?.[judge];
  return w === undefined ? 1 : w;
}

function weightedAverage(spec: MultiJudgeValidatorSpec, votes: ValidVote[]): ModeResult {
  const byConfidence = spec.confidence_weighting === true;
  let wSum = 0;
  let wScore = 0;
  let bSum = 0;
  let bConfidence = 0;
  const contributing: ValidVote[] = [];
  // Weights are scaled by the largest so that sums of huge weights cannot overflow to Infinity.
  const scale = Math.max(0, ...votes.map((v) => baseWeight(spec, v.judge)));
  for (const v of votes) {
    const b = scale === 0 ? 0 : baseWeight(spec, v.judge) / scale;
    if (b === 0) continue;
    contributing.push(v);
    const w = byConfidence ? b * v.result.confidence : b;
    wSum += w;
    wScore += w * v.result.score;
    bSum += b;
    bConfidence += b * v.result.confidence;
  }
  const how = byConfidence ? "weights × confidence" : "weights";
  if (bSum === 0) {
    return {
      score: 0,
      confidence: 0,
      contributing,
      summary: `weighted_average: every judge has weight 0`,
      failure: "every answering judge has weight 0, so there is no score to average",
    };
  }
  if (wSum === 0) {
    // Only reachable with confidence weighting: every weighted judge has confidence 0.
    return {
      score: 0,
      confidence: bConfidence / bSum,
      contributing,
      summary: `weighted_average by ${how}: all effective weights are 0`,
      failure: "every weighted judge has confidence 0, so confidence weighting leaves no score to average",
    };
  }
  // Only judges with a non-zero effective weight bound the score's average.
  const score = settle(
    wScore / wSum,
    contributing.filter((v) => !byConfidence || v.result.confidence > 0).map((v) => v.result.score),
  );
  const confidence = settle(
    bConfidence / bSum,
    contributing.map((v) => v.result.confidence),
  );
  return { score, confidence, contributing, summary: `weighted_average by ${how} over ${contributing.length} judge(s)` };
}

function majority(votes: ValidVote[], t: Thresholds): ModeResult {
  const pass = votes.filter((v) => votesPass(v, t));
  const fail = votes.filter((v) => !votesPass(v, t));
  const tally = `${pass.length} pass, ${fail.length} fail`;
  if (2 * pass.length > votes.length) {
    return {
      score: mean(pass.map((v) => v.result.score)),
      confidence: mean(pass.map((v) => v.result.confidence)),
      contributing: votes,
      summary: `majority: ${tally}; the passing majority decides`,
    };
  }
  // A failing majority or a tie: report the failing side's lowest score and lowest
  // confidence, which by construction cannot meet both thresholds.
  const tie = 2 * pass.length === votes.length;
  return {
    score: Math.min(...fail.map((v) => v.result.score)),
    confidence: Math.min(...fail.map((v) => v.result.confidence)),
    contributing: votes,
    summary: `majority: ${tally}; ${tie ? "a tie fails" : "the failing majority decides"}`,
    failure: tie ? `the judges are tied (${tally}); a tie fails` : `a majority of judges fail (${tally})`,
  };
}

function unanimous(votes: ValidVote[], t: Thresholds): ModeResult {
  const fail = votes.filter((v) => !votesPass(v, t));
  return {
    score: Math.min(...votes.map((v) => v.result.score)),
    confidence: Math.min(...votes.map((v) => v.result.confidence)),
    contributing: votes,
    summary: `unanimous: ${votes.length - fail.length} of ${votes.length} pass`,
    ...(fail.length > 0 ? { failure: `not unanimous: ${fail.map((v) => v.judge).join(", ")} fail` } : {}),
  };
}

/** The better of two votes for best_of_n: higher score, then higher confidence, then the earlier. */
function better(a: ValidVote, b: ValidVote): ValidVote {
  if (b.result.score !== a.result.score) return b.result.score > a.result.score ? b : a;
  return b.result.confidence > a.result.confidence ? b : a;
}

function bestOfN(votes: ValidVote[], t: Thresholds): ModeResult {
  // Any judge's approval suffices: the best passing judge if there is one, else the best.
  const pass = votes.filter((v) => votesPass(v, t));
  const pool = pass.length > 0 ? pass : votes;
  const best = pool.reduce(better);
  return {
    score: best.result.score,
    confidence: best.result.confidence,
    contributing: votes,
    summary: `best_of_n: ${best.judge} ${pass.length > 0 ? "is the highest-scoring passing judge" : "scores highest, and no judge passes"}`,
  };
}

function judgeLine(spec: MultiJudgeValidatorSpec, v: JudgeVote): string {
  if (!isValid(v)) {
    const why = v.rejection ?? (v.result === undefined ? "no verdict" : "verdict out of range");
    return `- ${v.judge}: rejected (${why})`;
  }
  const weight = (spec.consensus ?? DEFAULT_CONSENSUS) === "weighted_average" ? `, weight ${fmt(baseWeight(spec, v.judge))}` : "";
  return `- ${v.judge}: score ${fmt(v.result.score)}, confidence ${fmt(v.result.confidence)}${weight}: ${v.result.reasoning}`;
}

function judgeSignal(v: JudgeVote): Signal {
  if (!isValid(v)) return { category: `judge:${v.judge}`, score: 0, message: `rejected (${v.rejection ?? "no verdict"})` };
  return { category: `judge:${v.judge}`, score: v.result.score, message: `confidence ${fmt(v.result.confidence)}` };
}

/** Checks that every weight is a finite number >= 0; returns the offending field, if any. */
function badWeight(spec: MultiJudgeValidatorSpec): string | undefined {
  for (const [judge, w] of Object.entries(spec.weights ?? {})) {
    if (typeof w !== "number" || !Number.isFinite(w) || w < 0) return `weights.${judge} must be a finite number >= 0, got ${String(w)}`;
  }
  return undefined;
}

function failed(reasoning: string, signals: Signal[], confidence = 0, score = 0): ValidatorOutcome {
  return { score, confidence, reasoning, signals, passed: false };
}

/**
 * Combines judge votes by the validator's consensus mode, enforces min_judges_required
 * (over judges with a valid verdict) and min_agreement_confidence, then applies the
 * validator's thresholds. Never throws: a bad configuration is a failing outcome that says why.
 */
export function aggregateConsensus(spec: MultiJudgeValidatorSpec, votes: JudgeVote[], defaultMinScore = 1.0): ValidatorOutcome {
  const mode = spec.consensus ?? DEFAULT_CONSENSUS;
  const t = thresholdsOf(spec, defaultMinScore);
  const valid = votes.filter(isValid);
  const lines = votes.map((v) => judgeLine(spec, v)).join("\n");
  const judgeSignals = votes.map(judgeSignal);

  const weightError = badWeight(spec);
  if (weightError !== undefined) return failed(`multi_judge: ${weightError}\n${lines}`, judgeSignals);

  const required = Math.max(1, spec.min_judges_required ?? 1);
  if (valid.length < required) {
    return failed(
      `multi_judge: only ${valid.length} of ${votes.length} judges returned a valid verdict; min_judges_required is ${required}\n${lines}`,
      [...judgeSignals, { category: "min_judges_required", score: 0, message: `${valid.length} of ${required} required judges answered` }],
    );
  }

  let m: ModeResult;
  switch (mode) {
    case "weighted_average":
      m = weightedAverage(spec, valid);
      break;
    case "majority":
      m = majority(valid, t);
      break;
    case "unanimous":
      m = unanimous(valid, t);
      break;
    case "best_of_n":
      m = bestOfN(valid, t);
      break;
    default:
      return failed(
        `multi_judge: unknown consensus "${String(mode)}" (expected weighted_average, majority, unanimous or best_of_n)\n${lines}`,
        judgeSignals,
      );
  }

  const agreement = agreementOf(m.contributing.map((v) => v.result.score));
  const signals: Signal[] = [
    ...judgeSignals,
    { category: "agreement", score: agreement, message: `1 - (max score - min score) over ${m.contributing.length} judge(s)` },
  ];
  const header = `multi_judge ${m.summary}: score ${fmt(m.score)}, confidence ${fmt(m.confidence)}, agreement ${fmt(agreement)} (${valid.length} of ${votes.length} judges answered)`;
  const outcome = applyThresholds({ score: m.score, confidence: m.confidence, reasoning: `${header}\n${lines}`, signals }, t);

  const notes: string[] = [];
  if (m.failure !== undefined) notes.push(m.failure);
  const minAgreement = spec.min_agreement_confidence;
  if (minAgreement !== undefined && agreement < minAgreement) {
    notes.push(`agreement ${fmt(agreement)} is below min_agreement_confidence ${fmt(minAgreement)}`);
  }
  if (notes.length === 0) return outcome;
  return { ...outcome, passed: false, reasoning: `${notes.join("; ")}. ${outcome.reasoning}` };
}
