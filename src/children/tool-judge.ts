// One tool_validation judge of a proposed tool call, as both drivers keep its books: the
// ChildRef an Execution's status lists for it.
import type { ChildRef, Execution, ExecutionStatus } from "../api/types.js";
import { isTerminal } from "../engine/outer-loop.js";

/**
 * Lists an Execution's tool-judge children (made by the gate on any replica) in its
 * status.children, as local mode does, with their current phase: the engine then stops
 * them with the Execution (cancel, deadline) like its validation judges.
 */
export function mergeToolJudgeRefs(status: ExecutionStatus, children: readonly Execution[]): void {
  const refs = (status.children ??= []);
  for (const child of children) {
    const parent = child.spec.parent;
    if (parent?.purpose !== "tool_validation") continue;
    const ref: ChildRef = {
      name: child.metadata.name,
      purpose: "tool_validation",
      iteration: parent.iteration,
      validatorIndex: parent.validatorIndex,
      judge: child.spec.agentRef.name,
      ...(parent.toolCallId !== undefined ? { toolCallId: parent.toolCallId } : {}),
      phase: child.status?.phase === undefined || child.status.phase === "Pending" ? "Running" : child.status.phase,
    };
    const known = refs.findIndex((r) => r.name === ref.name);
    // A phase the engine already gave it (stopped with its parent) stands until the child's own status says it ended.
    if (known < 0) refs.push(ref);
    else if (isTerminal(ref.phase) || !isTerminal(refs[known]?.phase)) refs[known] = ref;
  }
}

