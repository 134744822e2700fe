// The validation of one iteration: its validators in declared order, cheapest first, stopping
// at the first failure; files and judge children are asked for once and folded in when the
// driver has observed them.
import type {
  Agent,
  ChildRef,
  ExecutionStatus,
  MultiJudgeValidatorSpec,
  SemanticValidatorSpec,
  ValidatorRecord,
  ValidatorSpec,
} from "../api/types.js";
import { aggregateConsensus, type JudgeVote } from "./consensus.js";
import { judgeChildName, MAX_JUDGE_DEPTH } from "./child-names.js";
import { judgeTimeoutSeconds, type RunLimits } from "./durations.js";
import {
  currentIteration,
  event,
  fileKey,
  type AgentPlan,
  type EngineAction,
  type EngineContext,
  type EngineState,
  type FileRequest,
  type JudgeChildRequest,
  type WorkerObservation,
} from "./engine-state.js";
import { outcomeToGradient, type JudgeOutcome } from "./gradient.js";
import { phaseOfOutcome } from "./phases.js";
import { validateExitCode } from "./validators/exit-code.js";
import { validateJsonSchema } from "./validators/json-schema.js";
import { applyThresholds, deterministic, thresholdsOf, type FileContent, type ValidatorOutcome } from "./validators/outcome.js";
import { regexTargetPath, validateRegex } from "./validators/regex.js";

/** How an iteration ended: the failing validator (if one failed), why, and its score. */
export interface IterationEnd {
  failed: ValidatorRecord | undefined;
  /** Why the iteration failed; undefined when it passed. */
  reason: string | undefined;
  score: number;
}

/** The outer-loop validators of an agent (the judge form of `execution.validation` has none). */
export function validatorsOf(agent: Agent): ValidatorSpec[] {
  const v = agent.spec.execution?.validation;
  return Array.isArray(v) ? v : [];
}

/** The engine's part of an Agent (defaults applied) with its judges and the run's limits, worked out once per run. */
export function agentPlan(agent: Agent, judges: ReadonlyMap<string, Agent>, limits: RunLimits): AgentPlan {
  return { agent: agent.metadata.name, validators: validatorsOf(agent), judges, limits };
}

/**
 * Runs the iteration's validators from the first unrecorded one, in declared order, until one
 * must wait (undefined: its files or judges were asked for), one fails, or all pass.
 */
export function validateIteration(
  plan: AgentPlan,
  ctx: EngineContext,
  state: EngineState,
  actions: EngineAction[],
): IterationEnd | undefined {
  const record = currentIteration(state.status);
  const specs = plan.validators;
  const done = record.validators as ValidatorRecord[];
  while (done.length < specs.length) {
    const k = done.length;
    const spec = specs[k] as ValidatorSpec;
    const outcome = runValidator(plan, ctx, state, record.number, k, spec, actions);
    if (outcome === undefined) return undefined; // waiting on files or judges
    const rec: ValidatorRecord = {
      index: k,
      type: spec.type,
      passed: outcome.passed,
      score: outcome.score,
      confidence: outcome.confidence,
      reasoning: outcome.reasoning,
    };
    if (outcome.signals.length > 0) rec.signals = outcome.signals;
    const children = childrenOf(state.status, record.number, k);
    if (children.length > 0) rec.children = children.map((c) => c.name);
    done.push(rec);
    actions.push(
      event("validator.result", {
        iteration: record.number,
        index: k,
        type: spec.type,
        passed: rec.passed,
        score: rec.score,
        confidence: rec.confidence,
        reasoning: rec.reasoning,
      }),
    );
    if (!rec.passed) return { failed: rec, reason: rec.reasoning, score: lowest(done) };
  }
  return { failed: undefined, reason: undefined, score: done.length === 0 ? 1 : lowest(done) };
}

function lowest(records: ValidatorRecord[]): number {
  let min = 1;
  for (const r of records) if (r.score < min) min = r.score;
  return min;
}

function childrenOf(status: ExecutionStatus, iteration: number, k: number): ChildRef[] {
  return (status.children ?? []).filter((c) => c.iteration === iteration && c.validatorIndex === k && c.purpose === "validation");
}

/** One validator's outcome, or undefined when it waits for files or judges (requests issued). */
function runValidator(
  plan: AgentPlan,
  ctx: EngineContext,
  state: EngineState,
  iteration: number,
  k: number,
  spec: ValidatorSpec,
  actions: EngineAction[],
): ValidatorOutcome | undefined {
  const w = state.worker as WorkerObservation;
  const startKey = `v${k}:started`;
  if (!state.requested.has(startKey)) {
    state.requested.add(startKey);
    actions.push(event("validator.started", { iteration, index: k, type: spec.type }));
  }
  switch (spec.type) {
    case "exit_code":
      return validateExitCode(spec, w.exitCode, w.stderr);
    case "regex": {
      // stdout is at hand; a file is read by the driver first (validateRegex names the merged streams on stdout only).
      const path = regexTargetPath(spec);
      const files: FileContent[] | undefined =
        path === undefined
          ? [{ ok: true, content: w.stdout }]
          : need(state, iteration, k, [{ key: fileKey("workspace", path), path, from: "workspace" }], actions);
      return files === undefined ? undefined : validateRegex(spec, files[0] as FileContent, w.streamsMerged);
    }
    case "json_schema": {
      const reqs: FileRequest[] = [{ key: fileKey("workspace", spec.target_path), path: spec.target_path, from: "workspace" }];
      if (spec.schema === undefined && spec.schema_path !== undefined) {
        reqs.push({ key: fileKey("image", spec.schema_path), path: spec.schema_path, from: "image" });
      }
      const files = need(state, iteration, k, reqs, actions);
      if (files === undefined) return undefined;
      return validateJsonSchema(spec, files[0] as FileContent, files[1]);
    }
    case "semantic":
    case "multi_judge":
      return judged(plan, ctx, state, iteration, k, spec, spec.type === "semantic" ? [spec.judge_agent] : spec.judges, actions);
  }
}

function need(state: EngineState, iteration: number, k: number, reqs: FileRequest[], actions: EngineAction[]): FileContent[] | undefined {
  const have = reqs.map((r) => state.files.get(r.key));
  if (have.every((f) => f !== undefined)) return have;
  const key = `v${k}:files`;
  if (!state.requested.has(key)) {
    state.requested.add(key);
    actions.push({ type: "read_files", iteration, validatorIndex: k, files: reqs.filter((r) => !state.files.has(r.key)) });
  }
  return undefined;
}

/** A semantic or multi_judge validator: spawns its children once, then folds their outcomes. */
function judged(
  plan: AgentPlan,
  ctx: EngineContext,
  state: EngineState,
  iteration: number,
  k: number,
  spec: SemanticValidatorSpec | MultiJudgeValidatorSpec,
  judgeNames: string[],
  actions: EngineAction[],
): ValidatorOutcome | undefined {
  const exec = ctx.execution.metadata.name;
  const depth = (ctx.execution.spec.parent?.depth ?? 0) + 1;
  if (depth > MAX_JUDGE_DEPTH) {
    return deterministic(false, `judges of judges are limited to a depth of ${MAX_JUDGE_DEPTH}; this judge would be at depth ${depth}`);
  }
  if (judgeNames.length === 0) return deterministic(false, `${spec.type} validator names no judge`);
  const children = state.status.children as ChildRef[];
  const spawnKey = `v${k}:spawned`;
  if (!state.requested.has(spawnKey)) {
    state.requested.add(spawnKey);
    for (const judge of judgeNames) {
      const name = judgeChildName(exec, iteration, k, judge);
      const agent = plan.judges.get(judge);
      const ref: ChildRef = { name, purpose: "validation", iteration, validatorIndex: k, judge, phase: "Running" };
      children.push(ref);
      if (agent === undefined) {
        // An unknown judge is a failed judge: it counts against min_judges_required.
        ref.phase = "Failed";
        state.judgeResults.set(name, { ok: false, rejection: "failed", detail: `judge agent "${judge}" is not known` });
        actions.push(event("judge.spawned", { child: name, judge, iteration, index: k, purpose: "validation" }));
        actions.push(event("judge.finished", { child: name, judge, rejection: "failed" }));
        continue;
      }
      actions.push(event("judge.spawned", { child: name, judge, iteration, index: k, purpose: "validation" }));
      actions.push({ type: "spawn_judge", child: judgeRequest(plan, ctx, ref, spec) });
    }
  }
  const mine = childrenOf(state.status, iteration, k);
  let pending = false;
  for (const c of mine) {
    const outcome = state.judgeResults.get(c.name);
    if (outcome === undefined) {
      pending = true;
      continue;
    }
    if (c.phase === "Running") {
      c.phase = phaseOfOutcome(outcome);
      actions.push(
        event("judge.finished", {
          child: c.name,
          judge: c.judge,
          ...(outcome.ok ? { score: outcome.result.score, confidence: outcome.result.confidence } : { rejection: outcome.rejection }),
        }),
      );
    }
  }
  if (pending) return undefined;
  if (spec.type === "semantic") {
    const outcome = state.judgeResults.get((mine[0] as ChildRef).name) as JudgeOutcome;
    const result = applyThresholds(outcomeToGradient(outcome), thresholdsOf(spec));
    // No verdict is a failing score whatever the thresholds (the reference: "treated as failing").
    return outcome.ok ? result : { ...result, passed: false };
  }
  const votes: JudgeVote[] = mine.map((c) => {
    const o = state.judgeResults.get(c.name) as JudgeOutcome;
    return o.ok ? { judge: c.judge, result: o.result } : { judge: c.judge, rejection: o.rejection };
  });
  return (plan.aggregate ?? aggregateConsensus)(spec, votes, 1.0);
}

/** The spawn request of a judge child the status names (the engine's own, and a restored one). */
export function judgeRequest(
  plan: AgentPlan,
  ctx: EngineContext,
  ref: ChildRef,
  spec: SemanticValidatorSpec | MultiJudgeValidatorSpec,
): JudgeChildRequest {
  const agent = plan.judges.get(ref.judge);
  return {
    name: ref.name,
    judge: ref.judge,
    iteration: ref.iteration,
    validatorIndex: ref.validatorIndex,
    validator: spec,
    depth: (ctx.execution.spec.parent?.depth ?? 0) + 1,
    timeoutSeconds: judgeTimeoutSeconds(spec, agent),
    network: agent?.spec.security?.network?.mode === "allow" ? "allow" : "none",
  };
}
