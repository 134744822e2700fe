// An Execution's status, conditions and Events as the reconciler writes them: one status write
// per reconcile, only when it changed (a stale one is a 409 the work queue retries); the
// Accepted condition of an Execution that cannot run as declared; the Guarded condition of one
// whose Agent needs a tool-call gate (while none can decide its calls it waits Pending, or
// times out, and says why); and what follows a written status: its engine events published,
// traced, counted and recorded as Kubernetes Events.
import { setCondition } from "../api/conditions.js";
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";
import type { JudgeRunStep } from "../engine/judge-run.js";
import { isTerminal, type EngineState, type RunLimits } from "../engine/outer-loop.js";
import type { ExecutionTraces, TracedExecution } from "../telemetry/execution-trace.js";
import type { ExecutionMetrics } from "../telemetry/metrics.js";
import type { GateStatus, Guarding } from "./gate-status.js";
import { toGavelEvents, type EngineEvent, type ExecutionEventPublisher } from "./execution-events.js";
import { namespaceOf, type ExecutionParts, type RunContext } from "./execution-parts.js";
import { engineEventNote } from "./kubernetes-events.js";
import { EventQueue } from "./runtime/event-queue.js";
import { EventRecorder, type EventNote } from "./runtime/event-recorder.js";

/** Condition type the reconciler sets when it cannot run an Execution as specified. */
export const ACCEPTED = "Accepted";
/** Condition on an Execution that needs a gate: False while none can be reached (it then does not start). */
export const GUARDED = "Guarded";
/** A running Execution's tool-call counts reach its status at most this often (unless it is written anyway). */
const TOOL_CALL_FOLD_MS = 1000;

/** What the status writer reports to, besides the API server. */
export interface StatusOptions {
  /** Counters of ended runs, iterations and judges. */
  outcomes: ExecutionMetrics;
  /** The JetStream event stream (staged before the write, published after); none when undefined. */
  events?: ExecutionEventPublisher;
  /** Spans from the events of each status write; none when undefined. */
  traces?: ExecutionTraces;
  /** The tool-call gate: the decided calls a status shows (the run sets the Guarded condition itself, from the gate's plain data). */
  gate?: GateStatus;
  /** How long an Execution waits for its Agent to appear before it fails. Default 10 s. */
  agentGraceMs?: number;
}

/** Writes Executions' statuses and what follows them. */
export class ExecutionStatusWriter {
  /** Kubernetes Events go out in the background (event-queue.ts): a reconcile does not wait for them. */
  private readonly kubeEvents: EventQueue;
  /** When each running Execution's tool calls were last folded into its status (foldToolCalls). */
  private readonly toolCallsFolded = new Map<string, number>();

  constructor(
    private readonly parts: ExecutionParts,
    private readonly opts: StatusOptions,
  ) {
    this.kubeEvents = new EventQueue(new EventRecorder(parts.core, "gavel-controller", parts.logger, parts.now), { now: parts.now });
    opts.outcomes.kubeEventsPending.readWith({}, () => this.kubeEvents.pending);
  }

  /** Resolves once every Kubernetes Event queued so far is sent (a stopping controller waits for it). */
  flushEvents(): Promise<void> {
    return this.kubeEvents.flush();
  }

  /** Replaces the status when it changed; the resourceVersion makes a stale write a 409 (retried). A gone Execution is left alone. */
  async write(ex: Execution, status: ExecutionStatus): Promise<void> {
    if (sameStatus(ex.status, status)) return;
    const got = await this.parts.resources.replaceStatus(ex, status);
    if (got === undefined) return;
    this.parts.count.statusWrite();
    ex.metadata.resourceVersion = got.metadata.resourceVersion;
    ex.status = got.status;
  }

  /**
   * Writes a run's status (with the gate's tool calls folded in); its events
   * are staged before (an outbox a restarted controller reads) and published, traced, counted
   * and recorded only once the status that holds the transitions is written: a retried
   * reconcile (409) decides them again then. A run whose Agent needs a gate carries the
   * Guarded condition (`guarding`, the gate's plain data). Returns, when the tool-call fold was
   * skipped, how soon to look again.
   */
  async writeRun(ctx: RunContext, state: EngineState, events: EngineEvent[], guarding?: Guarding): Promise<number | undefined> {
    const ex = ctx.execution;
    if (guarding?.guarded === true) setGuarded(state.status, guarding.blocked, new Date(this.parts.now()), ex.metadata.generation);
    const { events: stream, traces } = this.opts;
    const before = ex.metadata.resourceVersion;
    const streamed = stream === undefined && traces === undefined ? [] : toGavelEvents(ex, events, new Date(this.parts.now()));
    const staged = streamed.length > 0 && stream !== undefined ? await stream.stage(ex, streamed, state.status) : undefined;
    const foldAgainInMs = this.foldToolCalls(ex, state.status);
    await this.write(ex, state.status);
    if (ex.metadata.resourceVersion !== before) {
      if (ex.spec.parent === undefined && streamed.length > 0) traces?.observe(traced(ex, ctx.agent), streamed);
      this.countOutcomes(events);
      stream?.commit(ex, streamed, staged);
      for (const e of events) await this.kubeEvents.record(ex, engineEventNote(e.event, e.data));
    }
    return foldAgainInMs;
  }

  /** Records one Event on `ex` (best effort, as every Event: src/controller/runtime/event-recorder.ts). */
  async note(ex: Execution, note: EventNote): Promise<void> {
    await this.kubeEvents.record(ex, note);
  }

  /** Writes a judge child's final status and counts it once, with the write that ends it. */
  async writeJudgeEnd(child: Execution, step: Extract<JudgeRunStep, { type: "finish" }>): Promise<void> {
    const before = child.metadata.resourceVersion;
    await this.write(child, step.status);
    if (child.metadata.resourceVersion === before) return;
    const purpose = child.spec.parent?.purpose ?? "validation";
    const started = Date.parse(child.status?.startTime ?? "");
    this.opts.outcomes.judgeResults.inc({ purpose, result: step.outcome.ok ? "verdict" : step.outcome.rejection });
    if (!Number.isNaN(started)) this.opts.outcomes.judgeSeconds.observe({ purpose }, Math.max(0, this.parts.now() - started) / 1000);
  }

  /** A run whose Agent is missing: waits a short grace (applied together, the Execution may come first), then is refused naming the field. */
  async agentMissing(ex: Execution): Promise<{ requeueAfterMs?: number }> {
    const created = Date.parse(ex.metadata.creationTimestamp ?? "") || this.parts.now();
    const grace = this.opts.agentGraceMs ?? 10_000;
    if (this.parts.now() - created < grace) return { requeueAfterMs: Math.min(1000, grace) };
    return this.refuse(
      ex,
      "AgentNotFound",
      `spec.agentRef.name: Agent "${ex.spec.agentRef.name}" not found in namespace ${namespaceOf(ex)}`,
    );
  }

  /** Ends an Execution that cannot run as declared: Failed, with an Accepted=False condition whose message names the field. */
  async refuse(ex: Execution, reason: string, message: string): Promise<{ requeueAfterMs?: number }> {
    const now = new Date(this.parts.now());
    const generation = ex.metadata.generation;
    const conditions = setCondition(ex.status?.conditions, { type: ACCEPTED, status: "False", reason, message }, now, generation);
    await this.write(ex, {
      ...ex.status,
      phase: "Failed",
      message,
      completionTime: now.toISOString(),
      conditions,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    });
    return {};
  }

  /** Forgets what it kept for an Execution that ended or went. */
  forget(key: string): void {
    this.toolCallsFolded.delete(key);
  }

  /**
   * Folds the gate's tool calls into a status about to be written, at most once per
   * TOOL_CALL_FOLD_MS for an Execution unless the status changes anyway: every decision
   * changes the counts, and each status write wakes this reconciler again through the
   * watch, so folding on every reconcile kept a busy worker's Execution in a loop of
   * GET, GET, PUT on the event loop the gate answers from. Returns, when it skipped the
   * fold, how soon to look again.
   */
  private foldToolCalls(ex: Execution, status: ExecutionStatus): number | undefined {
    const gate = this.opts.gate;
    if (gate === undefined) return undefined;
    const key = `${namespaceOf(ex)}/${ex.metadata.name}`;
    const since = this.parts.now() - (this.toolCallsFolded.get(key) ?? -Infinity);
    if (since < TOOL_CALL_FOLD_MS && sameStatus(ex.status, status)) return TOOL_CALL_FOLD_MS - since;
    gate.annotate(ex, status);
    if (isTerminal(status.phase)) this.toolCallsFolded.delete(key);
    else this.toolCallsFolded.set(key, this.parts.now());
    return undefined;
  }

  /** Counts the iterations and runs that ended in a status just written (engine events `iteration.finished`, `execution.phase`). */
  private countOutcomes(events: readonly EngineEvent[]): void {
    for (const e of events) {
      if (e.event === "iteration.finished" && typeof e.data.outcome === "string")
        this.opts.outcomes.iterations.inc({ outcome: e.data.outcome });
      if (e.event === "execution.phase" && typeof e.data.phase === "string" && isTerminal(e.data.phase as ExecutionStatus["phase"]))
        this.opts.outcomes.executions.inc({ phase: e.data.phase });
    }
  }
}

/** Waiting for a gate, the Execution is re-checked this often. */
const GATE_RECHECK_MS = 2000;

/**
 * The status of an Execution that may not start until a gate can decide its tool calls:
 * Pending with the Guarded condition saying why, or TimedOut once its own deadline (from
 * its creation; without one, what max_iterations iterations may take) has passed.
 */
export function waitingForGate(
  ex: Execution,
  limits: RunLimits,
  why: string,
  now: number,
): { status: ExecutionStatus; requeueAfterMs?: number } {
  const created = Date.parse(ex.metadata.creationTimestamp ?? "") || now;
  const limitSeconds = limits.executionSeconds ?? limits.iterationSeconds * limits.maxIterations;
  const deadline = created + limitSeconds * 1000;
  const status: ExecutionStatus = { ...structuredClone(ex.status ?? {}) };
  setGuarded(status, why, new Date(now), ex.metadata.generation);
  if (now >= deadline) {
    const message = `never started within its deadline of ${limitSeconds}s: ${why}`;
    return { status: { ...status, phase: "TimedOut", message, completionTime: new Date(now).toISOString() } };
  }
  return {
    status: { ...status, phase: "Pending", message: `waiting for a tool-call gate: ${why}` },
    requeueAfterMs: Math.min(GATE_RECHECK_MS, deadline - now),
  };
}

/** Sets the Guarded condition: True while a gate decides the Execution's tool calls, False with why not. */
export function setGuarded(status: ExecutionStatus, why: string | undefined, now: Date, generation?: number): void {
  const next =
    why === undefined
      ? ({
          type: GUARDED,
          status: "True",
          reason: "GateServing",
          message: "every tool call is decided by the gate before it runs",
        } as const)
      : ({ type: GUARDED, status: "False", reason: "GateUnavailable", message: why } as const);
  status.conditions = setCondition(status.conditions, next, now, generation);
}

/** What a trace says about an Execution. */
export function traced(ex: Execution, agent: Agent): TracedExecution {
  return {
    namespace: namespaceOf(ex),
    name: ex.metadata.name,
    ...(ex.metadata.uid !== undefined ? { uid: ex.metadata.uid } : {}),
    agent: agent.metadata.name,
  };
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
