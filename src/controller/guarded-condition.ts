// The Guarded condition of an Execution whose Agent needs a tool-call gate: whether one can
// decide its calls now, and while none can, the Execution waits Pending (or times out) and
// says why. What the Kubernetes driver asks of a gate is GateStatus, a port: the gate hands
// the reconciler plain data (Guarding), so a reconcile runs no gate code unless a tool call
// is involved (gate-guarding.ts is the gate's side).
import { setCondition } from "../api/conditions.js";
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";
import type { RunLimits } from "../engine/durations.js";

/** Condition on an Execution that needs a gate: False while none can be reached (it then does not start). */
export const GUARDED = "Guarded";
/** What the gate says of an Agent's Executions in one namespace, as plain data. */
export interface Guarding {
  /** True when the Agent declares what only a gate can enforce: its Executions carry the Guarded condition. */
  guarded: boolean;
  /** Why such an Execution may not start now (what it needs, and why no gate can decide it); undefined when it may. */
  blocked?: string;
}

/** What the Kubernetes driver needs from a gate, whether one runs in this process or not (NO_GATE when none). */
export interface GateStatus {
  /** Whether an Agent's Executions in a namespace need the gate, and why it cannot serve them now. */
  guarding(agent: Agent, namespace: string): Guarding;
  /** Writes the tool calls decided so far into a status about to be written (counts and the last few per iteration). */
  annotate(execution: Execution, status: ExecutionStatus): void;
}

/** Waiting for a gate, the Execution is re-checked this often. */
const GATE_RECHECK_MS = 2000;

/**
 * The status of an Execution that may not start until a gate can decide its tool calls:
 * Pending with the Guarded condition saying why, or TimedOut once its own deadline (from
 * its creation; without one, what max_iterations iterations may take) has passed.
 */
export function waitingForGate(
  ex: Execution,
  limits: RunLimits,
  why: string,
  now: number,
): { status: ExecutionStatus; requeueAfterMs?: number } {
  const created = Date.parse(ex.metadata.creationTimestamp ?? "") || now;
  const limitSeconds = limits.executionSeconds ?? limits.iterationSeconds * limits.maxIterations;
  const deadline = created + limitSeconds * 1000;
  const status: ExecutionStatus = { ...structuredClone(ex.status ?? {}) };
  setGuarded(status, why, new Date(now), ex.metadata.generation);
  if (now >= deadline) {
    const message = `never started within its deadline of ${limitSeconds}s: ${why}`;
    return { status: { ...status, phase: "TimedOut", message, completionTime: new Date(now).toISOString() } };
  }
  return {
    status: { ...status, phase: "Pending", message: `waiting for a tool-call gate: ${why}` },
    requeueAfterMs: Math.min(GATE_RECHECK_MS, deadline - now),
  };
}

/** Sets the Guarded condition: True while a gate decides the Execution's tool calls, False with why not. */
export function setGuarded(status: ExecutionStatus, why: string | undefined, now: Date, generation?: number): void {
  const next =
    why === undefined
      ? ({
          type: GUARDED,
          status: "True",
          reason: "GateServing",
          message: "every tool call is decided by the gate before it runs",
        } as const)
      : ({ type: GUARDED, status: "False", reason: "GateUnavailable", message: why } as const);
  status.conditions = setCondition(status.conditions, next, now, generation);
}
