// Rules across objects that no schema can state: the judges an Agent names exist, are judges,
// and run one-shot; a judge's input_schema asks only for data gavel can map. Pure; used by the
// controller (Agent Ready condition) and by `gavel validate`.
import { Ajv, type ValidateFunction } from "ajv";
import type { Agent, Condition, Execution } from "./types.js";
import { ROLE_JUDGE, ROLE_LABEL } from "./types.js";
import { withDefaults } from "./defaults.js";
import { isMap } from "./schema-dsl.js";
import { messageOf } from "../errors.js";

// Agents' input schemas are user JSON Schemas (draft-07 by default). Compiled validators are
// kept by schema text, a bounded number, each in its own Ajv so that none accumulates schemas.
const inputValidators = new Map<string, ValidateFunction>();

function inputValidator(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = inputValidators.get(key);
  if (fn === undefined) {
    fn = new Ajv({ allErrors: true, strict: false }).compile(schema as object);
    if (inputValidators.size >= 256) inputValidators.clear();
    inputValidators.set(key, fn);
  }
  return fn;
}

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
      if (v.type === "semantic" && typeof v.judge_agent === "string")
        refs.push({ path: `spec.execution.validation[${i}].judge_agent`, name: v.judge_agent });
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
      if (isMap(v) && typeof v.judge_agent === "string")
        refs.push({ path: `spec.execution.tool_validation[${i}].judge_agent`, name: v.judge_agent });
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
      problems.push({
        path: ref.path,
        reason: "JudgeNotFound",
        message: `judge Agent "${ref.name}" does not exist in this namespace; create it (labels: {role: judge}, execution.mode: one-shot) or fix the name`,
      });
      continue;
    }
    if (!isJudge(judge)) {
      problems.push({
        path: ref.path,
        reason: "NotAJudge",
        message: `Agent "${ref.name}" is not a judge: add metadata.labels.role: judge to it`,
      });
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
  const base = {
    type: "Ready",
    lastTransitionTime: now.toISOString(),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  };
  if (first === undefined) return { ...base, status: "True", reason: "Valid", message: "the Agent and the judges it names are valid" };
  const message = problems.map((p) => `${p.path}: ${p.message}`).join("; ");
  return { ...base, status: "False", reason: first.reason, message };
}

/** Why an Execution cannot run, as a condition reason. */
export type ExecutionCrossReason = "AgentNotFound" | "InputInvalid";

/** One cross-object problem of an Execution. */
export interface ExecutionCrossProblem {
  path: string;
  reason: ExecutionCrossReason;
  message: string;
}

/**
 * An Execution against the Agent it names: the Agent exists and `spec.input` satisfies the
 * Agent's `spec.input_schema` when it declares one.
 */
export function crossValidateExecution(execution: Execution, lookup: (name: string) => Agent | undefined): ExecutionCrossProblem[] {
  const name = execution.spec?.agentRef?.name;
  const agent = typeof name === "string" ? lookup(name) : undefined;
  if (agent === undefined) {
    return [
      {
        path: "spec.agentRef.name",
        reason: "AgentNotFound",
        message: `Agent "${String(name)}" does not exist in this namespace; create it or fix spec.agentRef.name`,
      },
    ];
  }
  const schema = agent.spec?.input_schema;
  if (schema === undefined) return [];
  let check: ValidateFunction;
  try {
    check = inputValidator(schema);
  } catch (err) {
    return [
      {
        path: "spec.agentRef.name",
        reason: "InputInvalid",
        message: `Agent "${agent.metadata.name}" has an input_schema that is not a valid JSON Schema: ${messageOf(err)}`,
      },
    ];
  }
  if (check(execution.spec.input ?? {})) return [];
  return (check.errors ?? []).map((e) => {
    const p = e.params as Record<string, unknown>;
    const at = `spec.input${e.instancePath.replace(/\/([^/]+)/g, (_m, seg: string) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`))}`;
    const field = e.keyword === "required" ? `${at}.${String(p.missingProperty)}` : at;
    return {
      path: field,
      reason: "InputInvalid" as const,
      message: `${e.keyword === "required" ? "required by" : `${e.message ?? e.keyword}, per`} Agent "${agent.metadata.name}" spec.input_schema`,
    };
  });
}
