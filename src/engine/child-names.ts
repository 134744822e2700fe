// Deterministic names of the workloads and judge children of an Execution, so that a
// retried step finds (rather than duplicates) what it already started.

/** Deepest judge tree: a worker's judge has depth 1, a judge's judge 2, and so on up to 3. */
export const MAX_JUDGE_DEPTH = 3;

// Kubernetes object names: lowercase alphanumerics and '-', at most 253 characters; Docker
// container names are looser, so the stricter rule is the one kept.
function dnsSafe(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
}

/** Name of iteration N's worker run: `<exec>-i<N>`. */
export function workerName(execution: string, iteration: number): string {
  return `${dnsSafe(execution)}-i${iteration}`;
}

/** Name of the judge child of validator k in iteration N: `<exec>-i<N>-v<k>-<judge>`. */
export function judgeChildName(execution: string, iteration: number, validatorIndex: number, judge: string): string {
  return `${dnsSafe(execution)}-i${iteration}-v${validatorIndex}-${dnsSafe(judge)}`.slice(0, 253);
}

/**
 * Name of the judge child of tool_validation entry k for the tool call at `step` of
 * iteration N: `<exec>-i<N>-t<k>-s<step>-<judge>`, unique per call and apart from validation children.
 */
export function toolJudgeChildName(execution: string, iteration: number, entryIndex: number, step: number, judge: string): string {
  return `${dnsSafe(execution)}-i${iteration}-t${entryIndex}-s${step}-${dnsSafe(judge)}`.slice(0, 253);
}

/**
 * Name of the ToolApproval of the tool call at `step` of iteration N: `<exec>-i<N>-s<step>-a<hash>`,
 * the hash of its toolCallId keeping a re-proposed step's call apart from an earlier one's.
 */
export function toolApprovalName(execution: string, iteration: number, step: number, callHash: string): string {
  const tail = `-i${iteration}-s${step}-a${callHash.slice(0, 8)}`;
  return `${dnsSafe(execution).slice(0, 253 - tail.length)}${tail}`;
}
