// A run (an Execution without `spec.parent`) through one reconcile, in kubebuilder's order:
// validate (its Agent, a gate for its tool calls, its workspace strategy), gather what is
// observed (the stored worker result, its judges' outcomes, the gate's tool-judge children),
// compute (the engine's state rebuilt from the status: restoreState, then decide, each handed
// what it takes from the Agent, its AgentPlan, beside the run's context), apply (the
// worker, judge children and file readers the engine asks for), and hand the status (with the
// Guarded condition's data) to ExecutionStatusWriter.
import { withDefaults } from "../api/defaults.js";
import type { Agent, Execution } from "../api/types.js";
import { ownerMarks, workerProgram, type WorkerRun } from "../children/workloads.js";
import { workerName } from "../engine/child-names.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { outcomeOfStatus } from "../engine/phases.js";
import {
  agentPlan,
  decide,
  isTerminal,
  nextDeadline,
  observeFile,
  observeWorker,
  requestCancel,
  restoreState,
  runLimits,
  type AgentPlan,
  type EngineAction,
  type EngineState,
  type RunLimits,
  type WorkerObservation,
} from "../engine/outer-loop.js";
import type { WorkloadMount } from "../runtime/workload.js";
import type { ExecutionTraces } from "../telemetry/execution-trace.js";
import { mergeToolJudgeRefs } from "../children/tool-judge.js";
import type { GateStatus } from "./gate-status.js";
import { removeEarlierRun, type EarlierRunAccess } from "./earlier-run.js";
import type { ExecutionCredentials } from "./execution-credentials.js";
import type { EngineEvent } from "./execution-events.js";
import { ensureWorkload, namespaceOf, requeueAt, streamsOf, type ExecutionParts, type RunContext } from "./execution-parts.js";
import { CANCEL_ANNOTATION, placementOf, workloadPodName, workspaceMounts } from "./execution-pods.js";
import { judgeAgents } from "./execution-state.js";
import { traced, waitingForGate, type ExecutionStatusWriter } from "./execution-status.js";
import type { FileReaders } from "./file-readers.js";
import { gateAccess, isRestrictedNetwork, type GateAccess } from "./gate-egress.js";
import type { JudgeChildren } from "./judge-children.js";
import { workerPod } from "./worker-pod.js";
import { readWorkerResult, storeWorkerResult } from "./stored-parts.js";
import type { WorkspaceCopies } from "./workspace-copies.js";
import type { WorkspaceSnapshots } from "./workspace-snapshots.js";

/** The concerns a run uses, and what it reads beyond them. */
export interface RunAccess {
  status: ExecutionStatusWriter;
  judges: JudgeChildren;
  readers: FileReaders;
  copies: WorkspaceCopies;
  snapshots: WorkspaceSnapshots;
  /** The caches of pods and Executions an earlier run of the same name is looked for in (and the tool-judge children in). */
  caches: Omit<EarlierRunAccess, "core">;
  /** The tool-call gate's port: whether a run needs it and may start, as plain data (NO_GATE when none runs). */
  gate: GateStatus;
  traces?: ExecutionTraces;
  credentials?: ExecutionCredentials;
}

/** Runs the outer loop of top-level Executions. */
export class ExecutionRuns {
  /** The gate access of restricted workers, resolved once (a failure is tried again next time). */
  private gateAccessing: Promise<GateAccess> | undefined;

  constructor(
    private readonly parts: ExecutionParts,
    private readonly access: RunAccess,
  ) {}

  /** One reconcile of a run that has not ended: validate, gather, compute, apply, write the status. */
  async reconcile(ex: Execution): Promise<{ requeueAfterMs?: number }> {
    const { status, credentials } = this.access;
    const namespace = namespaceOf(ex);
    // Validate: its Agent exists, and before it starts a gate can decide its tool calls and its judges can get its volumes.
    const raw = await this.parts.resources.agent(namespace, ex.spec.agentRef.name);
    if (raw === undefined) return status.agentMissing(ex);
    const agent = withDefaults(raw);
    const limits = runLimits(ex, agent);
    const mounts = workspaceMounts(ex.metadata.name, agent, false);
    const guarding = this.access.gate.guarding(agent, namespace);
    const held = ex.status?.startTime === undefined ? await this.holdBeforeStart(ex, agent, limits, mounts, guarding.blocked) : undefined;
    if (held !== undefined) return held;
    // Gather and compute: the engine's state rebuilt from the status and what is observed.
    const judges = await judgeAgents(this.parts.resources, namespace, agent);
    // Worked out once: what the engine takes from the Agent, and for the concerns the marks of
    // what the run owns, its workspace, and its Agent's runtime and limits.
    const plan = agentPlan(agent, judges, limits);
    const { runtimes } = this.parts.settings;
    const program = workerProgram(agent, runtimes !== undefined ? { runtimes } : {});
    const ctx: RunContext = { execution: ex, agent, owner: ownerMarks(ex), mounts, program };
    const { toolJudges, ...observed } = await this.gather(ctx);
    const { state, respawn } = restoreState(plan, ctx, observed);
    // The gate's tool-judge children are listed too, so a cancel or deadline stops them with the run.
    if (toolJudges.length > 0) mergeToolJudgeRefs(state.status, toolJudges);
    // Apply: what the status says runs is (re)made, then the engine decides until nothing new is observed.
    if (ex.metadata.annotations?.[CANCEL_ANNOTATION] !== undefined) requestCancel(state);
    else {
      for (const req of respawn) await this.access.judges.spawn(ctx, state, req, plan.judges.get(req.judge));
      await this.observeWorker(ctx, plan, state);
    }
    const events = await this.decideAll(plan, ctx, state);
    // Status (with the Guarded condition of a run that needs a gate), then what an ended run leaves behind.
    const foldAgainInMs = await status.writeRun(ctx, state, events, guarding);
    if (isTerminal(state.status.phase)) {
      await this.parts.workloads.retireOwned(namespace, ex.metadata.name, this.parts.settings.retentionSeconds);
      await credentials?.release(namespace, ex.metadata.name, ex.metadata.uid);
    }
    const deadline = nextDeadline(plan, state);
    const wake = Math.min(deadline === undefined ? Infinity : requeueAt(deadline, this.parts.now()), foldAgainInMs ?? Infinity);
    return wake === Infinity ? {} : { requeueAfterMs: wake };
  }

  /**
   * Why a run that has not started yet must not start now, as the reconcile's result: no gate
   * can decide its tool calls (fail closed), an earlier run of its name is still there, or its
   * judges cannot get its volumes by snapshot. Undefined when it may start.
   */
  private async holdBeforeStart(
    ex: Execution,
    agent: Agent,
    limits: RunLimits,
    mounts: WorkloadMount[],
    unguarded: string | undefined,
  ): Promise<{ requeueAfterMs?: number } | undefined> {
    const { status } = this.access;
    if (unguarded !== undefined) {
      // Fail closed: a worker whose tool calls nobody could decide is never started.
      const waiting = waitingForGate(ex, limits, unguarded, this.parts.now());
      await status.write(ex, waiting.status);
      return waiting.requeueAfterMs === undefined ? {} : { requeueAfterMs: waiting.requeueAfterMs };
    }
    // Deleted and created again at once: the earlier run's pods and results must not pass for this run's.
    const claims = mounts.map((m) => m.source);
    const earlier = await removeEarlierRun({ core: this.parts.core, ...this.access.caches }, ex, claims);
    if (earlier !== undefined) {
      await status.write(ex, { ...ex.status, phase: "Pending", message: earlier });
      return { requeueAfterMs: 1000 };
    }
    // Refused before any pod starts: the worker would run for judges that cannot get its volumes.
    const problem = agent.spec.workspace_strategy === "snapshot" ? await this.access.snapshots.problem(agent) : undefined;
    return problem === undefined ? undefined : status.refuse(ex, "WorkspaceStrategyUnsupported", problem);
  }

  /**
   * What the run's children say: the current iteration's stored worker result, its validation
   * judges' outcomes (null: not ended yet), and the tool-judge children the gate made for its
   * tool calls (from the cache; none when no tool call was judged).
   */
  private async gather(
    ctx: RunContext,
  ): Promise<{ worker?: WorkerObservation; judges: Map<string, JudgeOutcome | null>; toolJudges: Execution[] }> {
    const ex = ctx.execution;
    const namespace = namespaceOf(ex);
    const iteration = ex.status?.iteration;
    const worker = iteration === undefined ? undefined : workerName(ex.metadata.name, iteration);
    // A result is stored only once its pod was seen ended (observeWorker), so none exists while the pod runs: no read.
    const seen = worker === undefined ? undefined : (await this.parts.workloads.observe(worker, placementOf(ctx.owner, "apart"))).state;
    const stored =
      worker === undefined || seen === "running" || seen === "pending"
        ? undefined
        : await readWorkerResult(this.parts.core, namespace, worker);
    const judges = new Map<string, JudgeOutcome | null>();
    for (const ref of ex.status?.children ?? []) {
      // Tool-judge children are the gate's to wait on, not the outer loop's.
      if (ref.iteration !== iteration || ref.purpose !== "validation") continue;
      const child = await this.parts.resources.execution(namespace, ref.name);
      if (child !== undefined) judges.set(ref.name, outcomeOfStatus(child.status) ?? null);
    }
    const toolJudges = this.access.caches.executions
      .list(namespace)
      .filter((c) => c.spec?.parent?.name === ex.metadata.name && c.spec.parent.purpose === "tool_validation");
    return { ...(stored !== undefined ? { worker: stored } : {}), judges, toolJudges };
  }

  /** Runs decide and performs its actions until an action observes nothing new; returns the events. */
  private async decideAll(plan: AgentPlan, ctx: RunContext, state: EngineState): Promise<EngineEvent[]> {
    const events: EngineEvent[] = [];
    for (let round = 0; round < 100; round++) {
      let observed = false;
      for (const a of decide(plan, ctx, state, this.parts.now())) {
        if (a.type === "event") events.push(a);
        observed = (await this.perform(plan, ctx, state, a)) || observed;
      }
      if (!observed) break;
    }
    return events;
  }

  /** Performs one engine action; true when it observed something (decide must run again). */
  private async perform(plan: AgentPlan, ctx: RunContext, state: EngineState, a: EngineAction): Promise<boolean> {
    const ex = ctx.execution;
    switch (a.type) {
      case "event":
        this.parts.logger.info(
          {
            execution: `${namespaceOf(ex)}/${ex.metadata.name}`,
            ...(typeof a.data.iteration === "number" ? { iteration: a.data.iteration } : {}),
            event: a.event,
            data: a.data,
          },
          "loop event",
        );
        return false;
      case "start_worker":
        await this.startWorker(plan, ctx, state, a);
        return false;
      case "read_files": {
        // Level-triggered: each file's reader is a workload observed on a later reconcile (its
        // end wakes this Execution); a reconcile never waits for one.
        let observed = false;
        for (const f of a.files) {
          const content = await this.access.readers.content(ctx, a.iteration, f);
          if (content === undefined) continue;
          observeFile(state, f.key, content);
          observed = true;
        }
        return observed;
      }
      case "spawn_judge":
        await this.access.judges.spawn(ctx, state, a.child, plan.judges.get(a.child.judge));
        return false;
      case "stop":
        // A judge child's status says why it stopped; every stopped workload goes.
        for (const name of a.names) {
          if ((ex.status?.children ?? []).some((c) => c.name === name)) await this.access.judges.endByParent(ex, name, a.reason);
          await this.parts.workloads.retire(name, { namespace: namespaceOf(ex) }, this.parts.settings.retentionSeconds);
        }
        return false;
      case "finish":
        return false;
    }
  }

  /** The current iteration's worker: collects it when it ended, creates it when it is missing. */
  private async observeWorker(ctx: RunContext, plan: AgentPlan, state: EngineState): Promise<void> {
    const record = state.status.iterations?.at(-1);
    if (record === undefined) return;
    const ex = ctx.execution;
    const { workloads, settings, now } = this.parts;
    const worker = workerName(ex.metadata.name, record.number);
    const place = placementOf(ctx.owner, "apart");
    const seen = await workloads.observe(worker, place);
    if (state.worker !== undefined) {
      // Its result is kept: the pod goes once its retention has passed.
      if (seen.state !== "absent") await workloads.retire(worker, place, settings.retentionSeconds);
      return;
    }
    if (record.phase !== "Running") return;
    if (seen.state === "absent") {
      // Never created (the controller stopped first) or gone before its result was kept: run it.
      const timeoutSeconds = Math.max(
        1,
        Math.ceil(((state.iterationStartedAtMs ?? now()) + plan.limits.iterationSeconds * 1000 - now()) / 1000),
      );
      await this.startWorker(plan, ctx, state, {
        name: worker,
        iteration: record.number,
        ...(record.feedback !== undefined ? { feedback: record.feedback } : {}),
        timeoutSeconds,
      });
      return;
    }
    if (seen.state !== "ended" && seen.state !== "stuck") return;
    const end = seen.state === "stuck" ? { exitCode: -1, timedOut: false, node: seen.node } : seen;
    const out =
      seen.state === "stuck"
        ? { stdout: `pod ${workloadPodName(worker)} cannot start: ${seen.reason}`, stderr: seen.reason }
        : streamsOf(await workloads.output(worker, place));
    const w: WorkerObservation = { iteration: record.number, exitCode: end.exitCode, ...out, timedOut: end.timedOut, cancelled: false };
    // Kept before the pod goes: its log goes with it.
    await storeWorkerResult(this.parts.core, ctx.owner, worker, w, end.node);
    observeWorker(state, w);
    await workloads.retire(worker, place, settings.retentionSeconds);
  }

  /**
   * Iteration N's worker, after its claims and with its credential; the readers of earlier
   * iterations go. Its pod is assembled in worker-pod.ts; a restricted network (none, or an
   * allowlist) needs the gate's address first (gate-egress.ts), so its tool calls still reach it.
   */
  private async startWorker(plan: AgentPlan, ctx: RunContext, state: EngineState, run: WorkerRun): Promise<void> {
    const ex = ctx.execution;
    const { settings, now } = this.parts;
    const { traces, credentials } = this.access;
    await this.access.copies.ensureClaims(ctx.owner, ctx.agent);
    await this.access.readers.removeBefore(ctx.owner, run.iteration);
    const gate = settings.natsUrl !== "" && isRestrictedNetwork(ctx.program.network) ? await this.gateAccess() : undefined;
    const credentialSecret = await credentials?.ensure(ex, plan, state.startedAtMs ?? now());
    const traceParent = traces?.iterationParent(traced(ex, ctx.agent), run.iteration);
    const pod = workerPod(ctx, run, {
      settings,
      ...(gate !== undefined ? { gate } : {}),
      ...(traceParent !== undefined ? { traceParent } : {}),
      ...(credentialSecret !== undefined ? { credentialSecret } : {}),
    });
    await ensureWorkload(this.parts, pod.spec, pod.place);
  }

  private gateAccess(): Promise<GateAccess> {
    this.gateAccessing ??= gateAccess(this.parts.settings.natsUrl, (name, namespace) =>
      this.parts.core.readNamespacedService({ name, namespace }),
    ).catch((err: unknown) => {
      this.gateAccessing = undefined;
      throw err;
    });
    return this.gateAccessing;
  }
}
