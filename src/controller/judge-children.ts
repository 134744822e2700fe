// A run's judges as child Executions (`spec.parent` set): spawned by the run's outer loop with
// the payload validationJudgeChild builds (src/children/, as in local mode), and each run by
// this same reconciler as one judge workload. What happens to a child is the engine's
// decision (judgeRunStep, src/engine/judge-run.ts) from what is observed here: its spawn
// error, its judge Agent, its parent, its workload's end and the clock.
import { withDefaults } from "../api/defaults.js";
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";
import { SPAWN_ERROR_ANNOTATION, validationJudgeChild } from "../children/child-executions.js";
import { workerName } from "../engine/child-names.js";
import { judgeRunStep, stoppedByParent, type JudgeRunContext, type JudgeRunObservation } from "../engine/judge-run.js";
import { isTerminal, type EngineState, type JudgeChildRequest } from "../engine/outer-loop.js";
import { judgeStatus } from "../engine/phases.js";
import { ignoreNotFound, isConflict, TerminalError } from "../errors.js";
import type { GateStatus } from "./gate-status.js";
import { ownerMarks } from "../children/workloads.js";
import { judgeSpec, judgeWorkspaces, placementOf } from "./execution-pods.js";
import { resultName } from "./stored-parts.js";
import { ensureWorkload, namespaceOf, requeueAt, streamsOf, type ExecutionParts, type RunContext } from "./execution-parts.js";
import type { ExecutionStatusWriter } from "./execution-status.js";
import type { WorkspaceCopies } from "./workspace-copies.js";
import type { WorkspaceSnapshots } from "./workspace-snapshots.js";
import type { WarmJudges } from "./warm-judges.js";

/** The concerns a judge child's workspace and status come from. */
export interface JudgeChildrenAccess {
  status: ExecutionStatusWriter;
  copies: WorkspaceCopies;
  snapshots: WorkspaceSnapshots;
  /** The tool-call gate, whose decided calls are a judge's tool_call_history; none when undefined. */
  gate?: GateStatus;
  /** Warm judge pods (ADR 0070): tool-call judges run in one when its pool has one ready; none when undefined. */
  warm?: WarmJudges;
}

/** Spawns a run's judge children and runs each as one judge workload. */
export class JudgeChildren {
  constructor(
    private readonly parts: ExecutionParts,
    private readonly access: JudgeChildrenAccess,
  ) {}

  /** Creates the child Execution of a judge the engine asked for (its payload parts first); an existing one is adopted. */
  async spawn(ctx: RunContext, state: EngineState, c: JudgeChildRequest, judge: Agent | undefined): Promise<void> {
    const ex = ctx.execution;
    // The iteration's decided tool calls as the gate has them now (the judge's tool_call_history).
    this.access.gate?.annotate(ex, state.status);
    const { execution: body } = validationJudgeChild({
      status: state.status,
      parent: ex,
      owner: ctx.owner,
      worker: ctx.agent,
      judge,
      request: c,
      output: state.worker?.stdout ?? "",
      workerMounts: ctx.mounts,
    });
    if (await this.parts.resources.createJudgeChild(body)) this.parts.count.childCreated();
  }

  /** Ends a judge child its parent stops (cancelled, or past the parent's deadline); a verdict its own reconcile just wrote stands. */
  async endByParent(parent: Execution, name: string, reason: "cancelled" | "timed_out"): Promise<void> {
    const child = await this.parts.resources.execution(namespaceOf(parent), name);
    if (child === undefined || isTerminal(child.status?.phase)) return;
    await this.access.status
      .write(child, judgeStatus(child.status, stoppedByParent(reason), new Date(this.parts.now())))
      .catch((err: unknown) => {
        // The child's own reconcile may have just finished it.
        if (!isConflict(err)) throw err;
      });
  }

  /**
   * One reconcile of a judge child: the engine decides from what is observed whether its
   * workload runs or the child ends; a workload that cannot be made ends it too.
   */
  async reconcile(child: Execution): Promise<{ requeueAfterMs?: number }> {
    const { resources, now } = this.parts;
    const spawnError = child.metadata.annotations?.[SPAWN_ERROR_ANNOTATION];
    const raw = spawnError === undefined ? await resources.agent(namespaceOf(child), child.spec.agentRef.name) : undefined;
    const ctx: JudgeRunContext = { child, judge: raw === undefined ? undefined : withDefaults(raw) };
    const observed = spawnError !== undefined ? { problem: spawnError } : ctx.judge === undefined ? {} : await this.observe(child);
    let step = judgeRunStep(ctx, observed, now());
    if (step.type === "run" && step.lost !== undefined) return this.restartLost(child, step.lost, step.status);
    if (step.type === "run" && observed.parentObject !== undefined) {
      const problem = await this.start(child, ctx.judge as Agent, observed.parentObject);
      if (problem !== undefined) step = judgeRunStep(ctx, { ...observed, problem }, now());
    }
    if (step.type === "finish") {
      await this.access.status.writeJudgeEnd(child, step);
      this.access.warm?.forget(child);
      // An ended workload stays for its retention (the terminal child's reconciles remove it then); a running one goes now.
      const place = placementOf(ownerMarks(child));
      if ((await this.parts.workloads.observe(child.metadata.name, place)).state !== "absent")
        await this.parts.workloads.retire(child.metadata.name, place, this.parts.settings.retentionSeconds);
      return {};
    }
    await this.access.status.write(child, step.status);
    return { requeueAfterMs: requeueAt(step.deadlineMs, now()) };
  }

  /**
   * A judge whose pod was deleted or evicted from outside before it ended: a Warning Event on
   * the child says so (once per pod), what is left of the pod goes, and the next reconcile,
   * once it is gone, starts the judge again (issue 24 item 6).
   */
  private async restartLost(
    child: Execution,
    lost: { reason: string; id: string },
    status: ExecutionStatus,
  ): Promise<{ requeueAfterMs: number }> {
    await this.access.status.write(child, status);
    await this.access.status.note(child, {
      type: "Warning",
      reason: "JudgePodLost",
      message: `The judge's pod was stopped before it ended (${lost.reason}); the judge runs again in a new pod`,
      once: `lost-${lost.id}`,
    });
    await this.parts.workloads.retire(child.metadata.name, placementOf(ownerMarks(child), "apart"), 0);
    return { requeueAfterMs: 1000 };
  }

  /** What the engine needs of a judge child whose judge exists: its parent and its workload's end. */
  private async observe(child: Execution): Promise<JudgeRunObservation & { parentObject?: Execution }> {
    const parent =
      child.spec.parent === undefined ? undefined : await this.parts.resources.execution(namespaceOf(child), child.spec.parent.name);
    if (parent === undefined) return { parent: "gone" };
    const observed = { parentObject: parent, ...(parent.status?.phase !== undefined ? { parent: parent.status.phase } : {}) };
    // A call handed to a warm pod (ADR 0070): its exec's end, kept by this process.
    const warm = this.access.warm?.observe(child);
    if (warm !== undefined) return warm.end === undefined ? observed : { ...observed, end: warm.end };
    const place = placementOf(ownerMarks(child), "apart");
    const seen = await this.parts.workloads.observe(child.metadata.name, place);
    if (seen.state === "stuck") return { ...observed, stuck: `the judge pod cannot start: ${seen.reason}` };
    if (seen.state !== "ended") return observed;
    // stdout apart from stderr when the pod ran under gavel-launch; else the merged log.
    const streams = streamsOf(await this.parts.workloads.output(child.metadata.name, place));
    const killed = { ...(seen.oomKilled === true ? { oomKilled: true } : {}), ...(seen.lost !== undefined ? { lost: seen.lost } : {}) };
    return { ...observed, end: { exitCode: seen.exitCode, ...streams, timedOut: seen.timedOut, ...killed } };
  }

  /**
   * The engine's `run` step: creates the judge's workload when it is missing (after its own
   * copies or snapshots of the worker's volumes, by the workspace strategy). Returns why it
   * cannot run, if so.
   */
  private async start(child: Execution, judge: Agent, parent: Execution): Promise<string | undefined> {
    const namespace = namespaceOf(child);
    const { copies: copier, snapshots: snapshotter } = this.access;
    const parentAgent = await this.parts.resources.agent(namespace, parent.spec.agentRef.name);
    const { mounts, copies, snapshots, onWorkerNode } =
      parentAgent === undefined
        ? { mounts: [], copies: [], snapshots: [], onWorkerNode: false }
        : judgeWorkspaces(parent.metadata.name, withDefaults(parentAgent), child.metadata.name);
    // The snapshot strategy: a restore the CSI driver reports failed will never let the pod start.
    if ((await this.parts.workloads.observe(child.metadata.name, { namespace })).state !== "absent")
      return snapshots.length === 0 ? undefined : snapshotter.failure(child, snapshots);
    const built = judgeSpec(child, judge, mounts, this.parts.settings);
    if (typeof built === "string") return built;
    // A pod that mounts the worker's ReadWriteOnce claim runs where that claim is attached.
    const node = onWorkerNode ? await this.workerNode(parent, child.spec.parent?.iteration ?? 1) : undefined;
    // A tool-call judge of a shared workspace goes to a warm pod of its parent's pool when one is ready.
    const warmable = copies.length === 0 && snapshots.length === 0 && child.spec.parent?.purpose === "tool_validation";
    if (warmable && (await this.access.warm?.start(child, judge, parent, built, node)) === true) return undefined;
    // The snapshot strategy: a VolumeSnapshot of each worker claim and a claim restored from it (the judge's pod waits for the restore).
    const snapped = snapshots.length === 0 ? undefined : await snapshotter.ensure(child, snapshots);
    if (snapped !== undefined) return snapped;
    // The copy strategy: the judge starts once its private copies of the worker's volumes are made.
    const copied = copies.length === 0 ? "done" : await copier.ensure(child, copies, node);
    if (typeof copied === "object") return copied.failed;
    if (copied !== "done") return undefined;
    try {
      await ensureWorkload(this.parts, built.spec, node === undefined ? built.place : { ...built.place, node });
    } catch (err) {
      // An allowlisted host that does not resolve: the judge cannot run as declared.
      if (err instanceof TerminalError) return err.message;
      throw err;
    }
    if (copies.length > 0) await copier.release(child);
    return undefined;
  }

  /** The node the worker of `iteration` ran on: its workload's, else the one its stored result names. */
  private async workerNode(parent: Execution, iteration: number): Promise<string | undefined> {
    const worker = workerName(parent.metadata.name, iteration);
    const seen = await this.parts.workloads.observe(worker, { namespace: namespaceOf(parent) });
    if ("node" in seen && seen.node !== undefined) return seen.node;
    const stored = await this.parts.core
      .readNamespacedConfigMap({ name: resultName(worker), namespace: namespaceOf(parent) })
      .catch(ignoreNotFound);
    return stored?.data?.node;
  }
}
