// The outer loop of one Execution as a state machine without I/O: from the Execution, what it
// takes from its Agent (its validators, judges and limits: AgentPlan) and what a driver observed (worker exit, files read, judge outcomes,
// the clock, a cancel request) it decides what happens next and records it in the status.
// Drivers (local mode on Docker, the Kubernetes controller) perform the actions it returns.
// Its ports are in engine-state.ts, an iteration's validators in iteration-validation.ts, the
// rebuild from a status in restore-state.ts; drivers import all of it from here. A worker's end
// that skips its validators (deadline, stop, unreachable gate) is decided here too (unvalidatedEnd).
import type { ExecutionPhase, IterationRecord } from "../api/types.js";
import { describeGateUnreachable, gateUnreachableOf } from "../api/gate-unreachable.js";
import { workerName } from "./child-names.js";
import {
  currentIteration,
  event,
  type AgentPlan,
  type EngineAction,
  type EngineContext,
  type EngineState,
  type WorkerObservation,
} from "./engine-state.js";
import { feedbackFrom, feedbackFromWorker } from "./feedback.js";
import { validateIteration, type IterationEnd } from "./iteration-validation.js";
import { isTerminal } from "./phases.js";

export { isTerminal } from "./phases.js";
export {
  fileKey,
  initialState,
  observeFile,
  observeJudge,
  observeWorker,
  requestCancel,
  type AgentPlan,
  type EngineAction,
  type EngineContext,
  type EngineState,
  type FileRequest,
  type JudgeChildRequest,
  type WorkerObservation,
} from "./engine-state.js";
export { agentPlan, validatorsOf } from "./iteration-validation.js";
export { restoreState, type Observations, type RestoredState } from "./restore-state.js";
export { runLimits, type RunLimits } from "./durations.js";

/** When `decide` next needs to run even if nothing is observed (a deadline), in epoch ms. */
export function nextDeadline(plan: AgentPlan, state: EngineState): number | undefined {
  if (isTerminal(state.status.phase) || state.startedAtMs === undefined) return undefined;
  const overall = plan.limits.executionSeconds;
  const deadlines: number[] = [];
  if (overall !== undefined) deadlines.push(state.startedAtMs + overall * 1000);
  // The runtime kills the worker at its deadline; this later one catches a runtime that did not.
  if (state.worker === undefined && state.iterationStartedAtMs !== undefined) {
    deadlines.push(state.iterationStartedAtMs + (plan.limits.iterationSeconds + WORKER_GRACE_SECONDS) * 1000);
  }
  return deadlines.length === 0 ? undefined : Math.min(...deadlines);
}

// Slack past a worker's deadline before the engine itself declares it timed out.
const WORKER_GRACE_SECONDS = 10;

/**
 * Decides what happens next at time `now` (epoch ms): updates `state.status` and returns
 * the actions to perform. Calling it again with no new observation returns no action.
 */
export function decide(plan: AgentPlan, ctx: EngineContext, state: EngineState, now: number): EngineAction[] {
  const actions: EngineAction[] = [];
  const status = state.status;
  if (isTerminal(status.phase)) return actions;
  if (state.startedAtMs === undefined) {
    state.startedAtMs = now;
    status.startTime = iso(now);
    status.iterations = [];
    status.children = [];
    actions.push(event("execution.started", { agent: plan.agent }));
    if (state.cancelRequested) return finish(state, now, actions, "Cancelled", "cancelled before it started");
    startIteration(plan, ctx, state, now, 1, undefined, actions);
    return actions;
  }
  if (state.cancelRequested) {
    stopRunning(ctx, state, now, actions, "cancelled");
    return finish(state, now, actions, "Cancelled", "cancelled");
  }
  const overall = plan.limits.executionSeconds;
  if (overall !== undefined && now >= state.startedAtMs + overall * 1000) {
    stopRunning(ctx, state, now, actions, "timed_out");
    return finish(state, now, actions, "TimedOut", `the execution ran past its deadline of ${overall}s`);
  }
  const record = currentIteration(status);
  if (record.phase === "Running") {
    if (state.worker === undefined) {
      const limit = plan.limits.iterationSeconds;
      if (state.iterationStartedAtMs !== undefined && now >= state.iterationStartedAtMs + (limit + WORKER_GRACE_SECONDS) * 1000) {
        actions.push({ type: "stop", names: [workerName(ctx.execution.metadata.name, record.number)], reason: "timed_out" });
        state.worker = { iteration: record.number, exitCode: -1, stdout: "", stderr: "", timedOut: true, cancelled: false };
      } else {
        return actions;
      }
    }
    const w = state.worker;
    record.exitCode = w.exitCode;
    const unvalidated = unvalidatedEnd(w, plan.limits.iterationSeconds);
    actions.push(
      event("worker.finished", {
        iteration: record.number,
        exitCode: w.exitCode,
        timedOut: w.timedOut,
        ...(w.streamsMerged !== undefined ? { streamsMerged: w.streamsMerged } : {}),
        ...unvalidated?.data,
      }),
    );
    if (unvalidated !== undefined) {
      record.validators = [];
      endIteration(plan, ctx, state, now, actions, { failed: undefined, reason: unvalidated.reason, score: 0 });
      return actions;
    }
    record.phase = "Validating";
    record.validators = [];
  }
  const end = validateIteration(plan, ctx, state, actions);
  if (end !== undefined) endIteration(plan, ctx, state, now, actions, end);
  return actions;
}

// Many records are stamped within the same millisecond; formatting a date is not free.
let lastIsoMs = Number.NaN;
let lastIso = "";
function iso(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIsoMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

function startIteration(
  plan: AgentPlan,
  ctx: EngineContext,
  state: EngineState,
  now: number,
  n: number,
  feedback: string | undefined,
  actions: EngineAction[],
): void {
  const status = state.status;
  const record: IterationRecord = { number: n, phase: "Running", startTime: iso(now) };
  if (feedback !== undefined) record.feedback = feedback;
  (status.iterations as IterationRecord[]).push(record);
  status.iteration = n;
  const phase: ExecutionPhase = n === 1 ? "Running" : "Refining";
  if (status.phase !== phase) {
    status.phase = phase;
    actions.push(event("execution.phase", { phase }));
  }
  state.iterationStartedAtMs = now;
  state.worker = undefined;
  state.files.clear();
  state.requested.clear();
  actions.push(event("iteration.started", { iteration: n, ...(feedback !== undefined ? { feedback } : {}) }));
  actions.push({
    type: "start_worker",
    name: workerName(ctx.execution.metadata.name, n),
    iteration: n,
    ...(feedback !== undefined ? { feedback } : {}),
    timeoutSeconds: plan.limits.iterationSeconds,
  });
}

function endIteration(
  plan: AgentPlan,
  ctx: EngineContext,
  state: EngineState,
  now: number,
  actions: EngineAction[],
  end: IterationEnd,
): void {
  const status = state.status;
  const record = currentIteration(status);
  record.completionTime = iso(now);
  status.score = end.score;
  if (end.reason === undefined) {
    record.phase = "Passed";
    actions.push(event("iteration.finished", { iteration: record.number, outcome: "passed", score: end.score }));
    finish(state, now, actions, "Succeeded", `iteration ${record.number} passed every validator`);
    return;
  }
  const feedback = end.failed !== undefined ? feedbackFrom(record.number, end.failed) : feedbackFromWorker(record.number, end.reason);
  const max = plan.limits.maxIterations;
  if (record.number < max) {
    record.phase = "Refining";
    actions.push(event("iteration.finished", { iteration: record.number, outcome: "refining", score: end.score }));
    startIteration(plan, ctx, state, now, record.number + 1, feedback, actions);
    return;
  }
  record.phase = "Failed";
  actions.push(event("iteration.finished", { iteration: record.number, outcome: "failed", score: end.score }));
  const what = end.failed !== undefined ? `validator ${end.failed.index} (${end.failed.type}) failed: ${end.failed.reasoning}` : end.reason;
  finish(state, now, actions, "Failed", `no iteration passed within max_iterations ${max}; last ${what}`);
}

/** Stops the current worker (if running) and every running judge child. */
function stopRunning(
  ctx: EngineContext,
  state: EngineState,
  now: number,
  actions: EngineAction[],
  reason: "cancelled" | "timed_out",
): void {
  const status = state.status;
  const names: string[] = [];
  const record = status.iterations !== undefined && status.iterations.length > 0 ? currentIteration(status) : undefined;
  if (record !== undefined && record.phase === "Running" && state.worker === undefined) {
    names.push(workerName(ctx.execution.metadata.name, record.number));
  }
  for (const c of status.children ?? []) {
    if (c.phase === "Running") {
      names.push(c.name);
      c.phase = reason === "cancelled" ? "Cancelled" : "TimedOut";
    }
  }
  if (names.length > 0) actions.push({ type: "stop", names, reason });
  if (record !== undefined && (record.phase === "Running" || record.phase === "Validating")) {
    record.phase = "Failed";
    record.completionTime = iso(now);
    actions.push(event("iteration.finished", { iteration: record.number, outcome: "failed", reason }));
  }
}

function finish(state: EngineState, now: number, actions: EngineAction[], phase: ExecutionPhase, message: string): EngineAction[] {
  const status = state.status;
  status.phase = phase;
  status.message = message;
  status.completionTime = iso(now);
  const data: Record<string, unknown> = { phase, message };
  if (status.score !== undefined) data.score = status.score;
  actions.push(event("execution.phase", data));
  actions.push({ type: "finish", phase, ...(status.score !== undefined ? { score: status.score } : {}), message });
  return actions;
}

/** An iteration that ends without validation: the reason (its feedback) and what the worker.finished event adds. */
interface UnvalidatedEnd {
  reason: string;
  data: Record<string, unknown>;
}

/**
 * Why the worker's run ends its iteration without its validators, or undefined when they judge
 * it: killed at its deadline, stopped, or it gave up waiting for an unreachable tool-call gate
 * (exit 75 with its line, src/api/gate-unreachable.ts), which is not a failure of the agent's
 * code either.
 */
function unvalidatedEnd(w: WorkerObservation, iterationTimeoutSeconds: number): UnvalidatedEnd | undefined {
  if (w.timedOut) return { reason: `the worker ran past its iteration deadline of ${iterationTimeoutSeconds}s and was killed`, data: {} };
  if (w.cancelled) return { reason: "the worker was stopped before it finished", data: {} };
  // Where a driver merged the streams, the worker's stderr line is in stdout.
  const unreachable = gateUnreachableOf(w.exitCode, w.stderr, w.streamsMerged !== undefined ? w.stdout : "");
  if (unreachable === undefined) return undefined;
  const reason = describeGateUnreachable(unreachable);
  return { reason, data: { gateUnreachable: reason } };
}
