// What the Kubernetes driver reads from an Execution beyond the engine's own rebuild
// (restoreState in src/engine/outer-loop.ts): the judge Agents it needs.
import { withDefaults } from "../api/defaults.js";
import type { Agent } from "../api/types.js";
import { validatorsOf } from "../engine/outer-loop.js";
import type { GavelResources } from "./gavel-resources.js";

/**
 * Judge Agent names an Agent refers to: its outer-loop validators' and its tool_validation
 * entries' (whose warm pools a run keeps), as local mode's judges map holds them.
 */
export function judgeNamesOf(agent: Agent): string[] {
  const names = new Set<string>();
  for (const v of validatorsOf(agent)) {
    if (v.type === "semantic") names.add(v.judge_agent);
    if (v.type === "multi_judge") for (const j of v.judges) names.add(j);
  }
  for (const e of agent.spec.execution?.tool_validation ?? []) names.add(e.judge_agent);
  return [...names];
}

/** The judge Agents of `namespace` an Agent names (those that exist), with defaults: the run and its warm pools read them alike. */
export async function judgeAgents(resources: Pick<GavelResources, "agent">, namespace: string, agent: Agent): Promise<Map<string, Agent>> {
  const judges = new Map<string, Agent>();
  for (const j of judgeNamesOf(agent)) {
    const a = await resources.agent(namespace, j);
    if (a !== undefined) judges.set(j, withDefaults(a));
  }
  return judges;
}
