// What the outer loop is given (the Agent's part, AgentPlan, apart from the run it drives,
// EngineContext), what drivers observe into its state, and the actions it hands back: the
// engine's ports, shared by the loop (outer-loop.ts), the validation of an iteration
// (iteration-validation.ts) and the rebuild of a state from a status (restore-state.ts).
import type {
  Agent,
  Execution,
  ExecutionPhase,
  ExecutionStatus,
  IterationRecord,
  MultiJudgeValidatorSpec,
  SemanticValidatorSpec,
  ValidatorSpec,
} from "../api/types.js";
import type { aggregateConsensus } from "./consensus.js";
import type { RunLimits } from "./durations.js";
import type { JudgeOutcome } from "./gradient.js";
import type { FileContent } from "./validators/outcome.js";

/** The run the engine drives: its Execution (its name, its parent's depth, the status it resumes from). */
export interface EngineContext {
  execution: Execution;
}

/**
 * What the engine takes from the Execution's Agent, worked out once per run by the driver
 * (agentPlan) and handed to the engine beside the run, not inside it: the Agent's validators,
 * its judges, its deadlines and iteration budget.
 */
export interface AgentPlan {
  /** The Agent's name (the execution.started event names it). */
  agent: string;
  /** Its outer-loop validators, in declared order (validatorsOf). */
  validators: readonly ValidatorSpec[];
  /** Judge Agents by name. */
  judges: ReadonlyMap<string, Agent>;
  /** Its deadlines and iteration budget, parsed once by the driver (runLimits in durations.ts). */
  limits: RunLimits;
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

/** Asks the Execution to stop; the next `decide` cancels it. */
export function requestCancel(state: EngineState): void {
  state.cancelRequested = true;
}

/** Key under which a requested file's content is observed. */
export function fileKey(from: FileRequest["from"], path: string): string {
  return `${from}:${path}`;
}

/** An `event` action: one entry of the Execution's event stream. */
export function event(type: string, data: Record<string, unknown>): EngineAction {
  return { type: "event", event: type, data };
}

/** The record of the iteration under way (the status has at least one once started). */
export function currentIteration(status: ExecutionStatus): IterationRecord {
  const iterations = status.iterations as IterationRecord[];
  return iterations[iterations.length - 1] as IterationRecord;
}
