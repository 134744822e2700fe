// The local-mode driver: runs one Execution's outer loop over the Workloads port (Docker in
// `gavel run`), with the state in memory. It performs the engine's actions (worker
// containers, reader containers for file reads, judge containers, stops), running each
// workload to its end with runToEnd (ADR 0030), and feeds what it observes back.
import { posix } from "node:path";
import type { ToolCallProposal } from "../api/protocol.js";
import type { Agent, Execution, SemanticValidatorSpec } from "../api/types.js";
import { toolJudgeChild, validationJudgeChild } from "../children/child-executions.js";
import { judgeToolCall } from "../children/tool-judge.js";
import { defaultImages } from "../children/images.js";
import { agentImage, runtimeTable, type RuntimeTable } from "../children/runtime-table.js";
import { judgeWorkload, ownerMarks, workerWorkload } from "../children/workloads.js";
import type { JudgeRunResult } from "../gate/gate.js";
import { applySummary } from "../gate/tool-call-summary.js";
import type { IterationTally } from "../gate/tool-call.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { judgeRunStep, stoppedByParent, type JudgeRunContext, type JudgeRunObservation } from "../engine/judge-run.js";
import { judgeStatus } from "../engine/phases.js";
import {
  agentPlan,
  decide,
  initialState,
  isTerminal,
  nextDeadline,
  observeFile,
  observeJudge,
  observeWorker,
  requestCancel,
  runLimits,
  type AgentPlan,
  type EngineAction,
  type EngineContext,
  type EngineState,
  type FileRequest,
  type JudgeChildRequest,
} from "../engine/outer-loop.js";
import type { FileContent } from "../engine/validators.js";
import { messageOf } from "../errors.js";
import type { GavelEvent } from "../api/events.js";
import { imageReader, readerContent, volumeReader } from "../runtime/file-reader.js";
import { runToEnd, Stop } from "../runtime/run-to-end.js";
import type { WorkloadMount, WorkloadPlacement, WorkloadResult, Workloads, WorkloadSpec } from "../runtime/workload.js";
import type { ExecutionTrace } from "../telemetry/execution-trace.js";
import { createWorkspace, type Workspace } from "./workspace.js";

/** Everything a local run needs; the composition root (the CLI) builds it. */
export interface LocalRunOptions {
  execution: Execution;
  /** The Execution's Agent, defaults applied. */
  agent: Agent;
  /** Judge Agents by name. */
  judges: ReadonlyMap<string, Agent>;
  /** Where its workloads run (DockerWorkloads in `gavel run`); each is run to its end here. */
  workloads: Workloads;
  /** Image of the readers of workspace files (needs `sh` and `cat`); default defaultImages().reader. */
  readerImage?: string;
  /** Called for every event, in order (the live tree; the NATS publisher). */
  onEvent?: (event: GavelEvent) => void;
  /** NATS the worker proposes its tool calls on (the inner-loop gate), when one runs. */
  natsUrl?: string;
  /** Extra env for the worker. */
  workerEnv?: Record<string, string>;
  /** Extra mounts for the worker beside its workspaces (the gate's socket, for a worker without network). */
  workerMounts?: WorkloadMount[];
  /** Images of language runtimes (`spec.runtime.language`); default the built-in table. */
  runtimes?: RuntimeTable;
  /** Reads the clock; tests may pin it. */
  now?: () => number;
  /** Creates the workspace volumes; default temporary host directories. */
  workspace?: (agent: Agent, execution: string) => Promise<Workspace>;
  /** The Execution's trace (when tracing is on): fed every event; its workers get their iteration's TRACEPARENT. */
  trace?: ExecutionTrace;
}

/** Seconds a file reader may take before it is killed. */
const READER_TIMEOUT_SECONDS = 30;

/** How a local run ended. */
export interface LocalRunResult {
  execution: Execution;
  /** The judge children as local mode ran them: child Executions with their verdict or rejection. */
  children: Execution[];
}

/** Runs one Execution end to end; resolve with its final state. Call `cancel` to stop it early. */
export class LocalRun {
  private readonly state: EngineState = initialState();
  private readonly ctx: EngineContext;
  /** What the engine takes from the Agent, worked out once. */
  private readonly plan: AgentPlan;
  /** The workloads running now: how to stop each, and its end. */
  private readonly running = new Map<string, { stop: Stop; end: Promise<unknown> }>();
  private readonly children = new Map<string, Execution>();
  private workspace: Workspace | undefined;
  private wake: (() => void) | undefined;
  private dirty = false;
  private readonly proposedCalls = new Set<string>();
  private fatal: Error | undefined;
  private readonly now: () => number;
  private readonly namespace: string;
  private readonly place: WorkloadPlacement;

  constructor(private readonly opts: LocalRunOptions) {
    this.ctx = { execution: opts.execution };
    this.plan = agentPlan(opts.agent, opts.judges, runLimits(opts.execution, opts.agent));
    this.now = opts.now ?? Date.now;
    this.namespace = opts.execution.metadata.namespace ?? "default";
    this.place = { namespace: this.namespace };
  }

  /** Asks the run to stop: running containers are killed and the Execution ends Cancelled. */
  cancel(): void {
    requestCancel(this.state);
    this.wake?.();
  }

  /** Runs the loop until the Execution is final; the workspace is removed afterwards. */
  async run(): Promise<LocalRunResult> {
    // Docker has no native sidecar: an image server is refused before any container starts (ADR 0066).
    const image = (this.opts.agent.spec.mcp_servers ?? []).findIndex((s) => s.image !== undefined);
    if (image >= 0)
      throw new Error(
        `spec.mcp_servers[${image}].image (server ${this.opts.agent.spec.mcp_servers?.[image]?.name ?? ""}): a server container runs beside the worker on a cluster only; local mode (gavel run) takes command and url servers`,
      );
    this.workspace = await (this.opts.workspace ?? createWorkspace)(this.opts.agent, this.opts.execution.metadata.name);
    try {
      for (;;) {
        const actions = decide(this.plan, this.ctx, this.state, this.now());
        for (const a of actions) this.perform(a);
        if (isTerminal(this.state.status.phase)) break;
        await this.sleepUntilObserved();
        const fatal = this.fatalError();
        if (fatal !== undefined) {
          // Stop whatever is still running before giving up on the run.
          requestCancel(this.state);
          for (const a of decide(this.plan, this.ctx, this.state, this.now())) this.perform(a);
          throw fatal;
        }
      }
      // Stopped workloads report back asynchronously; wait so nothing outlives the run.
      await this.allEnded();
    } finally {
      for (const w of this.running.values()) w.stop.abort();
      await this.allEnded();
      await this.workspace.remove();
    }
    this.foldToolCalls();
    return {
      execution: { ...this.opts.execution, status: this.state.status },
      children: [...this.children.values()],
    };
  }

  private async allEnded(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((w) => w.end.catch(() => undefined)));
  }

  /**
   * Runs one workload to its end (ensure, observe, output, retire); the engine's `stop` action
   * for its name aborts it, and it ends `cancelled`.
   */
  private async runWorkload(spec: WorkloadSpec): Promise<WorkloadResult> {
    if (this.running.has(spec.name)) throw new Error(`a workload named ${spec.name} is running already`);
    const stop = new Stop();
    const end = runToEnd(this.opts.workloads, spec, this.place, { signal: stop });
    this.running.set(spec.name, { stop, end });
    try {
      return await end;
    } finally {
      this.running.delete(spec.name);
    }
  }

  private fatalError(): Error | undefined {
    return this.fatal;
  }

  private sleepUntilObserved(): Promise<void> {
    // Something observed while actions were being performed (before anyone slept) counts.
    if (this.dirty) {
      this.dirty = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const deadline = nextDeadline(this.plan, this.state);
      const timer = deadline === undefined ? undefined : setTimeout(() => done(), Math.max(0, deadline - this.now()) + 5);
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        this.dirty = false;
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
    });
  }

  private observed(): void {
    this.dirty = true;
    this.wake?.();
  }

  private fail(err: unknown, what: string): void {
    this.fatal ??= new Error(`${what}: ${messageOf(err)}`, { cause: err });
    this.observed();
  }

  private perform(a: EngineAction): void {
    switch (a.type) {
      case "event":
        this.emit(a.event, a.data);
        return;
      case "start_worker":
        void this.startWorker(a).catch((err: unknown) => this.fail(err, `starting the worker of iteration ${a.iteration}`));
        return;
      case "read_files":
        void this.readFiles(a.files).catch((err: unknown) => this.fail(err, `reading files for validator ${a.validatorIndex}`));
        return;
      case "spawn_judge":
        void this.spawnJudge(a.child);
        return;
      case "stop":
        for (const name of a.names) this.running.get(name)?.stop.abort();
        for (const name of a.names) {
          const child = this.children.get(name);
          if (child !== undefined) this.settleChild(child, stoppedByParent(a.reason));
        }
        return;
      case "finish":
        return;
    }
  }

  private emit(type: string, data: Record<string, unknown>): void {
    const name = this.opts.execution.metadata.name;
    const id = `${name}:${this.seq++}:${type}`;
    // A judge's own events are filed under the child Execution, in its parent's tree.
    const execution = type.startsWith("judge.") && typeof data.child === "string" ? data.child : name;
    const event: GavelEvent = {
      id,
      time: new Date(this.now()).toISOString(),
      namespace: this.namespace,
      root: name,
      execution,
      type,
      data,
    };
    this.opts.trace?.observe(event);
    this.opts.onEvent?.(event);
  }
  private seq = 0;
  private readers = 0;

  /**
   * Where the local gate's decided calls are (its ToolCallStore's tallies, as on a cluster):
   * the status gets their per-iteration summary, and validation judges their tool_call_history.
   */
  useToolCalls(tallies: (namespace: string, execution: string) => ReadonlyMap<number, IterationTally>): void {
    this.toolCallTallies = tallies;
  }
  private toolCallTallies: ((namespace: string, execution: string) => ReadonlyMap<number, IterationTally>) | undefined;

  private foldToolCalls(): void {
    const tallies = this.toolCallTallies?.(this.namespace, this.opts.execution.metadata.name);
    if (tallies !== undefined && tallies.size > 0) applySummary(this.state.status, tallies);
  }

  /** Publishes an event of this run (the local gate reports its decisions through here). */
  publish(type: string, data: Record<string, unknown>): void {
    this.emit(type, data);
  }

  /**
   * Runs one tool_validation judge for a proposed call as a judge container (the gate's
   * JudgeRunner): the child the children module makes (reference tool-judge payload,
   * read-only mounts, the judge's network), its books kept by the tool-judge step.
   */
  async runToolJudge(
    entry: SemanticValidatorSpec,
    proposal: ToolCallProposal,
    violations: readonly string[],
    index: number,
  ): Promise<JudgeRunResult> {
    const t = toolJudgeChild({
      parent: this.opts.execution,
      worker: this.opts.agent,
      judge: this.opts.judges.get(entry.judge_agent),
      entry,
      index,
      proposal,
      policyViolations: violations,
      workerMounts: (this.workspace as Workspace).mounts,
      stdin: true,
      ...(this.opts.runtimes !== undefined ? { runtimes: this.opts.runtimes } : {}),
    });
    return judgeToolCall(t, proposal, {
      publish: (events) => {
        for (const e of events) this.emit(e.event, e.data);
      },
      announced: this.proposedCalls,
      // A ChildRef in the Execution's status and the child Execution in the run's result.
      track: (ref) => (this.state.status.children ??= []).push(ref),
      run: (child) =>
        this.runJudgeChild(
          child.execution,
          this.opts.judges.get(entry.judge_agent),
          child.workload ?? child.problem ?? "the judge cannot run",
        ),
    });
  }

  private async startWorker(a: Extract<EngineAction, { type: "start_worker" }>): Promise<void> {
    const spec = workerWorkload(this.opts.execution, this.opts.agent, a, (this.workspace as Workspace).mounts, {
      natsUrl: this.opts.natsUrl ?? "",
      ...(this.opts.trace !== undefined ? { traceParent: this.opts.trace.iterationParent(a.iteration) } : {}),
      ...(this.opts.workerEnv !== undefined ? { env: this.opts.workerEnv } : {}),
      ...(this.opts.runtimes !== undefined ? { runtimes: this.opts.runtimes } : {}),
    });
    spec.mounts.push(...(this.opts.workerMounts ?? []));
    const r = await this.runWorkload(spec);
    observeWorker(this.state, {
      iteration: a.iteration,
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
      timedOut: r.timedOut,
      cancelled: r.cancelled,
    });
    this.observed();
  }

  /**
   * Reads what a validator needs through reader workloads (runtime/file-reader.ts): workspace
   * files with the volume mounted read-only (never the worker's own report), image files in
   * the agent's image. The same readers the controller runs as pods.
   */
  private async readFiles(files: FileRequest[]): Promise<void> {
    const results = await Promise.all(files.map(async (f) => [f.key, await this.readOne(f)] as const));
    for (const [key, content] of results) observeFile(this.state, key, content);
    this.observed();
  }

  private async readOne(f: FileRequest): Promise<FileContent> {
    const name = `${this.opts.execution.metadata.name}-${f.from === "image" ? "image-reader" : "reader"}-${this.readers++}`;
    let spec: WorkloadSpec;
    if (f.from === "workspace") {
      const ws = this.workspace as Workspace;
      const mount = ws.mountFor(f.path);
      if (mount === undefined) {
        return {
          ok: false,
          reason: "unreadable",
          detail: `${f.path} is not inside any workspace volume (${ws.mounts.map((m) => m.mountPath).join(", ")})`,
        };
      }
      spec = volumeReader(name, this.opts.readerImage ?? defaultImages().reader, mount, posix.normalize(f.path), READER_TIMEOUT_SECONDS);
    } else {
      const image = agentImage(this.opts.agent, this.opts.runtimes ?? runtimeTable(), defaultImages().worker) ?? defaultImages().worker;
      spec = imageReader(name, image, f.path, READER_TIMEOUT_SECONDS);
    }
    try {
      return readerContent(await this.runWorkload(spec), f.from);
    } catch (err) {
      return { ok: false, reason: "unreadable", detail: `the reader could not run: ${messageOf(err)}` };
    }
  }

  /** A validation judge: its child Execution, then its container; a judge that cannot run is a failed judge. */
  private async spawnJudge(c: JudgeChildRequest): Promise<void> {
    const judge = this.opts.judges.get(c.judge);
    const ws = this.workspace as Workspace;
    this.foldToolCalls();
    const v = validationJudgeChild({
      parent: this.opts.execution,
      owner: ownerMarks(this.opts.execution),
      worker: this.opts.agent,
      judge,
      request: c,
      output: this.state.worker?.stdout ?? "",
      workerMounts: ws.mounts,
      status: this.state.status,
    });
    const workload =
      v.problem === undefined && judge !== undefined
        ? judgeWorkload(v.execution, judge, ws.mounts, {
            stdin: true,
            ...(this.opts.runtimes !== undefined ? { runtimes: this.opts.runtimes } : {}),
          })
        : (v.problem ?? "no judge");
    observeJudge(this.state, c.name, await this.runJudgeChild(v.execution, judge, workload));
    this.observed();
  }

  /**
   * Runs a judge child to its end as the engine decides it (judge-run.ts): its container, or
   * `workload` the reason it cannot run. The child is kept in the run's result with its final
   * status (one the engine already stopped keeps its phase); returns its outcome.
   */
  private async runJudgeChild(child: Execution, judge: Agent | undefined, workload: WorkloadSpec | string): Promise<JudgeOutcome> {
    this.children.set(child.metadata.name, child);
    const ctx: JudgeRunContext = { child, judge };
    let step = judgeRunStep(ctx, typeof workload === "string" ? { problem: workload } : {}, this.now());
    if (step.type === "run" && typeof workload !== "string") {
      child.status = step.status;
      step = judgeRunStep(ctx, await this.runJudge(workload), this.now());
    }
    if (step.type !== "finish") throw new Error(`judge child ${child.metadata.name}: its workload ended but the engine did not finish it`);
    if (!isTerminal(child.status?.phase)) child.status = step.status;
    return step.outcome;
  }

  /** Runs a judge's container to its end: what it printed, or why it could not be started. */
  private async runJudge(spec: WorkloadSpec): Promise<JudgeRunObservation> {
    try {
      return { end: await this.runWorkload(spec) };
    } catch (err) {
      return { problem: `the judge could not be started: ${messageOf(err)}` };
    }
  }

  /** A child's final status when its parent stops it; one that ended already keeps its phase. */
  private settleChild(child: Execution, outcome: JudgeOutcome): void {
    if (!isTerminal(child.status?.phase)) child.status = judgeStatus(child.status, outcome, new Date(this.now()));
  }
}

/** Runs one Execution locally (see LocalRun). */
export function runLocal(opts: LocalRunOptions): Promise<LocalRunResult> {
  return new LocalRun(opts).run();
}
