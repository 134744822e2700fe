// The Kubernetes driver's memory is the Execution's status: this rebuilds the engine's state
// from it (plus the stored worker result and the child Executions) on every reconcile, and
// maps judge outcomes to and from child Execution statuses. Pure, so restart is unit-tested.
import type { Agent, ChildRef, Execution, ExecutionStatus, IterationRecord, JudgeRejectionReason } from "../api/types.js";
import { judgeTimeoutSeconds } from "../engine/durations.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import {
  initialState,
  isTerminal,
  observeJudge,
  observeWorker,
  validatorsOf,
  type EngineState,
  type JudgeChildRequest,
  type WorkerObservation,
} from "../engine/outer-loop.js";

/** What rebuildState found: the state, and children the status names whose objects are missing. */
export interface RebuiltState {
  state: EngineState;
  /** Running ChildRefs of the current validator with no child Execution object: create them again. */
  missingChildren: ChildRef[];
}

/** The current (last) iteration record of a status, if any. */
export function currentRecord(status: ExecutionStatus | undefined): IterationRecord | undefined {
  const its = status?.iterations;
  return its === undefined || its.length === 0 ? undefined : its[its.length - 1];
}

/**
 * The engine state an Execution is in, from what the API holds: its status (deep-copied),
 * the stored result of the current iteration's worker (if it ended) and its judge children
 * by name. Deciding on the result is the same as deciding on the state the previous
 * reconcile (or the previous controller process) had, so nothing is started twice.
 */
export function rebuildState(
  execution: Execution,
  worker: WorkerObservation | undefined,
  children: ReadonlyMap<string, Execution>,
): RebuiltState {
  const state = initialState();
  const status = execution.status;
  if (status?.startTime === undefined) return { state, missingChildren: [] };
  state.status = structuredClone(status);
  state.status.iterations ??= [];
  const refs = (state.status.children ??= []);
  state.startedAtMs = Date.parse(status.startTime);
  const record = currentRecord(state.status);
  if (record === undefined) return { state, missingChildren: [] };
  if (record.startTime !== undefined) state.iterationStartedAtMs = Date.parse(record.startTime);
  if (worker !== undefined) observeWorker(state, worker);
  const missingChildren: ChildRef[] = [];
  if (record.phase !== "Validating") return { state, missingChildren };
  // The validator that was waiting: its children were already spawned (and recorded).
  const k = (record.validators ?? []).length;
  const mine = refs.filter((c) => c.iteration === record.number && c.validatorIndex === k && c.purpose === "validation");
  if (mine.length > 0) {
    state.requested.add(`v${k}:started`);
    state.requested.add(`v${k}:spawned`);
  }
  for (const ref of mine) {
    const child = children.get(ref.name);
    const outcome = child === undefined ? undefined : outcomeOfChild(child);
    if (outcome !== undefined) {
      observeJudge(state, ref.name, outcome);
    } else if (child === undefined && ref.phase !== undefined && ref.phase !== "Running") {
      // Decided without an object (an unknown judge): the engine recorded why in the ref only.
      observeJudge(state, ref.name, { ok: false, rejection: rejectionOfPhase(ref.phase), detail: `judge agent "${ref.judge}" is not known` });
    } else if (child === undefined) {
      missingChildren.push(ref);
    }
  }
  return { state, missingChildren };
}

function rejectionOfPhase(phase: string): JudgeRejectionReason {
  return phase === "TimedOut" ? "timed_out" : phase === "Cancelled" ? "cancelled" : "failed";
}

/** A finished judge child's outcome (verdict or rejection); undefined while it runs. */
export function outcomeOfChild(child: Execution): JudgeOutcome | undefined {
  const st = child.status;
  if (st === undefined || !isTerminal(st.phase)) return undefined;
  if (st.phase === "Succeeded" && st.verdict !== undefined) return { ok: true, result: st.verdict };
  return {
    ok: false,
    rejection: st.rejection ?? rejectionOfPhase(st.phase ?? "Failed"),
    detail: st.message ?? `the judge child ended ${st.phase ?? "without a phase"}`,
  };
}

/** The terminal status a judge child gets for an outcome (verdict and score, or rejection and why). */
export function judgeStatus(current: ExecutionStatus | undefined, outcome: JudgeOutcome, now: Date): ExecutionStatus {
  const base: ExecutionStatus = { ...current, completionTime: now.toISOString() };
  if (base.startTime === undefined) base.startTime = base.completionTime;
  if (outcome.ok) {
    return { ...base, phase: "Succeeded", verdict: outcome.result, score: outcome.result.score, message: "verdict parsed from the judge's output" };
  }
  const phase = outcome.rejection === "timed_out" ? "TimedOut" : outcome.rejection === "cancelled" ? "Cancelled" : "Failed";
  return { ...base, phase, rejection: outcome.rejection, message: outcome.detail };
}

/**
 * The spawn request of a ChildRef whose object must be created again (the controller stopped
 * between recording the child and creating it); undefined when the validator is gone.
 */
export function childRequestOf(execution: Execution, agent: Agent, judges: ReadonlyMap<string, Agent>, ref: ChildRef): JudgeChildRequest | undefined {
  const spec = validatorsOf(agent)[ref.validatorIndex];
  if (spec === undefined || (spec.type !== "semantic" && spec.type !== "multi_judge")) return undefined;
  const judge = judges.get(ref.judge);
  return {
    name: ref.name,
    judge: ref.judge,
    iteration: ref.iteration,
    validatorIndex: ref.validatorIndex,
    validator: spec,
    depth: (execution.spec.parent?.depth ?? 0) + 1,
    timeoutSeconds: judgeTimeoutSeconds(spec, judge),
    network: judge?.spec.security?.network?.mode === "allow" ? "allow" : "none",
  };
}

/** Judge Agent names an Agent's outer-loop validators refer to. */
export function judgeNamesOf(agent: Agent): string[] {
  const names = new Set<string>();
  for (const v of validatorsOf(agent)) {
    if (v.type === "semantic") names.add(v.judge_agent);
    if (v.type === "multi_judge") for (const j of v.judges) names.add(j);
  }
  return [...names];
}

/** True when two statuses hold the same data (a status write would change nothing). */
export function sameStatus(a: ExecutionStatus | undefined, b: ExecutionStatus | undefined): boolean {
  return canonical(a ?? {}) === canonical(b ?? {});
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([x], [y]) => (x < y ? -1 : 1)))
      : value,
  );
}
