// The resource names `gavel get` and `gavel describe` accept, with kubectl's aliases (the
// CRDs' plural, singular and short names), mapped to what the API serves.
import { UsageError } from "./command.js";

export type ResourceKind = "Execution" | "Agent" | "GuardPolicy";

export interface Resource {
  kind: ResourceKind;
  plural: string;
  names: string[];
}

// Names are the CRDs' (crds.ts: plural, singular, shortNames); a unit test checks they agree.
export const EXECUTIONS: Resource = { kind: "Execution", plural: "executions", names: ["executions", "execution", "ex"] };
export const AGENTS: Resource = { kind: "Agent", plural: "agents", names: ["agents", "agent", "ag"] };
export const GUARD_POLICIES: Resource = { kind: "GuardPolicy", plural: "guardpolicies", names: ["guardpolicies", "guardpolicy", "gp"] };

/** The three gavel kinds. */
export const RESOURCES: Resource[] = [EXECUTIONS, AGENTS, GUARD_POLICIES];

/** The resource a user named (kubectl's `kind.group` form accepted too); a UsageError naming it otherwise. */
export function resolveResource(name: string): Resource {
  const bare = name.toLowerCase().replace(/\.100monkeys\.ai(\/v1)?$/, "");
  const r = RESOURCES.find((x) => x.names.includes(bare));
  if (r === undefined) {
    throw new UsageError(`unknown resource type "${name}"; gavel knows ${RESOURCES.map((x) => `${x.plural} (${x.names.slice(1).join(", ")})`).join(", ")}`);
  }
  return r;
}
