// One tool_validation judge of a proposed tool call, as both drivers keep its books: the
// events the tree shows (the call, the judge started, its verdict), the ChildRef an
// Execution's status lists for it, and the judge's outcome as the gate reads it. How the
// child runs to its end is the driver's: a container in local mode, a child Execution the
// leader reconciles on a cluster.
import type { ToolCallProposal } from "../api/protocol.js";
import type { ChildRef, Execution, ExecutionStatus } from "../api/types.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { isTerminal } from "../engine/outer-loop.js";
import { phaseOfOutcome } from "../engine/phases.js";
import type { JudgeRunResult } from "../gate/gate.js";
import type { ToolJudgeChild } from "./child-executions.js";

/** One event of the worker's Execution, as a driver publishes it. */
export interface ToolJudgeEvent {
  event: string;
  data: Record<string, unknown>;
}

/** What a driver lends the tool-judge step. */
export interface ToolJudgeDriver {
  /** Publishes events of the worker's Execution, in order; the step waits for what it returns before the child runs. */
  publish(events: ToolJudgeEvent[]): Promise<void> | void;
  /** Calls (`iteration/step`) already shown as proposed: a call judged by several entries is shown once. */
  announced: Set<string>;
  /** Runs the child to its end and says how it ended. */
  run(child: ToolJudgeChild): Promise<JudgeOutcome>;
  /** Keeps the child's ChildRef (local mode lists it at once; on a cluster the leader lists the children it finds). */
  track?(ref: ChildRef): void;
}

/**
 * Judges one proposed call with one tool_validation entry, whose child the children module
 * made (toolJudgeChild): the call is shown (once), the judge's start, its run by the driver,
 * its end; the ChildRef follows the outcome unless the engine stopped the child first.
 */
export async function judgeToolCall(t: ToolJudgeChild, proposal: ToolCallProposal, driver: ToolJudgeDriver): Promise<JudgeRunResult> {
  const judge = t.execution.spec.agentRef.name;
  const events: ToolJudgeEvent[] = [];
  // The tree hangs tool judges under their call, so the call is shown before its decision.
  const callKey = `${proposal.iteration}/${proposal.step}`;
  if (!driver.announced.has(callKey)) {
    driver.announced.add(callKey);
    events.push({ event: "toolcall.proposed", data: { iteration: proposal.iteration, step: proposal.step, tool: proposal.tool } });
  }
  events.push({
    event: "judge.spawned",
    data: { child: t.name, judge, iteration: proposal.iteration, step: proposal.step, purpose: "tool_validation" },
  });
  const published = driver.publish(events);
  const ref = toolJudgeRef(t.execution);
  if (ref !== undefined) driver.track?.(ref);
  await published;
  const outcome = await driver.run(t);
  // A child the engine already stopped (cancel, deadline) keeps the phase it was given.
  if (ref?.phase === "Running") ref.phase = phaseOfOutcome(outcome);
  void driver.publish([
    {
      event: "judge.finished",
      data: {
        child: t.name,
        judge,
        ...(outcome.ok ? { score: outcome.result.score, confidence: outcome.result.confidence } : { rejection: outcome.rejection }),
      },
    },
  ]);
  return outcome.ok ? { result: outcome.result, child: t.name } : { rejection: outcome.rejection, detail: outcome.detail, child: t.name };
}

/** The ChildRef of a tool-judge child (purpose tool_validation, with its call's id) and its phase; undefined for any other Execution. */
export function toolJudgeRef(child: Execution): ChildRef | undefined {
  const parent = child.spec.parent;
  if (parent?.purpose !== "tool_validation") return undefined;
  return {
    name: child.metadata.name,
    purpose: "tool_validation",
    iteration: parent.iteration,
    validatorIndex: parent.validatorIndex,
    judge: child.spec.agentRef.name,
    ...(parent.toolCallId !== undefined ? { toolCallId: parent.toolCallId } : {}),
    phase: child.status?.phase === undefined || child.status.phase === "Pending" ? "Running" : child.status.phase,
  };
}

/**
 * Lists an Execution's tool-judge children (made by the gate on any replica) in its
 * status.children, as local mode does, with their current phase: the engine then stops
 * them with the Execution (cancel, deadline) like its validation judges.
 */
export function mergeToolJudgeRefs(status: ExecutionStatus, children: readonly Execution[]): void {
  const refs = (status.children ??= []);
  for (const child of children) {
    const ref = toolJudgeRef(child);
    if (ref === undefined) continue;
    const known = refs.findIndex((r) => r.name === ref.name);
    // A phase the engine already gave it (stopped with its parent) stands until the child's own status says it ended.
    if (known < 0) refs.push(ref);
    else if (isTerminal(ref.phase) || !isTerminal(refs[known]?.phase)) refs[known] = ref;
  }
}
