// The gate's side of the GateStatus port (gate-status.ts): whether an Agent's Executions
// need a tool-call gate (the fail-closed rule of gate/enforcement.ts) and, when they do, why
// this replica's gate cannot decide their calls now, or that no gate runs at all.
import type { Agent } from "../api/types.js";
import { gateRequirement } from "../gate/enforcement.js";
import type { GateStatus, Guarding } from "./gate-status.js";

/** What a running gate says of itself. */
export interface GateHealth {
  /** Why no tool call can be decided now, or undefined when the gate serves. */
  unavailable(): string | undefined;
  /** Whether GuardPolicies apply in a namespace (the cluster default counts). */
  policiesInScope(namespace: string): boolean;
}

/** The Guarding of an Agent's Executions in a namespace, given the gate that runs (undefined: none does). */
export function guardingOf(gate: GateHealth | undefined, agent: Agent, namespace: string): Guarding {
  const needs = gateRequirement(agent, gate?.policiesInScope(namespace) ?? false);
  if (needs === undefined) return { guarded: false };
  const why =
    gate === undefined ? "gavel controller runs without NATS (--nats), so no tool-call gate runs on this cluster" : gate.unavailable();
  return why === undefined ? { guarded: true } : { guarded: true, blocked: `${needs}, but ${why}` };
}

/** The gate of a controller started without NATS: Executions that need one wait, saying why; none has decided calls. */
export const NO_GATE: GateStatus = {
  guarding: (agent, namespace) => guardingOf(undefined, agent, namespace),
  annotate: () => undefined,
};
