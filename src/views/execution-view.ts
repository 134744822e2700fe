// One Execution's tree as `gavel describe` and the web view show it, built from what the API
// server holds: the Execution's status (iterations, validator records, child refs), its judge
// children's statuses (verdict or rejection) and its Agent (declared validators and their
// thresholds). Pure, so both front ends draw the same tree. It carries no spec.input and no
// tool-call argument values: a judge child's input is the judged call, so it is never read.
import type {
  Agent,
  ChildRef,
  Condition,
  Execution,
  ExecutionPhase,
  IterationRecord,
  JudgePurpose,
  ToolCallEntry,
  SemanticValidatorSpec,
  ValidatorSpec,
} from "../api/types.js";
import { maxIterations } from "../engine/durations.js";
import { OUTER_MIN_SCORE, thresholdsOf, TOOL_MIN_SCORE } from "../engine/validators.js";

export interface JudgeView {
  /** The child Execution's name. */
  name: string;
  /** The judge Agent. */
  judge: string;
  purpose: JudgePurpose;
  phase: ExecutionPhase | "Pending";
  score?: number;
  confidence?: number;
  /** min_score of the validator or tool_validation entry it answers for (from the Agent as it is now). */
  minScore?: number;
  reasoning?: string;
  rejection?: string;
  /** The child's status message (why it was rejected, or that its verdict was parsed). */
  message?: string;
  /**
   * Why its stdout holds its stderr too (status.rawOutput.streamsMerged): its pod ran a program
   * gavel does not know, without gavel-launch, so the pod log merged them (ADR 0041).
   */
  streamsMerged?: string;
  startTime?: string;
  completionTime?: string;
}

export interface ValidatorView {
  index: number;
  type: string;
  /** pending: not reached yet in a running iteration; running: its judges (or checks) are under way. */
  state: "pending" | "running" | "passed" | "failed";
  score?: number;
  confidence?: number;
  /** Thresholds from the Agent as it is now (defaults applied); absent when the Agent is gone. */
  minScore?: number;
  minConfidence?: number;
  reasoning?: string;
  signals?: { category: string; score: number; message: string }[];
  judges: JudgeView[];
}

export interface ToolCallView {
  /** The call's idempotency key. */
  id: string;
  /** From the status's recent calls (the gate's decision); absent for a call only its judge children name. */
  step?: number;
  tool?: string;
  /** The MCP server whose tool it is (`tool` is `<server>.<name>`, ADR 0051); absent for a built-in. */
  server?: string;
  /** "allowed", "blocked by guard" or "blocked by judge". */
  outcome?: string;
  /** The guard check that decided (a denial or a flag). */
  check?: string;
  /** Why it was blocked (rule names or the judges' reasoning, never argument values). */
  reason?: string;
  /** The tool_validation judges asked about it. */
  judges: JudgeView[];
}

export interface IterationView {
  number: number;
  phase: string;
  exitCode?: number;
  startTime?: string;
  completionTime?: string;
  feedback?: string;
  validators: ValidatorView[];
  /** The decided calls the status keeps (the last 20) in step order, then calls only judge children name. */
  toolCalls: ToolCallView[];
  /** Every call of the iteration, counted (the status's summary). */
  toolCallCounts?: { proposed: number; allowed: number; blockedByGuard: number; blockedByJudge: number };
}

export interface ExecutionView {
  name: string;
  namespace: string;
  agent: string;
  phase: ExecutionPhase | "Pending";
  score?: number;
  iteration?: number;
  maxIterations?: number;
  message?: string;
  creationTimestamp?: string;
  startTime?: string;
  completionTime?: string;
  /** Set on a judge child: whom it judges. */
  parent?: { name: string; purpose: JudgePurpose; iteration: number; validatorIndex: number; toolCallId?: string };
  /** Set on a judge child: its own verdict or rejection. */
  verdict?: { score: number; confidence: number; reasoning: string };
  rejection?: string;
  /** Set on a judge child whose output merged stderr into stdout: why (as JudgeView.streamsMerged). */
  streamsMerged?: string;
  iterations: IterationView[];
  conditions: Condition[];
  /** False when the Agent could not be read: thresholds and pending validators are unknown. */
  agentFound: boolean;
}

const TERMINAL = new Set(["Succeeded", "Failed", "Cancelled", "TimedOut"]);

/** True for a phase nothing follows. */
export function isFinished(phase: string | undefined): boolean {
  return phase !== undefined && TERMINAL.has(phase);
}

function judgeView(
  ref: { name: string; judge: string; purpose: JudgePurpose; phase?: ExecutionPhase },
  child: Execution | undefined,
  minScore: number | undefined,
): JudgeView {
  const st = child?.status;
  const v: JudgeView = { name: ref.name, judge: ref.judge, purpose: ref.purpose, phase: st?.phase ?? ref.phase ?? "Pending" };
  if (minScore !== undefined) v.minScore = minScore;
  if (st?.verdict !== undefined) {
    v.score = st.verdict.score;
    v.confidence = st.verdict.confidence;
    v.reasoning = st.verdict.reasoning;
  }
  if (st?.rejection !== undefined) v.rejection = st.rejection;
  if (st?.message !== undefined) v.message = st.message;
  if (st?.rawOutput?.streamsMerged !== undefined) v.streamsMerged = st.rawOutput.streamsMerged;
  if (st?.startTime !== undefined) v.startTime = st.startTime;
  if (st?.completionTime !== undefined) v.completionTime = st.completionTime;
  return v;
}

function declaredValidators(agent: Agent | undefined): ValidatorSpec[] {
  const v = agent?.spec.execution?.validation;
  return Array.isArray(v) ? v : [];
}

/** What an iteration's view is built from: the child refs, the children by name, the Agent's declared validators and tool_validation entries. */
interface ViewInputs {
  refs: ChildRef[];
  byName: Map<string, Execution>;
  declared: ValidatorSpec[];
  toolEntries: SemanticValidatorSpec[];
}

/**
 * The judge children of `execution` among `children`, and the refs to show: those of the
 * status, plus children the status does not name yet (created, the parent's status write
 * still to come).
 */
function childRefs(execution: Execution, children: readonly Execution[]): Pick<ViewInputs, "refs" | "byName"> {
  const byName = new Map(children.filter((c) => c.spec.parent?.name === execution.metadata.name).map((c) => [c.metadata.name, c]));
  const refs = execution.status?.children ?? [];
  const named = new Set(refs.map((r) => r.name));
  const unnamed = [...byName.values()]
    .filter((c) => !named.has(c.metadata.name) && c.spec.parent !== undefined)
    .map((c): ChildRef => {
      const p = c.spec.parent as NonNullable<Execution["spec"]["parent"]>;
      return {
        name: c.metadata.name,
        judge: c.spec.agentRef.name,
        purpose: p.purpose,
        iteration: p.iteration,
        validatorIndex: p.validatorIndex,
        ...(p.toolCallId !== undefined ? { toolCallId: p.toolCallId } : {}),
      };
    });
  return { refs: [...refs, ...unnamed], byName };
}

/** An iteration's validators: those recorded, and when it is the run's current one, the rest as declared (pending, or running). */
function validatorViews(rec: IterationRecord, current: boolean, inputs: ViewInputs): ValidatorView[] {
  const judgesOf = (k: number, minScore: number | undefined) =>
    inputs.refs
      .filter((r) => r.purpose === "validation" && r.iteration === rec.number && r.validatorIndex === k)
      .map((r) => judgeView(r, inputs.byName.get(r.name), minScore));
  const validators: ValidatorView[] = (rec.validators ?? []).map((vr) => {
    const spec = inputs.declared[vr.index];
    const t = spec !== undefined ? thresholdsOf(spec, OUTER_MIN_SCORE) : undefined;
    return {
      index: vr.index,
      type: vr.type,
      state: vr.passed ? "passed" : "failed",
      score: vr.score,
      confidence: vr.confidence,
      ...(t !== undefined ? { minScore: t.min_score, minConfidence: t.min_confidence } : {}),
      reasoning: vr.reasoning,
      ...(vr.signals !== undefined && vr.signals.length > 0 ? { signals: vr.signals } : {}),
      judges: judgesOf(vr.index, t?.min_score),
    };
  });
  if (!current) return validators;
  for (let k = validators.length; k < inputs.declared.length; k++) {
    const spec = inputs.declared[k] as ValidatorSpec;
    const t = thresholdsOf(spec, OUTER_MIN_SCORE);
    const state = rec.phase === "Validating" && k === (rec.validators ?? []).length ? "running" : "pending";
    validators.push({
      index: k,
      type: spec.type,
      state,
      minScore: t.min_score,
      minConfidence: t.min_confidence,
      judges: judgesOf(k, t.min_score),
    });
  }
  return validators;
}

/** An iteration's tool-call judges, by tool call id. */
function toolCallJudges(rec: IterationRecord, inputs: ViewInputs): Map<string, ToolCallView> {
  const calls = new Map<string, ToolCallView>();
  for (const r of inputs.refs) {
    if (r.purpose !== "tool_validation" || r.iteration !== rec.number) continue;
    const id = r.toolCallId ?? "?";
    const call = calls.get(id) ?? { id, judges: [] };
    const entry = inputs.toolEntries[r.validatorIndex];
    call.judges.push(
      judgeView(r, inputs.byName.get(r.name), entry !== undefined ? thresholdsOf(entry, TOOL_MIN_SCORE).min_score : undefined),
    );
    calls.set(id, call);
  }
  return calls;
}

/** One iteration's view; `current` when it is the last of a run still going. */
function iterationView(rec: IterationRecord, current: boolean, inputs: ViewInputs): IterationView {
  const counts = rec.toolCalls;
  return {
    number: rec.number,
    phase: rec.phase,
    ...(rec.exitCode !== undefined ? { exitCode: rec.exitCode } : {}),
    ...(rec.startTime !== undefined ? { startTime: rec.startTime } : {}),
    ...(rec.completionTime !== undefined ? { completionTime: rec.completionTime } : {}),
    ...(rec.feedback !== undefined && rec.feedback !== "" ? { feedback: rec.feedback } : {}),
    validators: validatorViews(rec, current, inputs),
    toolCalls: withDecisions(toolCallJudges(rec, inputs), counts?.recent ?? []),
    ...(counts !== undefined
      ? {
          toolCallCounts: {
            proposed: counts.proposed,
            allowed: counts.allowed,
            blockedByGuard: counts.blockedByGuard,
            blockedByJudge: counts.blockedByJudge,
          },
        }
      : {}),
  };
}

/**
 * The tree of `execution`. `children` may hold any Executions of the namespace: those whose
 * spec.parent names this one are its judges. `agent` is the Execution's Agent, if it exists.
 */
export function buildExecutionView(execution: Execution, children: readonly Execution[], agent: Agent | undefined): ExecutionView {
  const st = execution.status ?? {};
  const inputs: ViewInputs = {
    ...childRefs(execution, children),
    declared: declaredValidators(agent),
    toolEntries: agent?.spec.execution?.tool_validation ?? [],
  };
  const records = st.iterations ?? [];
  const running = !isFinished(st.phase);
  // The last iteration of a run still going shows the validators it has not finished, as declared.
  const iterations = records.map((rec, i) =>
    iterationView(rec, i === records.length - 1 && running && (rec.phase === "Running" || rec.phase === "Validating"), inputs),
  );
  const p = execution.spec.parent;
  return {
    name: execution.metadata.name,
    namespace: execution.metadata.namespace ?? "default",
    agent: execution.spec.agentRef.name,
    phase: st.phase ?? "Pending",
    ...(st.score !== undefined ? { score: st.score } : {}),
    ...(st.iteration !== undefined ? { iteration: st.iteration } : {}),
    ...(agent !== undefined ? { maxIterations: maxIterations(agent) } : {}),
    ...(st.message !== undefined ? { message: st.message } : {}),
    ...(execution.metadata.creationTimestamp !== undefined ? { creationTimestamp: String(execution.metadata.creationTimestamp) } : {}),
    ...(st.startTime !== undefined ? { startTime: st.startTime } : {}),
    ...(st.completionTime !== undefined ? { completionTime: st.completionTime } : {}),
    ...(p !== undefined
      ? {
          parent: {
            name: p.name,
            purpose: p.purpose,
            iteration: p.iteration,
            validatorIndex: p.validatorIndex,
            ...(p.toolCallId !== undefined ? { toolCallId: p.toolCallId } : {}),
          },
        }
      : {}),
    ...(st.verdict !== undefined
      ? { verdict: { score: st.verdict.score, confidence: st.verdict.confidence, reasoning: st.verdict.reasoning } }
      : {}),
    ...(st.rejection !== undefined ? { rejection: st.rejection } : {}),
    ...(st.rawOutput?.streamsMerged !== undefined ? { streamsMerged: st.rawOutput.streamsMerged } : {}),
    iterations,
    conditions: st.conditions ?? [],
    agentFound: agent !== undefined,
  };
}

/**
 * Executions in tree order: each top-level one (or one whose parent is not in the list) by
 * namespace and name, then its judge children by iteration, validator and name, depth-first.
 */
export function treeOrder(items: Execution[]): { ex: Execution; depth: number }[] {
  const key = (e: Execution) => `${e.metadata.namespace ?? ""}/${e.metadata.name}`;
  const present = new Set(items.map(key));
  const parentKey = (e: Execution) => (e.spec.parent !== undefined ? `${e.metadata.namespace ?? ""}/${e.spec.parent.name}` : undefined);
  const kids = new Map<string, Execution[]>();
  const roots: Execution[] = [];
  for (const e of items) {
    const pk = parentKey(e);
    if (pk !== undefined && present.has(pk) && pk !== key(e)) kids.set(pk, [...(kids.get(pk) ?? []), e]);
    else roots.push(e);
  }
  const byName = (a: Execution, b: Execution) => key(a).localeCompare(key(b));
  const byPlace = (a: Execution, b: Execution) => {
    const pa = a.spec.parent;
    const pb = b.spec.parent;
    return (pa?.iteration ?? 0) - (pb?.iteration ?? 0) || (pa?.validatorIndex ?? 0) - (pb?.validatorIndex ?? 0) || byName(a, b);
  };
  const out: { ex: Execution; depth: number }[] = [];
  const seen = new Set<string>();
  const visit = (e: Execution, depth: number) => {
    if (seen.has(key(e))) return;
    seen.add(key(e));
    out.push({ ex: e, depth });
    for (const c of (kids.get(key(e)) ?? []).sort(byPlace)) visit(c, depth + 1);
  };
  for (const r of roots.sort(byName)) visit(r, 0);
  return out;
}

/** Who decided a call: the guard (and its check) or the judges; what describe and the web view show. */
export function decidedBy(call: ToolCallView): string {
  if (call.outcome === undefined) return call.judges.length > 0 ? "judges (deciding)" : "";
  if (call.outcome === "blocked by judge") return "judges";
  if (call.outcome === "blocked by guard") return call.check !== undefined ? `guard: ${call.check}` : "guard";
  if (call.judges.length > 0) return "judges";
  return call.check !== undefined ? `guard: ${call.check}` : "guard";
}

/** An MCP call's server and its own tool name (`files`, `read_text_file`); undefined for a built-in. */
export function mcpToolOf(call: { tool?: string; server?: string }): { server: string; tool: string } | undefined {
  if (call.server === undefined) return undefined;
  const prefix = `${call.server}.`;
  return { server: call.server, tool: call.tool?.startsWith(prefix) === true ? call.tool.slice(prefix.length) : (call.tool ?? "") };
}

/** Merges the status's decided calls (step order) with the calls judge children name. */
function withDecisions(judged: Map<string, ToolCallView>, recent: readonly ToolCallEntry[]): ToolCallView[] {
  const out: ToolCallView[] = [];
  for (const e of recent) {
    out.push({
      id: e.toolCallId,
      step: e.step,
      tool: e.tool,
      ...(e.server !== undefined ? { server: e.server } : {}),
      outcome: e.allowed ? "allowed" : `blocked by ${e.blockedBy}`,
      ...(e.check !== undefined ? { check: e.check } : {}),
      ...(e.reason !== undefined ? { reason: e.reason } : {}),
      judges: judged.get(e.toolCallId)?.judges ?? [],
    });
    judged.delete(e.toolCallId);
  }
  return [...out, ...judged.values()];
}
