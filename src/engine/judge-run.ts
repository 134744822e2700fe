// The life of one judge child (a validation or tool_validation judge) as a decision without
// I/O, for both drivers: from the child Execution, its judge Agent and what the driver
// observed (why it cannot run, its parent, its workload's end, the clock) it decides whether
// the judge's workload is started, waited on, or the child ends, and with which outcome and
// status. Local mode feeds it the container's result; the controller its pod's.
import type { Agent, Execution, ExecutionPhase, ExecutionStatus, JudgeRawOutput } from "../api/types.js";
import { childTimeoutSeconds } from "./durations.js";
import { judgeOutcome, type JudgeOutcome } from "./gradient.js";
import { isTerminal, judgeStatus, rawOutputOf } from "./phases.js";

/** Slack past a judge child's deadline before the engine itself declares it timed out (its workload is killed at the deadline). */
export const JUDGE_GRACE_SECONDS = 10;

/** What the engine is given for one judge child. */
export interface JudgeRunContext {
  child: Execution;
  /** The child's judge Agent, defaults applied; undefined when it does not exist. */
  judge: Agent | undefined;
}

/** How the judge's workload ended, as the driver observed it. */
export interface JudgeWorkloadEnd {
  exitCode: number;
  stdout: string;
  stderr?: string;
  timedOut: boolean;
  cancelled?: boolean;
  /** Set when stderr could not be kept apart from stdout: why (kept in the child's rawOutput). */
  streamsMerged?: string;
  /** Its memory limit killed it (the pod's OOMKilled). */
  oomKilled?: boolean;
  /** It was stopped from outside before it ended by itself (its pod deleted or evicted): why, and which pod. */
  lost?: { reason: string; id: string };
}

/** What a driver observed of one judge child. */
export interface JudgeRunObservation {
  /**
   * Why the child cannot run, as the driver found it: a spawn error recorded on the child, a
   * workload that cannot be made, started or scheduled. The child fails with it, verbatim.
   */
  problem?: string;
  /** The parent Execution: "gone", the phase it is in, or undefined when the driver does not look (local mode). */
  parent?: "gone" | ExecutionPhase;
  /** Why the judge's started workload cannot run (an image that cannot be pulled): it fails with it unless the deadline passed first. */
  stuck?: string;
  /** The judge's workload, once it ended. */
  end?: JudgeWorkloadEnd;
}

/** What happens to the judge child next. */
export type JudgeRunStep =
  /**
   * Make sure its workload exists (create it when missing) and look again at `deadlineMs` or
   * when it ends. With `lost`, the workload was stopped from outside before it ended (its pod
   * deleted or evicted): remove what is left of it, say so, and start it again.
   */
  | { type: "run"; status: ExecutionStatus; deadlineMs: number; lost?: { reason: string; id: string } }
  /** It ends: write `status` (its outcome, and what the workload printed when it ran). */
  | { type: "finish"; outcome: JudgeOutcome; status: ExecutionStatus };

/** The outcome of a judge child its parent stopped (cancelled, or past the parent's deadline). */
export function stoppedByParent(reason: "cancelled" | "timed_out"): JudgeOutcome {
  return {
    ok: false,
    rejection: reason,
    detail: reason === "cancelled" ? "the parent Execution was cancelled" : "the parent Execution ran past its deadline",
  };
}

/**
 * Decides a judge child's next step at time `now` (epoch ms). A child without a start time
 * starts now. A recorded problem, a missing judge or a gone or ended parent end it; then an
 * ended workload's output becomes its outcome (judgeOutcome), also when it is read past the
 * deadline (a workload stopped from outside runs again instead; one its memory limit killed
 * fails naming it); then one past its deadline plus JUDGE_GRACE_SECONDS times out; then a stuck
 * workload fails it.
 */
export function judgeRunStep(ctx: JudgeRunContext, observed: JudgeRunObservation, now: number): JudgeRunStep {
  const { child, judge } = ctx;
  const finish = (outcome: JudgeOutcome, raw?: JudgeRawOutput): JudgeRunStep => ({
    type: "finish",
    outcome,
    status: judgeStatus(child.status, outcome, new Date(now), raw),
  });
  if (observed.problem !== undefined) return finish({ ok: false, rejection: "failed", detail: observed.problem });
  if (judge === undefined) {
    return finish({
      ok: false,
      rejection: "failed",
      detail: `spec.agentRef.name: judge Agent "${child.spec.agentRef.name}" not found in namespace ${child.metadata.namespace ?? "default"}`,
    });
  }
  if (observed.parent === "gone") return finish({ ok: false, rejection: "cancelled", detail: "the parent Execution is gone" });
  // A tool-judge child made as its parent ended has nothing left to judge.
  if (observed.parent !== undefined && isTerminal(observed.parent)) {
    return finish({ ok: false, rejection: "cancelled", detail: `the parent Execution has ended (${observed.parent})` });
  }
  const status: ExecutionStatus =
    child.status?.startTime !== undefined ? structuredClone(child.status) : { phase: "Running", startTime: new Date(now).toISOString() };
  const timeoutSeconds = childTimeoutSeconds(child, judge);
  const deadlineMs = Date.parse(status.startTime as string) + (timeoutSeconds + JUDGE_GRACE_SECONDS) * 1000;
  // An ended workload is read first: one its own deadline did not stop (the pod's
  // activeDeadlineSeconds, the container's kill) finished in time, however late a driver
  // restarted after a crash reads it (issue 24's soak: verdicts lost as timed out).
  const end = observed.end;
  // A workload stopped from outside did not answer: its step runs again, within the same deadline.
  if (end?.lost !== undefined) {
    if (now < deadlineMs) return { type: "run", status, deadlineMs, lost: end.lost };
    return finish({
      ok: false,
      rejection: "timed_out",
      detail: `the judge did not finish within ${timeoutSeconds}s (its pod was stopped: ${end.lost.reason})`,
    });
  }
  // Killed by its memory limit: no verdict, and the same limit would kill it again.
  if (end?.oomKilled === true) {
    const limit = judge.spec.security?.resources?.memory;
    return finish(
      {
        ok: false,
        rejection: "failed",
        detail: `the judge was OOM-killed: it went past its memory limit${limit !== undefined ? ` (security.resources.memory ${limit})` : ""} (exit code ${end.exitCode})`,
      },
      rawOutputOf(end),
    );
  }
  if (end !== undefined) {
    const validation = judge.spec.execution?.validation;
    const outcome = judgeOutcome({
      exitCode: end.exitCode,
      stdout: end.stdout,
      timedOut: end.timedOut,
      ...(end.cancelled !== undefined ? { cancelled: end.cancelled } : {}),
      ...(validation !== undefined && !Array.isArray(validation) ? { validation } : {}),
    });
    return finish(outcome, rawOutputOf(end));
  }
  if (now >= deadlineMs) return finish({ ok: false, rejection: "timed_out", detail: `the judge did not finish within ${timeoutSeconds}s` });
  if (observed.stuck !== undefined) return finish({ ok: false, rejection: "failed", detail: observed.stuck });
  return { type: "run", status, deadlineMs };
}
