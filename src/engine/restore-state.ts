// The engine state an Execution is in, rebuilt from its status and what a driver that keeps no
// state (the controller) observes now, so that deciding on it starts nothing twice.
import { judgeRequest } from "./iteration-validation.js";
import {
  initialState,
  observeJudge,
  observeWorker,
  type AgentPlan,
  type EngineContext,
  type EngineState,
  type JudgeChildRequest,
  type WorkerObservation,
} from "./engine-state.js";
import type { JudgeOutcome } from "./gradient.js";
import { rejectionOfPhase } from "./phases.js";

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
export function restoreState(plan: AgentPlan, ctx: EngineContext, observed: Observations): RestoredState {
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
  const spec = plan.validators[k];
  state.requested.add(`v${k}:started`);
  const mine = refs.filter((c) => c.iteration === record.number && c.validatorIndex === k && c.purpose === "validation");
  if (mine.length > 0) state.requested.add(`v${k}:spawned`);
  for (const ref of mine) {
    const outcome = observed.judges.get(ref.name);
    if (outcome !== undefined && outcome !== null) {
      observeJudge(state, ref.name, outcome);
    } else if (outcome === undefined && ref.phase !== undefined && ref.phase !== "Running") {
      // Decided without an object (an unknown judge): the engine recorded why in the ref only.
      observeJudge(state, ref.name, {
        ok: false,
        rejection: rejectionOfPhase(ref.phase),
        detail: `judge agent "${ref.judge}" is not known`,
      });
    } else if (outcome === undefined && spec !== undefined && (spec.type === "semantic" || spec.type === "multi_judge")) {
      respawn.push(judgeRequest(plan, ctx, ref, spec));
    }
  }
  return { state, respawn };
}
