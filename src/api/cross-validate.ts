// Rules across objects that no schema can state: the judges an Agent names exist, are judges,
// and run one-shot; a judge's input_schema asks only for data gavel can map. Pure; used by the
// controller (Agent Ready condition) and by `gavel validate`.
import type { Agent, Condition } from "./types.js";
import { ROLE_JUDGE, ROLE_LABEL } from "./types.js";
import { withDefaults } from "./defaults.js";
import { isMap } from "./schema-dsl.js";

/** Property names of a judge's input_schema that gavel fills (agent-validation.txt "Judge Input Schema", tool-call-judging.txt "Judge Contract"). */
export const MAPPABLE_JUDGE_INPUTS = [
  "output",
  "generated_manifest",
  "generated_workflow",
  "user_objective",
  "task",
  "criteria",
  "deployment_result",
  "tool_call_history",
  "worker_mounts",
  "validation_context",
  "proposed_tool_call",
  "available_tools",
  "policy_violations",
] as const;

/** Why an Agent is not Ready, as a condition reason. */
export type CrossReason = "JudgeNotFound" | "NotAJudge" | "JudgeNotOneShot" | "UnmappableJudgeInput";

/** One cross-object problem of an Agent. */
export interface CrossProblem {
  /** Field of the Agent the problem is about, e.g. spec.execution.validation[2].judge_agent. */
  path: string;
  reason: CrossReason;
  message: string;
}

/** The judge names an Agent refers to, with the field that names each. */
export function judgeReferences(agent: Agent): { path: string; name: string }[] {
  const refs: { path: string; name: string }[] = [];
  const execution = agent.spec?.execution;
  const validation = execution?.validation;
  if (Array.isArray(validation)) {
    validation.forEach((v, i) => {
      if (!isMap(v)) return;
      if (v.type === "semantic" && typeof v.judge_agent === "string") refs.push({ path: `spec.execution.validation[${i}].judge_agent`, name: v.judge_agent });
      if (v.type === "multi_judge" && Array.isArray(v.judges)) {
        v.judges.forEach((j, k) => {
          if (typeof j === "string") refs.push({ path: `spec.execution.validation[${i}].judges[${k}]`, name: j });
        });
      }
    });
  }
  const toolValidation: unknown = execution?.tool_validation;
  if (Array.isArray(toolValidation)) {
    toolValidation.forEach((v: unknown, i) => {
      if (isMap(v) && typeof v.judge_agent === "string") refs.push({ path: `spec.execution.tool_validation[${i}].judge_agent`, name: v.judge_agent });
    });
  }
  return refs;
}

/** True when the Agent is labelled as a judge (metadata.labels.role: judge). */
export function isJudge(agent: Agent): boolean {
  return agent.metadata?.labels?.[ROLE_LABEL] === ROLE_JUDGE;
}

/**
 * Cross-object problems of one Agent. `lookup` finds an Agent of the same namespace by name
 * (undefined when it does not exist).
 */
export function crossValidateAgent(agent: Agent, lookup: (name: string) => Agent | undefined): CrossProblem[] {
  const problems: CrossProblem[] = [];
  for (const ref of judgeReferences(agent)) {
    const judge = lookup(ref.name);
    if (judge === undefined) {
      problems.push({ path: ref.path, reason: "JudgeNotFound", message: `judge Agent "${ref.name}" does not exist in this namespace; create it (labels: {role: judge}, execution.mode: one-shot) or fix the name` });
      continue;
    }
    if (!isJudge(judge)) {
      problems.push({ path: ref.path, reason: "NotAJudge", message: `Agent "${ref.name}" is not a judge: add metadata.labels.role: judge to it` });
    }
    const mode = withDefaults(judge).spec.execution?.mode;
    if (mode !== "one-shot") {
      problems.push({
        path: ref.path,
        reason: "JudgeNotOneShot",
        message: `judge "${ref.name}" has execution.mode ${mode ?? "unset"}; judges run one-shot: set spec.execution.mode: one-shot in it`,
      });
    }
  }
  if (isJudge(agent)) problems.push(...inputSchemaProblems(agent));
  return problems;
}

/** A judge's input_schema properties that gavel cannot fill. */
export function inputSchemaProblems(agent: Agent): CrossProblem[] {
  const props = agent.spec?.input_schema?.properties;
  if (!isMap(props)) return [];
  const mappable: readonly string[] = MAPPABLE_JUDGE_INPUTS;
  return Object.keys(props)
    .filter((k) => !mappable.includes(k))
    .map((k) => ({
      path: `spec.input_schema.properties.${k}`,
      reason: "UnmappableJudgeInput" as const,
      message: `gavel cannot fill judge input "${k}"; use only: ${MAPPABLE_JUDGE_INPUTS.join(", ")}`,
    }));
}

/** Cross-validates a set of Agents of one namespace against each other, by Agent name. */
export function crossValidateAgents(agents: Agent[]): Map<string, CrossProblem[]> {
  const byName = new Map(agents.map((a) => [a.metadata.name, a]));
  return new Map(agents.map((a) => [a.metadata.name, crossValidateAgent(a, (n) => byName.get(n))]));
}

/** The Agent's Ready condition for these problems (status True when there are none). */
export function readyCondition(problems: CrossProblem[], generation: number | undefined, now: Date): Condition {
  const first = problems[0];
  const base = { type: "Ready", lastTransitionTime: now.toISOString(), ...(generation === undefined ? {} : { observedGeneration: generation }) };
  if (first === undefined) return { ...base, status: "True", reason: "Valid", message: "the Agent and the judges it names are valid" };
  const message = problems.map((p) => `${p.path}: ${p.message}`).join("; ");
  return { ...base, status: "False", reason: first.reason, message };
}
