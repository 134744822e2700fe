// The local-mode driver: runs one Execution's outer loop against a WorkloadRuntime (Docker
// in `gavel run`), with the state in memory. It performs the engine's actions (worker
// containers, file reads, judge containers, stops) and feeds what it observes back.
import { agentEnvironment } from "../agent/config.js";
import type { ToolCallProposal } from "../api/protocol.js";
import { API_VERSION, type Agent, type ChildRef, type Execution, type JsonObject, type SemanticValidatorSpec } from "../api/types.js";
import type { JudgeRunResult } from "../gate/gate.js";
import { judgeTimeoutSeconds } from "../engine/durations.js";
import { judgeChildName, workerName } from "../engine/child-names.js";
import { judgeOutcome, type JudgeOutcome } from "../engine/gradient.js";
import { buildToolCallPayload, buildValidationPayload } from "../engine/judge-payload.js";
import {
  decide,
  initialState,
  isTerminal,
  nextDeadline,
  observeFile,
  observeJudge,
  observeWorker,
  requestCancel,
  type EngineAction,
  type EngineContext,
  type EngineState,
  type FileRequest,
  type JudgeChildRequest,
} from "../engine/outer-loop.js";
import type { FileContent } from "../engine/validators/outcome.js";
import type { GavelEvent } from "../transport/event-stream.js";
import { readFileFromImage } from "../runtime/image-file.js";
import type { WorkloadHandle, WorkloadRuntime, WorkloadSpec } from "../runtime/workload.js";
import { parseMemoryBytes, parseNanoCpus } from "./resources.js";
import { createWorkspace, type Workspace } from "./workspace.js";

/** Largest judge payload also passed in env GAVEL_INPUT (MAX_ARG_STRLEN is 128 KiB). */
export const ENV_PAYLOAD_LIMIT = 96 * 1024;

/** Image a worker runs when its Agent names none. */
export const DEFAULT_WORKER_IMAGE = "gavel/agent:dev";

/** Everything a local run needs; the composition root (the CLI) builds it. */
export interface LocalRunOptions {
  execution: Execution;
  /** The Execution's Agent, defaults applied. */
  agent: Agent;
  /** Judge Agents by name. */
  judges: ReadonlyMap<string, Agent>;
  runtime: WorkloadRuntime;
  /** Called for every event, in order (the live tree; the NATS publisher). */
  onEvent?: (event: GavelEvent) => void;
  /** NATS the worker proposes its tool calls on (the inner-loop gate), when one runs. */
  natsUrl?: string;
  /** Extra env for the worker. */
  workerEnv?: Record<string, string>;
  /** Reads the clock; tests may pin it. */
  now?: () => number;
  /** Creates the workspace volumes; default temporary host directories. */
  workspace?: (agent: Agent, execution: string) => Promise<Workspace>;
}

/** A judge child as local mode ran it: the child Execution with its verdict or rejection. */
export type ChildExecution = Execution;

/** How a local run ended. */
export interface LocalRunResult {
  execution: Execution;
  children: ChildExecution[];
}

/** Runs one Execution end to end; resolve with its final state. Call `cancel` to stop it early. */
export class LocalRun {
  private readonly state: EngineState = initialState();
  private readonly ctx: EngineContext;
  private readonly handles = new Map<string, WorkloadHandle>();
  private readonly children = new Map<string, ChildExecution>();
  private workspace: Workspace | undefined;
  private wake: (() => void) | undefined;
  private dirty = false;
  private readonly proposedCalls = new Set<string>();
  private fatal: Error | undefined;
  private readonly now: () => number;
  private readonly namespace: string;

  constructor(private readonly opts: LocalRunOptions) {
    this.ctx = { execution: opts.execution, agent: opts.agent, judges: opts.judges };
    this.now = opts.now ?? Date.now;
    this.namespace = opts.execution.metadata.namespace ?? "default";
  }

  /** Asks the run to stop: running containers are killed and the Execution ends Cancelled. */
  cancel(): void {
    requestCancel(this.state);
    this.wake?.();
  }

  /** Runs the loop until the Execution is final; the workspace is removed afterwards. */
  async run(): Promise<LocalRunResult> {
    this.workspace = await (this.opts.workspace ?? createWorkspace)(this.opts.agent, this.opts.execution.metadata.name);
    try {
      for (;;) {
        const actions = decide(this.ctx, this.state, this.now());
        for (const a of actions) this.perform(a);
        if (isTerminal(this.state.status.phase)) break;
        await this.sleepUntilObserved();
        const fatal = this.fatalError();
        if (fatal !== undefined) {
          // Stop whatever is still running before giving up on the run.
          requestCancel(this.state);
          for (const a of decide(this.ctx, this.state, this.now())) this.perform(a);
          throw fatal;
        }
      }
      // Stopped workloads report back asynchronously; wait so nothing outlives the run.
      await Promise.all([...this.handles.values()].map((h) => h.wait().catch(() => undefined)));
    } finally {
      await Promise.all([...this.handles.values()].map((h) => h.stop().catch(() => undefined)));
      await this.workspace.remove();
    }
    return {
      execution: { ...this.opts.execution, status: this.state.status },
      children: [...this.children.values()],
    };
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
      const deadline = nextDeadline(this.ctx, this.state);
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
    this.fatal ??= new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
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
        // A judge that cannot even start is a failed judge; the run goes on and says why.
        void this.spawnJudge(a.child).catch((err: unknown) =>
          this.finishJudge(this.children.get(a.child.name) ?? this.childExecution(a.child, undefined), {
            ok: false,
            rejection: "failed",
            detail: `the judge could not be started: ${err instanceof Error ? err.message : String(err)}`,
          }),
        );
        return;
      case "stop":
        for (const name of a.names) void this.handles.get(name)?.stop().catch(() => undefined);
        for (const name of a.names) {
          const child = this.children.get(name);
          if (child?.status !== undefined && !isTerminal(child.status.phase)) {
            child.status.phase = a.reason === "cancelled" ? "Cancelled" : "TimedOut";
            child.status.rejection = a.reason;
          }
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
    this.opts.onEvent?.({ id, time: new Date(this.now()).toISOString(), namespace: this.namespace, root: name, execution, type, data });
  }
  private seq = 0;

  /** Publishes an event of this run (the local gate reports its decisions through here). */
  publish(type: string, data: Record<string, unknown>): void {
    this.emit(type, data);
  }

  /**
   * Runs one tool_validation judge for a proposed call as a judge container (the gate's
   * JudgeRunner): the reference tool-judge payload, read-only mounts, the judge's network.
   */
  async runToolJudge(entry: SemanticValidatorSpec, proposal: ToolCallProposal, violations: readonly string[], index: number): Promise<JudgeRunResult> {
    const judge = this.opts.judges.get(entry.judge_agent);
    // `<exec>-i<N>-t<entry>-s<step>-<judge>`: unique per tool call, distinct from validation children.
    const worker = workerName(this.opts.execution.metadata.name, proposal.iteration);
    const judgeSuffix = judgeChildName(this.opts.execution.metadata.name, proposal.iteration, index, entry.judge_agent).slice(`${worker}-v${index}-`.length);
    const child = `${worker}-t${index}-s${proposal.step}-${judgeSuffix}`;
    // The tree hangs tool judges under their call, so the call is shown before its decision.
    const callKey = `${proposal.iteration}/${proposal.step}`;
    if (!this.proposedCalls.has(callKey)) {
      this.proposedCalls.add(callKey);
      this.emit("toolcall.proposed", { iteration: proposal.iteration, step: proposal.step, tool: proposal.tool });
    }
    this.emit("judge.spawned", { child, judge: entry.judge_agent, iteration: proposal.iteration, step: proposal.step, purpose: "tool_validation" });
    // The child is recorded like a validation judge's: a ChildRef in the Execution's status
    // (purpose tool_validation, with the call's id) and a child Execution in the run's result.
    const ref: ChildRef = { name: child, purpose: "tool_validation", iteration: proposal.iteration, validatorIndex: index, judge: entry.judge_agent, toolCallId: proposal.toolCallId, phase: "Running" };
    (this.state.status.children ??= []).push(ref);
    const record = this.toolChildExecution(child, entry, proposal, index);
    this.children.set(child, record);
    const finish = (r: Omit<JudgeRunResult, "child">): JudgeRunResult => {
      const phase = r.result !== undefined ? "Succeeded" : r.rejection === "timed_out" ? "TimedOut" : r.rejection === "cancelled" ? "Cancelled" : "Failed";
      // A child the engine already stopped (cancel, deadline) keeps the phase it was given.
      if (ref.phase === "Running") ref.phase = phase;
      const st = record.status ?? {};
      record.status = st;
      if (st.phase === "Running") st.phase = phase;
      st.completionTime = new Date(this.now()).toISOString();
      if (r.result !== undefined) {
        st.verdict = r.result;
        st.score = r.result.score;
      } else {
        st.rejection = r.rejection ?? "failed";
        if (r.detail !== undefined) st.message = r.detail;
      }
      this.emit("judge.finished", {
        child,
        judge: entry.judge_agent,
        ...(r.result !== undefined ? { score: r.result.score, confidence: r.result.confidence } : { rejection: r.rejection }),
      });
      return { ...r, child };
    };
    if (judge === undefined) return finish({ rejection: "failed", detail: `judge agent "${entry.judge_agent}" is not known` });
    const image = judge.spec.runtime?.image;
    if (image === undefined) return finish({ rejection: "failed", detail: `judge ${entry.judge_agent} names no image (spec.runtime.image)` });
    const ws = this.workspace as Workspace;
    let input: string;
    try {
      input = JSON.stringify(
        buildToolCallPayload({
          judge,
          validator: entry,
          ...(this.opts.agent.spec.task?.instruction !== undefined ? { task: this.opts.agent.spec.task.instruction } : {}),
          proposal,
          availableTools: (this.opts.agent.spec.tools ?? []).map((t) => (typeof t === "string" ? t : t.name)),
          workerMounts: ws.mounts.map((m) => m.mountPath),
          policyViolations: [...violations],
        }),
      );
    } catch (err) {
      return finish({ rejection: "failed", detail: err instanceof Error ? err.message : String(err) });
    }
    record.spec.input = JSON.parse(input) as JsonObject;
    try {
      const handle = await this.opts.runtime.start({
        name: child,
        image,
        env: { ...(Buffer.byteLength(input) <= ENV_PAYLOAD_LIMIT ? { GAVEL_INPUT: input } : {}), GAVEL_EXECUTION: child },
        stdin: input,
        mounts: ws.readOnly(),
        network: judge.spec.security?.network?.mode === "allow" ? "allow" : "none",
        resources: this.resources(judge),
        timeoutSeconds: judgeTimeoutSeconds(entry, judge),
        labels: { "gavel.dev/execution": child, "gavel.dev/parent": this.opts.execution.metadata.name },
      });
      this.handles.set(child, handle);
      const r = await handle.wait();
      this.handles.delete(child);
      const validation = judge.spec.execution?.validation;
      const outcome = judgeOutcome({
        exitCode: r.exitCode,
        stdout: r.stdout,
        timedOut: r.timedOut,
        cancelled: r.cancelled,
        ...(validation !== undefined && !Array.isArray(validation) ? { validation } : {}),
      });
      return finish(outcome.ok ? { result: outcome.result } : { rejection: outcome.rejection, detail: outcome.detail });
    } catch (err) {
      return finish({ rejection: "failed", detail: `the judge could not be started: ${err instanceof Error ? err.message : String(err)}` });
    }
  }

  /** The child Execution of one tool_validation judge, Running until its verdict. */
  private toolChildExecution(name: string, entry: SemanticValidatorSpec, proposal: ToolCallProposal, index: number): ChildExecution {
    const parent = this.opts.execution;
    return {
      apiVersion: API_VERSION,
      kind: "Execution",
      metadata: { name, namespace: this.namespace, labels: { "gavel.dev/parent": parent.metadata.name } },
      spec: {
        agentRef: { name: entry.judge_agent },
        parent: {
          name: parent.metadata.name,
          uid: parent.metadata.uid ?? "",
          purpose: "tool_validation",
          iteration: proposal.iteration,
          validatorIndex: index,
          toolCallId: proposal.toolCallId,
          depth: (parent.spec.parent?.depth ?? 0) + 1,
        },
      },
      status: { phase: "Running", startTime: new Date(this.now()).toISOString() },
    };
  }

  private image(agent: Agent, fallback: string): string {
    return agent.spec.runtime?.image ?? fallback;
  }

  private async startWorker(a: Extract<EngineAction, { type: "start_worker" }>): Promise<void> {
    const agent = this.opts.agent;
    const ws = this.workspace as Workspace;
    // The worker runtime's env contract (src/agent/config.ts), plus GAVEL_WORKSPACE for
    // plain scripts; feedback and input are always set so a script can read them blindly.
    const env: Record<string, string> = {
      ...agentEnvironment({
        namespace: this.namespace,
        execution: this.opts.execution.metadata.name,
        iteration: a.iteration,
        task: agent.spec.task?.instruction ?? "",
        tools: agent.spec.tools ?? [],
        mounts: ws.mounts.map((m) => ({ path: m.mountPath, readOnly: false })),
        natsUrl: this.opts.natsUrl ?? "",
      }),
      GAVEL_INPUT: JSON.stringify(this.opts.execution.spec.input ?? null),
      GAVEL_FEEDBACK: a.feedback ?? "",
      GAVEL_WORKSPACE: ws.mounts.map((m) => m.mountPath).join(":"),
      ...this.opts.workerEnv,
    };
    const spec: WorkloadSpec = {
      name: a.name,
      image: this.image(agent, DEFAULT_WORKER_IMAGE),
      env,
      mounts: ws.mounts,
      network: agent.spec.security?.network?.mode === "none" ? "none" : "allow",
      resources: this.resources(agent),
      timeoutSeconds: a.timeoutSeconds,
      labels: { "gavel.dev/execution": this.opts.execution.metadata.name, "gavel.dev/iteration": String(a.iteration) },
    };
    const handle = await this.opts.runtime.start(spec);
    this.handles.set(a.name, handle);
    const r = await handle.wait();
    this.handles.delete(a.name);
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

  private resources(agent: Agent): WorkloadSpec["resources"] {
    const r = agent.spec.security?.resources;
    const memoryBytes = parseMemoryBytes(r?.memory);
    const nanoCpus = parseNanoCpus(r?.cpu);
    return { ...(memoryBytes !== undefined ? { memoryBytes } : {}), ...(nanoCpus !== undefined ? { nanoCpus } : {}) };
  }

  /**
   * Reads what a validator needs: workspace files through the runtime's read-only reader
   * (never the worker's own report), image files through a one-shot reader of the agent's image.
   */
  private async readFiles(files: FileRequest[]): Promise<void> {
    const results = await Promise.all(files.map(async (f) => [f.key, await this.readOne(f)] as const));
    for (const [key, content] of results) observeFile(this.state, key, content);
    this.observed();
  }

  private async readOne(f: FileRequest): Promise<FileContent> {
    if (f.from === "workspace") {
      const mount = (this.workspace as Workspace).mountFor(f.path);
      if (mount === undefined) {
        return { ok: false, reason: "unreadable", detail: `${f.path} is not inside any workspace volume (${(this.workspace as Workspace).mounts.map((m) => m.mountPath).join(", ")})` };
      }
      try {
        const text = await this.opts.runtime.readFile({ ...mount, readOnly: true }, f.path);
        return text === undefined ? { ok: false, reason: "missing", detail: "no such file" } : { ok: true, content: text };
      } catch (err) {
        return { ok: false, reason: "unreadable", detail: err instanceof Error ? err.message : String(err) };
      }
    }
    return this.readFromImage(f.path);
  }

  private readFromImage(path: string): Promise<FileContent> {
    return readFileFromImage(this.opts.runtime, {
      name: `${this.opts.execution.metadata.name}-image-reader-${this.seq++}`,
      image: this.image(this.opts.agent, DEFAULT_WORKER_IMAGE),
      path,
      timeoutSeconds: 30,
    });
  }

  private childExecution(c: JudgeChildRequest, payload: JsonObject | undefined): ChildExecution {
    const parent = this.opts.execution;
    return {
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name: c.name, namespace: this.namespace, labels: { "gavel.dev/parent": parent.metadata.name } },
      spec: {
        agentRef: { name: c.judge },
        ...(payload !== undefined ? { input: payload } : {}),
        parent: {
          name: parent.metadata.name,
          uid: parent.metadata.uid ?? "",
          purpose: "validation",
          iteration: c.iteration,
          validatorIndex: c.validatorIndex,
          depth: c.depth,
        },
        timeoutSeconds: c.timeoutSeconds,
      },
      status: { phase: "Running", startTime: new Date(this.now()).toISOString() },
    };
  }

  private async spawnJudge(c: JudgeChildRequest): Promise<void> {
    const judge = this.opts.judges.get(c.judge) as Agent;
    const ws = this.workspace as Workspace;
    const worker = this.state.worker;
    let payload: JsonObject;
    try {
      payload = buildValidationPayload({
        judge,
        validator: c.validator,
        ...(this.opts.agent.spec.task?.instruction !== undefined ? { task: this.opts.agent.spec.task.instruction } : {}),
        output: worker?.stdout ?? "",
        workerMounts: ws.mounts.map((m) => m.mountPath),
        ...(this.opts.execution.spec.input !== undefined ? { input: this.opts.execution.spec.input } : {}),
      });
    } catch (err) {
      // A judge whose input_schema gavel cannot fill is a failed judge, not a crashed run.
      this.finishJudge(this.childExecution(c, undefined), { ok: false, rejection: "failed", detail: err instanceof Error ? err.message : String(err) });
      return;
    }
    const child = this.childExecution(c, payload);
    this.children.set(c.name, child);
    const image = judge.spec.runtime?.image;
    if (image === undefined) {
      this.finishJudge(child, { ok: false, rejection: "failed", detail: `judge ${c.judge} names no image (spec.runtime.image)` });
      return;
    }
    const input = JSON.stringify(payload);
    const handle = await this.opts.runtime.start({
      name: c.name,
      image,
      // Linux refuses a single env string over 128 KiB at exec; stdin always carries the payload.
      env: { ...(Buffer.byteLength(input) <= ENV_PAYLOAD_LIMIT ? { GAVEL_INPUT: input } : {}), GAVEL_EXECUTION: c.name },
      stdin: input,
      mounts: ws.readOnly(),
      network: c.network,
      resources: this.resources(judge),
      timeoutSeconds: c.timeoutSeconds,
      labels: { "gavel.dev/execution": c.name, "gavel.dev/parent": this.opts.execution.metadata.name },
    });
    this.handles.set(c.name, handle);
    const r = await handle.wait();
    this.handles.delete(c.name);
    const validation = judge.spec.execution?.validation;
    const outcome = judgeOutcome({
      exitCode: r.exitCode,
      stdout: r.stdout,
      timedOut: r.timedOut,
      cancelled: r.cancelled,
      ...(validation !== undefined && !Array.isArray(validation) ? { validation } : {}),
    });
    this.finishJudge(child, outcome);
  }

  private finishJudge(child: ChildExecution, outcome: JudgeOutcome): void {
    this.children.set(child.metadata.name, child);
    const status = child.status ?? {};
    child.status = status;
    status.completionTime = new Date(this.now()).toISOString();
    if (outcome.ok) {
      status.phase = "Succeeded";
      status.verdict = outcome.result;
      status.score = outcome.result.score;
    } else {
      status.phase = outcome.rejection === "timed_out" ? "TimedOut" : outcome.rejection === "cancelled" ? "Cancelled" : "Failed";
      status.rejection = outcome.rejection;
      status.message = outcome.detail;
    }
    observeJudge(this.state, child.metadata.name, outcome);
    this.observed();
  }
}

/** Runs one Execution locally (see LocalRun). */
export function runLocal(opts: LocalRunOptions): Promise<LocalRunResult> {
  return new LocalRun(opts).run();
}
