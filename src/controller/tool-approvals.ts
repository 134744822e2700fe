// The cluster's Approver (ADR 0067): a tool call that needs a person becomes a ToolApproval
// owned by its Execution, and the gate holding the call's claim waits on it. The state lives in
// the API server, not here: the object's name is deterministic (a replica taking the call over
// adopts it), its deadline is in its spec, and the decision is in its status, where only an
// authenticated user with the `approve` verb can write it (the chart's admission policy).
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import type { ToolCallProposal } from "../api/protocol.js";
import { API_VERSION, GROUP, VERSION, type ApprovalPhase, type Execution, type ToolApproval } from "../api/types.js";
import { toolApprovalName } from "../engine/child-names.js";
import { ignoreNotFound, isConflict, isNotFound, messageOf, TransientError } from "../errors.js";
import type { ApprovalAnswer, ApprovalRequest, Approver } from "../gate/gate.js";
import { shownArguments } from "../gate/approval.js";
import type { Logger } from "../telemetry/logger.js";
import { ownerOf } from "../children/workloads.js";
import { ApprovalWatch, type ApprovalWatchOptions } from "./approval-watch.js";

/** The controller's Execution cache, as the approvals read it (approval-watch.ts). */
export type { ExecutionCache } from "./approval-watch.js";
import type { EngineEvent } from "./execution-events.js";
import type { EventNote } from "./runtime/event-recorder.js";

const PLURAL = "toolapprovals";

/** What the approvals lend from the gate: Kubernetes Events and the event stream of an Execution. */
export interface ApprovalNotices {
  event(execution: Execution, note: EventNote): Promise<void>;
  publish(execution: Execution, events: EngineEvent[]): Promise<void>;
  /** Tells the operators' webhook (approval-webhook.ts) of an approval that starts waiting; must return at once. */
  announce?(approval: ToolApproval): void;
}

/** ToolApprovals on one API server, as the gate creates and waits on them. */
export class ToolApprovals {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly watch: ApprovalWatch;
  private readonly logger: Logger | undefined;

  constructor(
    opts: ApprovalWatchOptions,
    private readonly notices: ApprovalNotices,
  ) {
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.watch = new ApprovalWatch(opts);
    this.logger = opts.logger;
  }

  /** Stops watching (waits in flight are taken over by the replica that takes their claims). */
  async stop(): Promise<void> {
    await this.watch.stop();
  }

  /** The Approver of one Execution's calls. */
  approver(execution: Execution): Approver {
    return (request) => this.ask(execution, request);
  }

  /** Creates (or adopts) the call's ToolApproval, announces it, and waits for its decision or its deadline. */
  async ask(execution: Execution, request: ApprovalRequest): Promise<ApprovalAnswer> {
    const p = request.proposal;
    const namespace = execution.metadata.namespace ?? "default";
    const name = toolApprovalName(p.execution, p.iteration, p.step, createHash("sha256").update(p.toolCallId).digest("hex"));
    const standing = await this.watch.standing(namespace, execution.metadata.uid ?? "", request.repeatDigest);
    if (standing !== undefined && standing.metadata.name !== name) return this.standingAnswer(execution, request, name, standing);
    let current = await this.createOrAdopt(namespace, toolApprovalOf(name, execution, request, new Date()));
    const call = { iteration: p.iteration, step: p.step, tool: p.tool, approval: name };
    if (current.status?.phase === undefined) {
      await this.setPhase(current, "Pending", "waiting for a person: gavel approve|deny").catch(() => undefined);
      // Not awaited: a NATS outage must not hold the call (the events are retried on their own).
      void this.notices.publish(execution, [
        { event: "toolcall.approval", data: { ...call, state: "pending", trigger: request.trigger, deadline: current.spec.deadline } },
      ]);
      await this.notices.event(execution, {
        type: "Warning",
        reason: "ToolCallApprovalPending",
        message: `iteration ${p.iteration} step ${p.step} ${p.tool} waits for a person (${request.trigger}) until ${current.spec.deadline}: gavel approve|deny ${name}`,
        once: `${name}.pending`,
      });
      this.notices.announce?.(current);
    }
    const warn = async (a: ToolApproval) => {
      const left = Math.max(0, Math.round((Date.parse(a.spec.deadline) - Date.now()) / 1000));
      void this.notices.publish(execution, [
        { event: "toolcall.approval", data: { ...call, state: "expiring", deadline: a.spec.deadline } },
      ]);
      await this.notices.event(execution, {
        type: "Warning",
        reason: "ToolCallApprovalExpiring",
        message: `iteration ${p.iteration} step ${p.step} ${p.tool}: ToolApproval ${name} expires in ${left}s (${a.spec.deadline}, onTimeout: ${a.spec.onTimeout}) unless decided: gavel approve|deny ${name}`,
        once: `${name}.expiring`,
      });
    };
    const answer = await this.outcome(current, { namespace, name: execution.metadata.name, uid: execution.metadata.uid ?? "" }, warn);
    const phase = PHASE[answer.outcome];
    const told =
      answer.outcome === "timed_out"
        ? "approval timed out"
        : answer.outcome === "withdrawn"
          ? `withdrawn: ${answer.reason ?? "the run ended"}`
          : `${answer.outcome} by ${answer.decidedBy ?? "?"}${answer.reason ? `: ${answer.reason}` : ""}`;
    current = (await this.read(namespace, name)) ?? current;
    if (answer.outcome !== "withdrawn" && current.status?.phase !== phase) await this.setPhase(current, phase, told).catch(() => undefined);
    void this.notices.publish(execution, [{ event: "toolcall.approval", data: { ...call, state: answer.outcome, ...decider(answer) } }]);
    await this.notices.event(execution, {
      type: answer.outcome === "approved" ? "Normal" : "Warning",
      reason:
        answer.outcome === "approved"
          ? "ToolCallApproved"
          : answer.outcome === "denied"
            ? "ToolCallDenied"
            : answer.outcome === "withdrawn"
              ? "ToolCallApprovalWithdrawn"
              : "ToolCallApprovalTimedOut",
      message: `iteration ${p.iteration} step ${p.step} ${p.tool}: ${told} (ToolApproval ${name})`,
      once: `${name}.${answer.outcome}`,
    });
    return answer;
  }

  /** The answer of a standing decision (--for-execution) on an identical earlier call: told, not asked. */
  private async standingAnswer(
    execution: Execution,
    request: ApprovalRequest,
    name: string,
    standing: ToolApproval,
  ): Promise<ApprovalAnswer> {
    const p = request.proposal;
    const d = standing.status?.decision;
    const answer: ApprovalAnswer = {
      name: standing.metadata.name,
      outcome: d?.approved === true ? "approved" : "denied",
      ...(d?.decidedBy !== undefined ? { decidedBy: d.decidedBy } : {}),
      ...(d?.reason ? { reason: d.reason } : {}),
      standing: true,
    };
    const told = `${answer.outcome} by ${answer.decidedBy ?? "?"} for this execution (ToolApproval ${standing.metadata.name}, --for-execution)`;
    void this.notices.publish(execution, [
      {
        event: "toolcall.approval",
        data: {
          iteration: p.iteration,
          step: p.step,
          tool: p.tool,
          approval: standing.metadata.name,
          state: answer.outcome,
          standing: true,
          ...decider(answer),
        },
      },
    ]);
    await this.notices.event(execution, {
      type: answer.outcome === "approved" ? "Normal" : "Warning",
      reason: answer.outcome === "approved" ? "ToolCallApproved" : "ToolCallDenied",
      message: `iteration ${p.iteration} step ${p.step} ${p.tool}: ${told}`,
      once: `${name}.standing`,
    });
    return answer;
  }

  /**
   * Waits for the decision, the deadline or the run's end, woken by the watch (approval-watch.ts),
   * never by reading again and again. An end the gate writes (TimedOut, Withdrawn) is written
   * with the resourceVersion read: a decision written meanwhile makes that a 409, and the
   * decision wins. A decision for another digest than the call's is no decision (fail closed).
   */
  private async outcome(
    first: ToolApproval,
    run: { namespace: string; name: string; uid: string },
    warn: (a: ToolApproval) => Promise<void>,
  ): Promise<ApprovalAnswer> {
    const name = first.metadata.name;
    let current = first;
    let ended: string | undefined;
    // The warning before expiry is due once (a replica that adopts the approval late warns at once; the Event is recorded once).
    const warnAt = expiryWarningAt(first);
    let warned = false;
    for (;;) {
      if (current.status?.decision !== undefined && current.status.decision.digest !== current.spec.digest)
        this.logger?.warn({ approval: name }, "a decision for another digest than the call's: ignored");
      const known = answerOf(current);
      if (known !== undefined) return known;
      const end: ApprovalPhase | undefined =
        ended !== undefined ? "Withdrawn" : Date.now() >= Date.parse(current.spec.deadline) ? "TimedOut" : undefined;
      if (end !== undefined) {
        const written = await this.end(current, end, end === "TimedOut" ? "approval timed out" : (ended ?? ""));
        if (written === undefined) return { name, outcome: "withdrawn", reason: ended ?? "the approval was deleted" };
        current = written;
        continue;
      }
      if (!warned && Date.now() >= warnAt) {
        warned = true;
        await warn(current);
      }
      const change = await this.watch.next(current, run, warned ? Date.parse(current.spec.deadline) : warnAt);
      if (change.kind === "changed") current = change.approval;
      // Deleted with its Execution (the garbage collector): the run is gone, nobody can decide.
      else if (change.kind === "deleted") return { name, outcome: "withdrawn", reason: "the approval was deleted (its Execution is gone)" };
      else if (change.kind === "run-ended") ended = change.why;
      else if (change.kind === "unwatched") current = (await this.read(current.metadata.namespace ?? "default", name)) ?? current;
    }
  }

  /**
   * Writes how an undecided approval ended (TimedOut, Withdrawn) with the resourceVersion read;
   * returns the approval as it then is (a decision written meanwhile made the write a 409, and
   * is what the next look finds), or undefined once it is gone.
   */
  private async end(current: ToolApproval, phase: ApprovalPhase, message: string): Promise<ToolApproval | undefined> {
    const status = { ...current.status, phase, message };
    try {
      await this.replaceStatus(current, status);
      return { ...current, status };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err)) throw err;
    }
    return this.read(current.metadata.namespace ?? "default", current.metadata.name);
  }

  private async createOrAdopt(namespace: string, body: ToolApproval): Promise<ToolApproval> {
    try {
      return (await this.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        body,
      })) as ToolApproval;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    const existing = await this.read(namespace, body.metadata.name);
    if (existing === undefined) throw new TransientError(`ToolApproval ${namespace}/${body.metadata.name} exists and is gone again`);
    // Adopted only when it is this very call of this very run: anything else is never a decision for it.
    if (existing.spec.digest !== body.spec.digest || existing.spec.executionUID !== body.spec.executionUID)
      throw new Error(`ToolApproval ${namespace}/${body.metadata.name} exists for another call (digest ${existing.spec.digest})`);
    return existing;
  }

  private async read(namespace: string, name: string): Promise<ToolApproval | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
      })) as ToolApproval;
    } catch (err) {
      return ignoreNotFound(err);
    }
  }

  private async setPhase(a: ToolApproval, phase: ApprovalPhase, message: string): Promise<void> {
    try {
      await this.custom.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          namespace: a.metadata.namespace ?? "default",
          plural: PLURAL,
          name: a.metadata.name,
          body: { status: { phase, message } },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
    } catch (err) {
      this.logger?.warn({ approval: a.metadata.name, phase, err: messageOf(err) }, "could not write the approval's phase");
      throw err;
    }
  }

  private async replaceStatus(a: ToolApproval, status: NonNullable<ToolApproval["status"]>): Promise<void> {
    await this.custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace: a.metadata.namespace ?? "default",
      plural: PLURAL,
      name: a.metadata.name,
      body: { ...a, status },
    });
  }
}

/** The ToolApproval of a call: the call as a person sees it, its digest, what the ladder found, the deadline; owned by the Execution. */
export function toolApprovalOf(name: string, execution: Execution, r: ApprovalRequest, now: Date): ToolApproval {
  const p: ToolCallProposal = r.proposal;
  const findings = [
    ...(r.pending.guard.flags ?? []).map((f) => `flagged: ${f}`),
    ...(r.pending.guard.warnings ?? []).map((w) => `warned: ${w}`),
  ];
  return {
    apiVersion: API_VERSION,
    kind: "ToolApproval",
    metadata: {
      name,
      namespace: execution.metadata.namespace ?? "default",
      labels: { "gavel.dev/execution": execution.metadata.name.slice(0, 63).replace(/[^a-z0-9]+$/, "") },
      ownerReferences: [ownerOf(execution)],
    },
    spec: {
      execution: execution.metadata.name,
      executionUID: execution.metadata.uid ?? "",
      toolCallId: p.toolCallId,
      iteration: p.iteration,
      step: p.step,
      tool: p.tool,
      arguments: shownArguments(p.args),
      ...(p.intent !== undefined ? { intent: p.intent.slice(0, 1024) } : {}),
      digest: r.digest,
      repeatDigest: r.repeatDigest,
      trigger: r.trigger,
      reason: `${r.findings !== undefined ? `${r.findings}. ` : ""}${r.pending.reason}`.slice(0, 2048),
      ...(findings.length > 0 ? { guardFindings: findings } : {}),
      judges: r.pending.judges.map((j) => ({
        judge: j.judge,
        ...(j.child !== "" ? { child: j.child } : {}),
        passed: j.passed,
        ...(j.result !== undefined
          ? { score: j.result.score, confidence: j.result.confidence, reasoning: j.result.reasoning.slice(0, 2048) }
          : {}),
        ...(j.rejection !== undefined ? { rejection: j.rejection } : {}),
      })),
      deadline: new Date(now.getTime() + r.timeoutMs).toISOString(),
      onTimeout: r.onTimeout,
    },
  };
}

/** When the warning before an approval's expiry is due: a fifth of its time before the deadline, at most a minute before. */
export function expiryWarningAt(a: Pick<ToolApproval, "metadata" | "spec">): number {
  const deadline = Date.parse(a.spec.deadline);
  const created = Date.parse(a.metadata.creationTimestamp ?? "");
  const lead = Number.isNaN(created) ? 60_000 : Math.min(60_000, Math.max(0, deadline - created) / 5);
  return deadline - lead;
}

/** How an approval ended, as its object says (a decision for another digest is none), or undefined while it waits. */
function answerOf(a: ToolApproval): ApprovalAnswer | undefined {
  const name = a.metadata.name;
  const d = a.status?.decision;
  if (d !== undefined && d.digest === a.spec.digest)
    return { name, outcome: d.approved ? "approved" : "denied", decidedBy: d.decidedBy, ...(d.reason ? { reason: d.reason } : {}) };
  if (a.status?.phase === "TimedOut") return { name, outcome: "timed_out" };
  if (a.status?.phase === "Withdrawn") return { name, outcome: "withdrawn", reason: a.status.message ?? "the run ended" };
  return undefined;
}

/** The phase an approval ends in, by how the asking ended. */
const PHASE: Record<ApprovalAnswer["outcome"], ApprovalPhase> = {
  approved: "Approved",
  denied: "Denied",
  timed_out: "TimedOut",
  withdrawn: "Withdrawn",
};

function decider(a: ApprovalAnswer): Record<string, unknown> {
  return { ...(a.decidedBy !== undefined ? { decidedBy: a.decidedBy } : {}), ...(a.reason !== undefined ? { reason: a.reason } : {}) };
}
