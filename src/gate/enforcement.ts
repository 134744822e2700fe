// Which Executions must never run without a gate: the fail-closed rule both the Execution
// reconciler (it does not start their workers) and the Agent Ready condition apply.
import type { Agent } from "../api/types.js";

/**
 * What an Agent declares that only a gate can enforce, as a sentence for a condition, or
 * undefined when its worker makes no tool call the gate would have to decide.
 */
export function gateRequirement(
  agent: Pick<Agent, "spec"> & { metadata?: Agent["metadata"] },
  policiesInScope: boolean,
): string | undefined {
  // A judge runs one-shot as a child with no NATS access: its own tools are not gated (reference: judges with tools).
  if (agent.metadata?.labels?.role === "judge") return undefined;
  const needs: string[] = [];
  const judges = (agent.spec.execution?.tool_validation ?? []).length;
  if (judges > 0) needs.push(`spec.execution.tool_validation has ${judges} judge entr${judges === 1 ? "y" : "ies"}`);
  const tools = (agent.spec.tools ?? []).length;
  if (tools > 0) needs.push(`spec.tools declares ${tools} tool${tools === 1 ? "" : "s"} whose calls the guard decides`);
  if (policiesInScope) needs.push("GuardPolicies apply in its namespace");
  return needs.length === 0 ? undefined : needs.join("; ");
}
