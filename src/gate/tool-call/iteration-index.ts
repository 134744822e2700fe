// What the tool-call store knows of one iteration: its decided calls in step order (the
// guard's sequence contracts and policy_violations read them) and its counts by outcome
// (the Execution's status shows them).
import type { BlockedBy } from "../../api/protocol.js";
import { runPrefix, type DecisionRecord, type RunRef } from "./records.js";

/** One iteration's calls in an execution's summary (ToolCallStore.summaryOf). */
export interface IterationTally {
  proposed: number;
  allowed: number;
  blockedByGuard: number;
  blockedByJudge: number;
  /** Calls a person denied or whose approval timed out. */
  blockedByApproval: number;
  /** The last decided calls, ascending by step. */
  recent: readonly DecisionRecord[];
}

/** An earlier call of the same iteration, as later guard checks need it. */
export interface PriorCall {
  step: number;
  tool: string;
  allowed: boolean;
  blocked_by: BlockedBy;
}

/** One iteration's decided calls as a guard reads them. */
export interface IterationView {
  /** Decided calls with fromStep <= step < beforeStep, in step order. */
  calls(fromStep: number, beforeStep: number): PriorCall[];
  /** Tools the guard blocked in this iteration, first seen first. */
  readonly violations: readonly string[];
  /** True when every step before `beforeStep` has a decided call here. */
  hasSteps(beforeStep: number): boolean;
}

/** A decided call in an iteration's index, with the subject of its record. */
export interface IndexedCall extends PriorCall {
  subject: string;
}

// The decided calls of one iteration, kept sorted by step as they arrive (nearly always in
// order), and their counts by outcome.
export class IterationIndex {
  readonly subjects = new Set<string>();
  readonly calls: IndexedCall[] = [];
  readonly steps = new Set<number>();
  readonly violations: string[] = [];
  allowed = 0;
  blockedByGuard = 0;
  blockedByJudge = 0;
  blockedByApproval = 0;

  /** Called once per call, when its first decision is mirrored. */
  add(subject: string, r: DecisionRecord): void {
    const call: IndexedCall = { step: r.step, tool: r.tool, allowed: r.decision.allowed, blocked_by: r.decision.blocked_by, subject };
    this.calls.splice(firstAtLeast(this.calls, r.step + 1), 0, call);
    this.steps.add(r.step);
    if (call.allowed) this.allowed++;
    else if (call.blocked_by === "judge") this.blockedByJudge++;
    else if (call.blocked_by === "approval") this.blockedByApproval++;
    else this.blockedByGuard++;
    if (call.blocked_by === "guard" && !this.violations.includes(call.tool)) this.violations.push(call.tool);
  }
}

// Index of the first call whose step is >= `step` (binary search over a step-sorted list).
export function firstAtLeast(calls: readonly PriorCall[], step: number): number {
  let lo = 0;
  let hi = calls.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((calls[mid] as PriorCall).step < step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The key of one iteration of one run in the store's index. */
export function iterationKey(ref: RunRef, iteration: number): string {
  return `${runPrefix(ref)}.#${iteration}`;
}
