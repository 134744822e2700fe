// Deadlines of an Execution: Kubernetes-style duration strings ("90s", "5m", "1h30m") and the
// per-iteration, whole-execution and judge deadlines with their defaults.
import type { Agent, Execution, MultiJudgeValidatorSpec, SemanticValidatorSpec } from "../api/types.js";

/** Iteration deadline when neither the agent nor the execution sets one. */
export const DEFAULT_ITERATION_TIMEOUT_SECONDS = 300;
/** Judge deadline when the validator does not set `timeout_seconds`. */
export const DEFAULT_JUDGE_TIMEOUT_SECONDS = 300;
/** Default `max_iterations` of an iterative agent. */
export const DEFAULT_MAX_ITERATIONS = 10;

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/** Parses "90s", "1.5m", "1h30m" or a bare number of seconds; undefined when it is none of these. */
export function parseDurationSeconds(text: string | number | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (typeof text === "number") return Number.isFinite(text) && text > 0 ? text : undefined;
  const s = text.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) > 0 ? Number(s) : undefined;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    total += Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
    consumed = re.lastIndex;
  }
  return consumed === s.length && consumed > 0 && total > 0 ? total : undefined;
}

/** Seconds one iteration's worker may run: iteration_timeout_seconds, else security.resources.timeout, else 300. */
export function iterationTimeoutSeconds(agent: Agent): number {
  return (
    parseDurationSeconds(agent.spec.execution?.iteration_timeout_seconds) ??
    parseDurationSeconds(agent.spec.security?.resources?.timeout) ??
    DEFAULT_ITERATION_TIMEOUT_SECONDS
  );
}

/** Seconds the whole Execution may run (spec.timeoutSeconds, else the agent's timeout_seconds); undefined means no limit. */
export function executionTimeoutSeconds(execution: Execution, agent: Agent): number | undefined {
  return parseDurationSeconds(execution.spec.timeoutSeconds) ?? parseDurationSeconds(agent.spec.execution?.timeout_seconds);
}

/**
 * Seconds a judge child may run: the tighter of the validator's timeout_seconds (default 300,
 * the reference's "maximum time to wait for the judge") and the judge's own
 * security.resources.timeout. A judge's manifest may shorten its deadline, never lengthen it.
 */
export function judgeTimeoutSeconds(validator: SemanticValidatorSpec | MultiJudgeValidatorSpec, judge: Agent | undefined): number {
  const wait = parseDurationSeconds(validator.timeout_seconds) ?? DEFAULT_JUDGE_TIMEOUT_SECONDS;
  const own = parseDurationSeconds(judge?.spec.security?.resources?.timeout);
  return own === undefined ? wait : Math.min(wait, own);
}

/** Seconds a judge child Execution may run: its spec.timeoutSeconds, else its judge's deadline for a validator without one. */
export function childTimeoutSeconds(child: Execution, judge: Agent | undefined): number {
  return (
    parseDurationSeconds(child.spec.timeoutSeconds) ??
    judgeTimeoutSeconds({ type: "semantic", judge_agent: child.spec.agentRef.name }, judge)
  );
}

/** An Execution's deadlines, parsed once per reconcile (or local run) and handed to the engine in its AgentPlan. */
export interface RunLimits {
  /** Seconds the whole Execution may run (executionTimeoutSeconds); undefined means no limit. */
  executionSeconds?: number;
  /** Seconds one iteration's worker may run (iterationTimeoutSeconds). */
  iterationSeconds: number;
  /** How many iterations it may run (maxIterations). */
  maxIterations: number;
}

/** The deadlines of an Execution of an Agent (defaults applied), each parsed once. */
export function runLimits(execution: Execution, agent: Agent): RunLimits {
  const executionSeconds = executionTimeoutSeconds(execution, agent);
  return {
    ...(executionSeconds !== undefined ? { executionSeconds } : {}),
    iterationSeconds: iterationTimeoutSeconds(agent),
    maxIterations: maxIterations(agent),
  };
}

/** How many iterations the agent may run: 1 for one-shot, max_iterations (default 10) when iterative. */
export function maxIterations(agent: Agent): number {
  const exec = agent.spec.execution;
  if ((exec?.mode ?? "iterative") === "one-shot") return 1;
  const n = exec?.max_iterations ?? DEFAULT_MAX_ITERATIONS;
  return Number.isInteger(n) && n >= 1 ? n : DEFAULT_MAX_ITERATIONS;
}
