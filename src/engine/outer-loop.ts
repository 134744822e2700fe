// The outer loop of one Execution as a state machine without I/O: from the Execution, its
// Agent, the judges and what a driver observed (worker exit, files read, judge outcomes,
// the clock, a cancel request) it decides what happens next and records it in the status.
// Drivers (local mode on Docker, the Kubernetes controller) perform the actions it returns.
import type {
  Agent,
  ChildRef,
  Execution,
  ExecutionPhase,
  ExecutionStatus,
  IterationRecord,
  MultiJudgeValidatorSpec,
  SemanticValidatorSpec,
  ValidatorRecord,
  ValidatorSpec,
} from "../api/types.js";
export { isTerminal } from "./phases.js";
import { aggregateConsensus, type JudgeVote } from "./consensus.js";
import { judgeChildName, MAX_JUDGE_DEPTH, workerName } from "./child-names.js";
import { executionTimeoutSeconds, iterationTimeoutSeconds, judgeTimeoutSeconds, maxIterations } from "./durations.js";
import { feedbackFrom, feedbackFromWorker } from "./feedback.js";
import { outcomeToGradient, type JudgeOutcome } from "./gradient.js";
import { isTerminal, phaseOfOutcome, rejectionOfPhase } from "./phases.js";
import { validateExitCode } from "./validators/exit-code.js";
import { unvalidatedEnd } from "./worker-end.js";
import { validateJsonSchema } from "./validators/json-schema.js";
import { applyThresholds, deterministic, thresholdsOf, type FileContent, type ValidatorOutcome } from "./validators/outcome.js";
import { regexTargetPath, validateRegex } from "./validators/regex.js";

/** What the engine is given once per Execution. */
export interface EngineContext {
  execution: Execution;
  /** The Execution's Agent, defaults applied. */
  agent: Agent;
  /** Judge Agents by name. */
  judges: ReadonlyMap<string, Agent>;
  /** multi_judge consensus; defaults to aggregateConsensus (consensus.ts). */
  aggregate?: typeof aggregateConsensus;
}

/** How the current iteration's worker run ended, as the driver observed it. */
export interface WorkerObservation {
  iteration: number;
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  cancelled: boolean;
  /** Set when the driver could not keep stderr apart from stdout (a Kubernetes pod not run under gavel-launch): why. */
  streamsMerged?: string;
}

/** A file a validator needs: from the worker's workspace volumes, or from the agent's image. */
export interface FileRequest {
  key: string;
  path: string;
  from: "workspace" | "image";
}

/** One judge child to start. */
export interface JudgeChildRequest {
  name: string;
  judge: string;
  iteration: number;
  validatorIndex: number;
  validator: SemanticValidatorSpec | MultiJudgeValidatorSpec;
  depth: number;
  timeoutSeconds: number;
  network: "none" | "allow";
}

/** What a driver must do next. Every action is performed once, in order. */
export type EngineAction =
  | { type: "start_worker"; name: string; iteration: number; feedback?: string; timeoutSeconds: number }
  | { type: "read_files"; iteration: number; validatorIndex: number; files: FileRequest[] }
  | { type: "spawn_judge"; child: JudgeChildRequest }
  | { type: "stop"; names: string[]; reason: "cancelled" | "timed_out" }
  | { type: "event"; event: string; data: Record<string, unknown> }
  | { type: "finish"; phase: ExecutionPhase; score?: number; message: string };

/**
 * The engine's state: the status it writes plus what was observed and not yet folded in.
 * Drivers add observations with the `observe*` functions and then call `decide`.
 */
export interface EngineState {
  status: ExecutionStatus;
  startedAtMs?: number;
  iterationStartedAtMs?: number;
  /** The current iteration's worker result, once it finished. */
  worker?: WorkerObservation;
  /** Files read for the current iteration, by FileRequest key. */
  files: Map<string, FileContent>;
  /** Outcomes of judge children, by child name. */
  judgeResults: Map<string, JudgeOutcome>;
  /** Requests already handed out in this iteration, so none is issued twice. */
  requested: Set<string>;
  cancelRequested: boolean;
}

/** A fresh state for an Execution that has not started. */
export function initialState(): EngineState {
  return { status: { phase: "Pending" }, files: new Map(), judgeResults: new Map(), requested: new Set(), cancelRequested: false };
}

/** Records the end of a worker run; results of other iterations or a second report are ignored. */
export function observeWorker(state: EngineState, w: WorkerObservation): void {
  if (state.worker === undefined && w.iteration === state.status.iteration) state.worker = w;
}

/** Records the content of a file a validator asked for. */
export function observeFile(state: EngineState, key: string, content: FileContent): void {
  state.files.set(key, content);
}

/** Records a judge child's outcome; only the first one counts. */
export function observeJudge(state: EngineState, child: string, outcome: JudgeOutcome): void {
  if (!state.judgeResults.has(child)) state.judgeResults.set(child, outcome);
}

/** What a driver that keeps no state (the controller) observed, to rebuild the engine's state from a status. */
export interface Observations {
  /** The current iteration's worker result, once it ended (the controller keeps it in a ConfigMap). */
  worker?: WorkerObservation;
  /**
   * The judge children of the current iteration that exist, by name: their outcome once
   * they finished, null while they run. A child the status names that is absent here has no object.
   */
  judges: ReadonlyMap<string, JudgeOutcome | null>;
}

/** A rebuilt state, and the judge children the status names whose objects are missing. */
export interface RestoredState {
  state: EngineState;
  /** Spawn requests of running children with no object (the driver stopped between recording and creating them): create them again. */
  respawn: JudgeChildRequest[];
}

/**
 * The engine state an Execution is in, from its status (ctx.execution.status, deep-copied)
 * and what the driver observes now. Deciding on it is the same as deciding on the state the
 * previous reconcile (or the previous process) had, so nothing is started twice.
 */
export function restoreState(ctx: EngineContext, observed: Observations): RestoredState {
  const state = initialState();
  const status = ctx.execution.status;
  if (status?.startTime === undefined) return { state, respawn: [] };
  state.status = structuredClone(status);
  state.status.iterations ??= [];
  const refs = (state.status.children ??= []);
  state.startedAtMs = Date.parse(status.startTime);
  const record = state.status.iterations[state.status.iterations.length - 1];
  if (record === undefined) return { state, respawn: [] };
  if (record.startTime !== undefined) state.iterationStartedAtMs = Date.parse(record.startTime);
  if (observed.worker !== undefined) observeWorker(state, observed.worker);
  const respawn: JudgeChildRequest[] = [];
  if (record.phase !== "Validating") return { state, respawn };
  // The validator that was waiting: the reconcile that wrote this status started it (a status
  // Validating with k validators recorded is only written by a decide that ran validator k
  // and saw it wait), so it is not started again; its children were spawned (and recorded).
  // Its files are asked for again: reading them is level-triggered (a reader pod by name).
  const k = (record.validators ?? []).length;
  const spec = validatorsOf(ctx.agent)[k];
  state.requested.add(`v${k}:started`);
  const mine = refs.filter((c) => c.iteration === record.number && c.validatorIndex === k && c.purpose === "validation");
  if (mine.length > 0) state.requested.add(`v${k}:spawned`);
  for (const ref of mine) {
    const outcome = observed.judges.get(ref.name);
    if (outcome !== undefined && outcome !== null) {
      observeJudge(state, ref.name, outcome);
    } else if (outcome === undefined && ref.phase !== undefined && ref.phase !== "Running") {
      // Decided without an object (an unknown judge): the engine recorded why in the ref only.
      observeJudge(state, ref.name, { ok: false, rejection: rejectionOfPhase(ref.phase), detail: `judge agent "${ref.judge}" is not known` });
    } else if (outcome === undefined && spec !== undefined && (spec.type === "semantic" || spec.type === "multi_judge")) {
      respawn.push(judgeRequest(ctx, ref, spec));
    }
  }
  return { state, respawn };
}

/** Asks the Execution to stop; the next `decide` cancels it. */
export function requestCancel(state: EngineState): void {
  state.cancelRequested = true;
}

/** The outer-loop validators of an agent (the judge form of `execution.validation` has none). */
export function validatorsOf(agent: Agent): ValidatorSpec[] {
  const v = agent.spec.execution?.validation;
  return Array.isArray(v) ? v : [];
}

/** When `decide` next needs to run even if nothing is observed (a deadline), in epoch ms. */
export function nextDeadline(ctx: EngineContext, state: EngineState): number | undefined {
  if (isTerminal(state.status.phase) || state.startedAtMs === undefined) return undefined;
  const overall = executionTimeoutSeconds(ctx.execution, ctx.agent);
  const deadlines: number[] = [];
  if (overall !== undefined) deadlines.push(state.startedAtMs + overall * 1000);
  // The runtime kills the worker at its deadline; this later one catches a runtime that did not.
  if (state.worker === undefined && state.iterationStartedAtMs !== undefined) {
    deadlines.push(state.iterationStartedAtMs + (iterationTimeoutSeconds(ctx.agent) + WORKER_GRACE_SECONDS) * 1000);
  }
  return deadlines.length === 0 ? undefined : Math.min(...deadlines);
}

// Slack past a worker's deadline before the engine itself declares it timed out.
const WORKER_GRACE_SECONDS = 10;

/**
 * Decides what happens next at time `now` (epoch ms): updates `state.status` and returns
 * the actions to perform. Calling it again with no new observation returns no action.
 */
export function decide(ctx: EngineContext, state: EngineState, now: number): EngineAction[] {
  const actions: EngineAction[] = [];
  const status = state.status;
  if (isTerminal(status.phase)) return actions;
  if (state.startedAtMs === undefined) {
    state.startedAtMs = now;
    status.startTime = iso(now);
    status.iterations = [];
    status.children = [];
    actions.push(event("execution.started", { agent: ctx.agent.metadata.name }));
    if (state.cancelRequested) return finish(ctx, state, now, actions, "Cancelled", "cancelled before it started");
    startIteration(ctx, state, now, 1, undefined, actions);
    return actions;
  }
  if (state.cancelRequested) {
    stopRunning(ctx, state, now, actions, "cancelled");
    return finish(ctx, state, now, actions, "Cancelled", "cancelled");
  }
  const overall = executionTimeoutSeconds(ctx.execution, ctx.agent);
  if (overall !== undefined && now >= state.startedAtMs + overall * 1000) {
    stopRunning(ctx, state, now, actions, "timed_out");
    return finish(ctx, state, now, actions, "TimedOut", `the execution ran past its deadline of ${overall}s`);
  }
  const record = currentIteration(status);
  if (record.phase === "Running") {
    if (state.worker === undefined) {
      const limit = iterationTimeoutSeconds(ctx.agent);
      if (state.iterationStartedAtMs !== undefined && now >= state.iterationStartedAtMs + (limit + WORKER_GRACE_SECONDS) * 1000) {
        actions.push({ type: "stop", names: [workerName(ctx.execution.metadata.name, record.number)], reason: "timed_out" });
        state.worker = { iteration: record.number, exitCode: -1, stdout: "", stderr: "", timedOut: true, cancelled: false };
      } else {
        return actions;
      }
    }
    const w = state.worker;
    record.exitCode = w.exitCode;
    const unvalidated = unvalidatedEnd(w, iterationTimeoutSeconds(ctx.agent));
    actions.push(event("worker.finished", { iteration: record.number, exitCode: w.exitCode, timedOut: w.timedOut, ...(w.streamsMerged !== undefined ? { streamsMerged: w.streamsMerged } : {}), ...unvalidated?.data }));
    if (unvalidated !== undefined) {
      record.validators = [];
      endIteration(ctx, state, now, actions, { failed: undefined, reason: unvalidated.reason, score: 0 });
      return actions;
    }
    record.phase = "Validating";
    record.validators = [];
  }
  validate(ctx, state, now, actions);
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

function event(type: string, data: Record<string, unknown>): EngineAction {
  return { type: "event", event: type, data };
}

function currentIteration(status: ExecutionStatus): IterationRecord {
  const iterations = status.iterations as IterationRecord[];
  return iterations[iterations.length - 1] as IterationRecord;
}

function startIteration(ctx: EngineContext, state: EngineState, now: number, n: number, feedback: string | undefined, actions: EngineAction[]): void {
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
    timeoutSeconds: iterationTimeoutSeconds(ctx.agent),
  });
}

/** Runs validators from the first unrecorded one until one must wait, one fails, or all pass. */
function validate(ctx: EngineContext, state: EngineState, now: number, actions: EngineAction[]): void {
  const record = currentIteration(state.status);
  const specs = validatorsOf(ctx.agent);
  const done = record.validators as ValidatorRecord[];
  while (done.length < specs.length) {
    const k = done.length;
    const spec = specs[k] as ValidatorSpec;
    const outcome = runValidator(ctx, state, record.number, k, spec, actions);
    if (outcome === undefined) return; // waiting on files or judges
    const rec: ValidatorRecord = {
      index: k,
      type: spec.type,
      passed: outcome.passed,
      score: outcome.score,
      confidence: outcome.confidence,
      reasoning: outcome.reasoning,
    };
    if (outcome.signals.length > 0) rec.signals = outcome.signals;
    const children = childrenOf(state.status, record.number, k);
    if (children.length > 0) rec.children = children.map((c) => c.name);
    done.push(rec);
    actions.push(
      event("validator.result", {
        iteration: record.number,
        index: k,
        type: spec.type,
        passed: rec.passed,
        score: rec.score,
        confidence: rec.confidence,
        reasoning: rec.reasoning,
      }),
    );
    if (!rec.passed) {
      endIteration(ctx, state, now, actions, { failed: rec, reason: rec.reasoning, score: lowest(done) });
      return;
    }
  }
  endIteration(ctx, state, now, actions, { failed: undefined, reason: undefined, score: done.length === 0 ? 1 : lowest(done) });
}

function lowest(records: ValidatorRecord[]): number {
  let min = 1;
  for (const r of records) if (r.score < min) min = r.score;
  return min;
}

function childrenOf(status: ExecutionStatus, iteration: number, k: number): ChildRef[] {
  return (status.children ?? []).filter((c) => c.iteration === iteration && c.validatorIndex === k && c.purpose === "validation");
}

/** One validator's outcome, or undefined when it waits for files or judges (requests issued). */
function runValidator(
  ctx: EngineContext,
  state: EngineState,
  iteration: number,
  k: number,
  spec: ValidatorSpec,
  actions: EngineAction[],
): ValidatorOutcome | undefined {
  const w = state.worker as WorkerObservation;
  const startKey = `v${k}:started`;
  if (!state.requested.has(startKey)) {
    state.requested.add(startKey);
    actions.push(event("validator.started", { iteration, index: k, type: spec.type }));
  }
  switch (spec.type) {
    case "exit_code":
      return validateExitCode(spec, w.exitCode, w.stderr);
    case "regex": {
      const path = regexTargetPath(spec);
      if (path === undefined) return validateRegex(spec, { ok: true, content: w.stdout }, w.streamsMerged);
      const files = need(state, iteration, k, [{ key: fileKey("workspace", path), path, from: "workspace" }], actions);
      return files === undefined ? undefined : validateRegex(spec, files[0] as FileContent);
    }
    case "json_schema": {
      const reqs: FileRequest[] = [{ key: fileKey("workspace", spec.target_path), path: spec.target_path, from: "workspace" }];
      if (spec.schema === undefined && spec.schema_path !== undefined) {
        reqs.push({ key: fileKey("image", spec.schema_path), path: spec.schema_path, from: "image" });
      }
      const files = need(state, iteration, k, reqs, actions);
      if (files === undefined) return undefined;
      return validateJsonSchema(spec, files[0] as FileContent, files[1]);
    }
    case "semantic":
      return judged(ctx, state, iteration, k, spec, [spec.judge_agent], actions);
    case "multi_judge":
      return judged(ctx, state, iteration, k, spec, spec.judges, actions);
  }
}

/** Key under which a requested file's content is observed. */
export function fileKey(from: FileRequest["from"], path: string): string {
  return `${from}:${path}`;
}

function need(state: EngineState, iteration: number, k: number, reqs: FileRequest[], actions: EngineAction[]): FileContent[] | undefined {
  const have = reqs.map((r) => state.files.get(r.key));
  if (have.every((f) => f !== undefined)) return have;
  const key = `v${k}:files`;
  if (!state.requested.has(key)) {
    state.requested.add(key);
    actions.push({ type: "read_files", iteration, validatorIndex: k, files: reqs.filter((r) => !state.files.has(r.key)) });
  }
  return undefined;
}

/** A semantic or multi_judge validator: spawns its children once, then folds their outcomes. */
function judged(
  ctx: EngineContext,
  state: EngineState,
  iteration: number,
  k: number,
  spec: SemanticValidatorSpec | MultiJudgeValidatorSpec,
  judgeNames: string[],
  actions: EngineAction[],
): ValidatorOutcome | undefined {
  const exec = ctx.execution.metadata.name;
  const depth = (ctx.execution.spec.parent?.depth ?? 0) + 1;
  if (depth > MAX_JUDGE_DEPTH) {
    return deterministic(false, `judges of judges are limited to a depth of ${MAX_JUDGE_DEPTH}; this judge would be at depth ${depth}`);
  }
  if (judgeNames.length === 0) return deterministic(false, `${spec.type} validator names no judge`);
  const children = state.status.children as ChildRef[];
  const spawnKey = `v${k}:spawned`;
  if (!state.requested.has(spawnKey)) {
    state.requested.add(spawnKey);
    for (const judge of judgeNames) {
      const name = judgeChildName(exec, iteration, k, judge);
      const agent = ctx.judges.get(judge);
      const ref: ChildRef = { name, purpose: "validation", iteration, validatorIndex: k, judge, phase: "Running" };
      children.push(ref);
      if (agent === undefined) {
        // An unknown judge is a failed judge: it counts against min_judges_required.
        ref.phase = "Failed";
        state.judgeResults.set(name, { ok: false, rejection: "failed", detail: `judge agent "${judge}" is not known` });
        actions.push(event("judge.spawned", { child: name, judge, iteration, index: k, purpose: "validation" }));
        actions.push(event("judge.finished", { child: name, judge, rejection: "failed" }));
        continue;
      }
      actions.push(event("judge.spawned", { child: name, judge, iteration, index: k, purpose: "validation" }));
      actions.push({ type: "spawn_judge", child: judgeRequest(ctx, ref, spec) });
    }
  }
  const mine = childrenOf(state.status, iteration, k);
  let pending = false;
  for (const c of mine) {
    const outcome = state.judgeResults.get(c.name);
    if (outcome === undefined) {
      pending = true;
      continue;
    }
    if (c.phase === "Running") {
      c.phase = phaseOfOutcome(outcome);
      actions.push(
        event("judge.finished", {
          child: c.name,
          judge: c.judge,
          ...(outcome.ok ? { score: outcome.result.score, confidence: outcome.result.confidence } : { rejection: outcome.rejection }),
        }),
      );
    }
  }
  if (pending) return undefined;
  if (spec.type === "semantic") {
    const outcome = state.judgeResults.get((mine[0] as ChildRef).name) as JudgeOutcome;
    const result = applyThresholds(outcomeToGradient(outcome), thresholdsOf(spec));
    // No verdict is a failing score whatever the thresholds (the reference: "treated as failing").
    return outcome.ok ? result : { ...result, passed: false };
  }
  const votes: JudgeVote[] = mine.map((c) => {
    const o = state.judgeResults.get(c.name) as JudgeOutcome;
    return o.ok ? { judge: c.judge, result: o.result } : { judge: c.judge, rejection: o.rejection };
  });
  return (ctx.aggregate ?? aggregateConsensus)(spec, votes, 1.0);
}

/** The spawn request of a judge child the status names (the engine's own, and a restored one). */
function judgeRequest(ctx: EngineContext, ref: ChildRef, spec: SemanticValidatorSpec | MultiJudgeValidatorSpec): JudgeChildRequest {
  const agent = ctx.judges.get(ref.judge);
  return {
    name: ref.name,
    judge: ref.judge,
    iteration: ref.iteration,
    validatorIndex: ref.validatorIndex,
    validator: spec,
    depth: (ctx.execution.spec.parent?.depth ?? 0) + 1,
    timeoutSeconds: judgeTimeoutSeconds(spec, agent),
    network: agent?.spec.security?.network?.mode === "allow" ? "allow" : "none",
  };
}

interface IterationEnd {
  failed: ValidatorRecord | undefined;
  /** Why the iteration failed; undefined when it passed. */
  reason: string | undefined;
  score: number;
}

function endIteration(ctx: EngineContext, state: EngineState, now: number, actions: EngineAction[], end: IterationEnd): void {
  const status = state.status;
  const record = currentIteration(status);
  record.completionTime = iso(now);
  status.score = end.score;
  if (end.reason === undefined) {
    record.phase = "Passed";
    actions.push(event("iteration.finished", { iteration: record.number, outcome: "passed", score: end.score }));
    finish(ctx, state, now, actions, "Succeeded", `iteration ${record.number} passed every validator`);
    return;
  }
  const feedback = end.failed !== undefined ? feedbackFrom(record.number, end.failed) : feedbackFromWorker(record.number, end.reason);
  const max = maxIterations(ctx.agent);
  if (record.number < max) {
    record.phase = "Refining";
    actions.push(event("iteration.finished", { iteration: record.number, outcome: "refining", score: end.score }));
    startIteration(ctx, state, now, record.number + 1, feedback, actions);
    return;
  }
  record.phase = "Failed";
  actions.push(event("iteration.finished", { iteration: record.number, outcome: "failed", score: end.score }));
  const what = end.failed !== undefined ? `validator ${end.failed.index} (${end.failed.type}) failed: ${end.failed.reasoning}` : end.reason;
  finish(ctx, state, now, actions, "Failed", `no iteration passed within max_iterations ${max}; last ${what}`);
}

/** Stops the current worker (if running) and every running judge child. */
function stopRunning(ctx: EngineContext, state: EngineState, now: number, actions: EngineAction[], reason: "cancelled" | "timed_out"): void {
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

function finish(
  _ctx: EngineContext,
  state: EngineState,
  now: number,
  actions: EngineAction[],
  phase: ExecutionPhase,
  message: string,
): EngineAction[] {
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
