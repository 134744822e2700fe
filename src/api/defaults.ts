// The defaults the engine runs an Agent with: the CRD's structural defaults (exactly what the API
// server stores) plus the reference defaults of validator-list entries, which the server cannot fill.
import type { Agent, ValidatorSpec } from "./types.js";
import { isMap } from "./schema-dsl.js";
import { withSchemaDefaults } from "./validate.js";

/** Reference defaults of an outer-loop validator entry, by type (agent-validation.txt, "Validation Configuration Reference"). */
export const VALIDATOR_DEFAULTS = {
  common: { min_score: 1.0, min_confidence: 0.0 },
  exit_code: { expected: 0 },
  json_schema: {},
  regex: { target: "stdout" },
  semantic: { timeout_seconds: 300 },
  multi_judge: { consensus: "weighted_average", min_judges_required: 1, timeout_seconds: 300 },
} as const;

/** A validator entry with its reference defaults filled in (fields already set win). */
export function validatorWithDefaults<V extends ValidatorSpec>(v: V): V {
  const byType = (VALIDATOR_DEFAULTS as Record<string, object>)[v.type] ?? {};
  return { ...VALIDATOR_DEFAULTS.common, ...byType, ...v };
}

/** A deep copy of the agent with every default applied: the CRD's, then the validator list's. */
export function withDefaults(agent: Agent): Agent {
  const out = withSchemaDefaults("Agent", agent);
  const validation = out.spec.execution?.validation;
  if (Array.isArray(validation) && out.spec.execution !== undefined) {
    out.spec.execution.validation = validation.map((v) => (isMap(v) ? validatorWithDefaults(v) : v));
  }
  return out;
}
