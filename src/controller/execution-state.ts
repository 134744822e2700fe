// What the Kubernetes driver reads from an Execution beyond the engine's own rebuild
// (restoreState in src/engine/outer-loop.ts): the judge Agents it needs, and whether a
// status write would change anything.
import type { Agent, ExecutionStatus } from "../api/types.js";
import { validatorsOf } from "../engine/outer-loop.js";

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
      ? Object.fromEntries(
          Object.entries(value as Record<string, unknown>)
            .filter(([, x]) => x !== undefined)
            .sort(([x], [y]) => (x < y ? -1 : 1)),
        )
      : value,
  );
}
