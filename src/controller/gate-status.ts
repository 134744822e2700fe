// What the Kubernetes driver asks of a tool-call gate, as a port: once per reconcile the gate
// hands the reconciler plain data (Guarding), from which the run holds its start and sets its
// Guarded condition (execution-status.ts), so a reconcile runs no gate code unless a tool call
// is involved (gate-guarding.ts is the gate's side).
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";

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
