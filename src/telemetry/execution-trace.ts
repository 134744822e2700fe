// The trace of one Execution, built from its engine events (the same events both drivers
// publish): the Execution is the root span, each iteration a child, each validator a child of
// its iteration, each validation judge an `invoke_agent` span under its validator, and each
// verdict a `gen_ai.evaluation.result` event on the iteration it judged. Tool calls are the
// gate's spans (src/gate/gate.ts), parented to the iteration through the worker's TRACEPARENT.
import type { Attributes } from "@opentelemetry/api";
import type { ExecutionPhase } from "../api/types.js";
import { isTerminal } from "../engine/phases.js";
import type { GavelEvent } from "../api/events.js";
import { evaluationAttributes, GAVEL, GEN_AI, OPERATION } from "./genai.js";
import { executionTraceId, formatTraceparent, spanIdOf, type SpanRef } from "./trace-context.js";
import type { TraceSpan, Tracing } from "./tracing.js";

/** The Execution a trace is about. */
export interface TracedExecution {
  namespace: string;
  name: string;
  uid?: string;
  /** The Agent it runs. */
  agent: string;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** One Execution's spans, opened and closed as its events arrive. */
export class ExecutionTrace {
  readonly traceId: string;
  private readonly open = new Map<string, TraceSpan>();
  /** Validation judge children: the key of their span. */
  private readonly judges = new Map<string, { key: string; iteration: number; judge: string }>();
  private sampled = true;
  private ended = false;

  constructor(
    private readonly tracing: Tracing,
    private readonly execution: TracedExecution,
  ) {
    this.traceId = executionTraceId(execution);
  }

  /** True once the Execution's terminal phase was observed. */
  get done(): boolean {
    return this.ended;
  }

  /**
   * The traceparent of iteration N's span, for its worker (env TRACEPARENT), before the span
   * exists. The root span is started first (now, if no event started it yet): its sampling
   * decision is the flag the worker's calls carry.
   */
  iterationParent(iteration: number): string {
    this.root(Date.now());
    return formatTraceparent(this.ref(`iteration/${iteration}`));
  }

  private readonly ids = new Map<string, string>();

  /** The planned id of the span of `key` (hashed once). */
  private idOf(key: string): string {
    let id = this.ids.get(key);
    if (id === undefined) this.ids.set(key, (id = spanIdOf(this.traceId, key)));
    return id;
  }

  private ref(key: string): SpanRef {
    return { traceId: this.traceId, spanId: this.idOf(key), sampled: this.sampled };
  }

  /**
   * The span of `key`, started now (at `time`) when it is not open: under a controller that
   * restarted mid-run the start was missed, and the span then begins at the first event seen.
   */
  private ensure(key: string, parentKey: string | undefined, name: string, time: number, attributes: () => Attributes): TraceSpan {
    const known = this.open.get(key);
    if (known !== undefined) return known;
    const span = this.tracing.start({
      name,
      ...(parentKey === undefined ? { traceId: this.traceId } : { parent: this.ref(parentKey) }),
      spanId: this.idOf(key),
      attributes: attributes(),
      startTime: time,
    });
    if (parentKey === undefined) this.sampled = span.ref.sampled;
    this.open.set(key, span);
    return span;
  }

  private root(time: number): TraceSpan {
    const e = this.execution;
    return this.ensure("execution", undefined, `${OPERATION.invokeAgent} ${e.agent}`, time, () => ({
      [GEN_AI.operationName]: OPERATION.invokeAgent,
      [GEN_AI.agentName]: e.agent,
      [GEN_AI.conversationId]: e.uid ?? `${e.namespace}/${e.name}`,
      [GAVEL.namespace]: e.namespace,
      [GAVEL.execution]: e.name,
      ...(e.uid !== undefined ? { [GAVEL.executionUid]: e.uid } : {}),
    }));
  }

  private iteration(n: number, time: number): TraceSpan {
    this.root(time);
    return this.ensure(`iteration/${n}`, "execution", "iteration", time, () => ({
      [GAVEL.iteration]: n,
      [GEN_AI.agentName]: this.execution.agent,
    }));
  }

  private validator(n: number, k: number, type: string | undefined, time: number): TraceSpan {
    this.iteration(n, time);
    return this.ensure(`validator/${n}/${k}`, `iteration/${n}`, `validate ${type ?? "validator"}`, time, () => ({
      [GAVEL.iteration]: n,
      [GAVEL.validatorIndex]: k,
      ...(type !== undefined ? { [GAVEL.validatorType]: type } : {}),
    }));
  }

  private close(key: string, time: number): void {
    this.open.get(key)?.end(time);
    this.open.delete(key);
  }

  /** Takes one event of the Execution's tree (its judge children's events included). */
  observe(event: GavelEvent): void {
    if (this.ended) return;
    const d = event.data;
    // Epoch ms (no Date object): spans and events take either.
    const time = Date.parse(event.time);
    const it = num(d.iteration);
    const k = num(d.index);
    switch (event.type) {
      case "execution.started":
        this.root(time);
        return;
      case "iteration.started":
        if (it !== undefined) this.iteration(it, time);
        return;
      case "worker.finished":
        if (it !== undefined) this.workerFinished(it, d, time);
        return;
      case "validator.started":
        if (it !== undefined && k !== undefined) this.validator(it, k, str(d.type), time);
        return;
      case "judge.spawned":
        // Tool-call judges are the gate's spans, under their execute_tool span.
        if (d.purpose === "validation" && it !== undefined && k !== undefined) this.judgeSpawned(it, k, d, time);
        return;
      case "judge.finished":
        this.judgeFinished(d, time);
        return;
      case "validator.result":
        if (it !== undefined && k !== undefined) this.validatorResult(it, k, d, time);
        return;
      case "iteration.finished":
        if (it !== undefined) this.iterationFinished(it, d, time);
        return;
      case "execution.phase":
        this.phase(d, time);
        return;
    }
  }

  private workerFinished(it: number, d: Record<string, unknown>, time: number): void {
    const exit = num(d.exitCode);
    this.iteration(it, time).setAttributes({
      ...(exit !== undefined ? { [GAVEL.workerExitCode]: exit } : {}),
      ...(d.timedOut === true ? { [GEN_AI.errorType]: "timed_out" } : {}),
    });
  }

  private judgeSpawned(it: number, k: number, d: Record<string, unknown>, time: number): void {
    const child = str(d.child);
    const judge = str(d.judge) ?? "judge";
    if (child === undefined) return;
    this.validator(it, k, undefined, time);
    const key = `judge/${child}`;
    this.judges.set(child, { key, iteration: it, judge });
    this.ensure(key, `validator/${it}/${k}`, `${OPERATION.invokeAgent} ${judge}`, time, () => ({
      [GEN_AI.operationName]: OPERATION.invokeAgent,
      [GEN_AI.agentName]: judge,
      [GAVEL.judgeChild]: child,
      [GAVEL.judgePurpose]: "validation",
    }));
  }

  private judgeFinished(d: Record<string, unknown>, time: number): void {
    const child = str(d.child);
    const j = child === undefined ? undefined : this.judges.get(child);
    const span = j === undefined ? undefined : this.open.get(j.key);
    if (j === undefined || span === undefined) return;
    const score = num(d.score);
    const rejection = str(d.rejection);
    const confidence = num(d.confidence);
    span.setAttributes({
      ...(score !== undefined ? { [GAVEL.score]: score } : {}),
      ...(confidence !== undefined ? { [GAVEL.confidence]: confidence } : {}),
    });
    if (rejection !== undefined) span.setError(rejection, `judge rejected: ${rejection}`);
    // The verdict judges the iteration's work: the event goes on the span it evaluates.
    const verdict = evaluationAttributes({
      name: j.judge,
      ...(score !== undefined ? { score } : {}),
      ...(rejection !== undefined ? { rejection } : {}),
    });
    this.open.get(`iteration/${j.iteration}`)?.addEvent(GEN_AI.evaluationResult, verdict, time);
    this.close(j.key, time);
  }

  private validatorResult(it: number, k: number, d: Record<string, unknown>, time: number): void {
    const span = this.validator(it, k, str(d.type), time);
    const score = num(d.score);
    const confidence = num(d.confidence);
    const passed = d.passed === true;
    const reasoning = str(d.reasoning);
    span.setAttributes({
      [GAVEL.passed]: passed,
      ...(score !== undefined ? { [GAVEL.score]: score } : {}),
      ...(confidence !== undefined ? { [GAVEL.confidence]: confidence } : {}),
    });
    const verdict = evaluationAttributes({
      name: str(d.type) ?? "validator",
      ...(score !== undefined ? { score } : {}),
      passed,
      ...(reasoning !== undefined ? { explanation: reasoning } : {}),
    });
    this.open.get(`iteration/${it}`)?.addEvent(GEN_AI.evaluationResult, verdict, time);
    this.close(`validator/${it}/${k}`, time);
  }

  private iterationFinished(it: number, d: Record<string, unknown>, time: number): void {
    const score = num(d.score);
    const outcome = str(d.outcome);
    this.iteration(it, time).setAttributes({
      ...(outcome !== undefined ? { [GAVEL.iterationOutcome]: outcome } : {}),
      ...(score !== undefined ? { [GAVEL.score]: score } : {}),
    });
    for (const key of [...this.open.keys()]) if (key.startsWith(`validator/${it}/`)) this.close(key, time);
    this.close(`iteration/${it}`, time);
  }

  private phase(d: Record<string, unknown>, time: number): void {
    const phase = str(d.phase) as ExecutionPhase | undefined;
    if (!isTerminal(phase)) return;
    const root = this.root(time);
    const score = num(d.score);
    root.setAttributes({ [GAVEL.phase]: phase as string, ...(score !== undefined ? { [GAVEL.score]: score } : {}) });
    if (phase !== "Succeeded")
      root.setError(phase === "TimedOut" ? "timed_out" : phase === "Cancelled" ? "cancelled" : "failed", str(d.message));
    this.end(time);
  }

  /** Ends the trace of a run that will report no terminal phase (e.g. its Execution was deleted): the root is marked failed with `reason` as error.type. */
  abandon(reason: string, time: number = Date.now()): void {
    if (this.ended) return;
    this.open.get("execution")?.setError(reason, `execution ${reason}`);
    this.end(time);
  }

  /** Ends every span still open (children before the root), e.g. when the run stops early. */
  end(time: number = Date.now()): void {
    for (const key of [...this.open.keys()].reverse()) this.close(key, time);
    this.ended = true;
  }
}

/**
 * The traces of the Executions a controller runs, by namespace/name: each fed the events of its
 * status writes, dropped once its terminal phase is seen or the Execution is gone (deleted) or
 * replaced by a new one of the same name (another uid). So the map holds at most the Executions
 * that exist and are not finished. A worker's TRACEPARENT needs no entry: the span ids are
 * derived from the uid.
 */
export class ExecutionTraces {
  private readonly traces = new Map<string, { uid: string | undefined; trace: ExecutionTrace }>();

  constructor(private readonly tracing: Tracing) {}

  /** How many Executions have a trace open (bounded by the unfinished Executions). */
  get size(): number {
    return this.traces.size;
  }

  private of(execution: TracedExecution): ExecutionTrace {
    const key = `${execution.namespace}/${execution.name}`;
    const known = this.traces.get(key);
    if (known !== undefined && known.uid === execution.uid) return known.trace;
    // A new Execution under a deleted one's name: the old run's spans end, cut short.
    if (known !== undefined) known.trace.abandon("deleted");
    const trace = new ExecutionTrace(this.tracing, execution);
    this.traces.set(key, { uid: execution.uid, trace });
    return trace;
  }

  /** Feeds the events of one status write of `execution`. */
  observe(execution: TracedExecution, events: readonly GavelEvent[]): void {
    const t = this.of(execution);
    for (const e of events) t.observe(e);
    if (t.done) this.traces.delete(`${execution.namespace}/${execution.name}`);
  }

  /** The traceparent iteration N's worker gets (env TRACEPARENT); starts the Execution's trace when no event did yet. */
  iterationParent(execution: TracedExecution, iteration: number): string {
    return this.of(execution).iterationParent(iteration);
  }

  /** The Execution namespace/name is gone: its open spans end (the root marked `deleted`) and its entry is dropped. */
  deleted(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    this.traces.get(key)?.trace.abandon("deleted");
    this.traces.delete(key);
  }
}
