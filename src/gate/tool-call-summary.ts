// An Execution's tool calls in its status, the same in both drivers: the store's tallies
// (ToolCallStore.summaryOf) folded into per-iteration counts and the most recent calls (names
// and outcomes, never argument values). An outer-loop judge's tool_call_history is read from
// them by the engine (toolCallHistoryOf, engine/judge-payload.ts).
import type { ExecutionStatus, ToolCallEntry, ToolCallSummary } from "../api/types.js";
import type { IterationTally } from "./tool-call/iteration-index.js";

/** Most recent tool calls kept per iteration in the status; the counts cover all of them. */
export const RECENT_TOOL_CALLS = 20;

/** Folds the store's tallies of one Execution into its status: per-iteration counts and recent calls, and totals. */
export function applySummary(status: ExecutionStatus, tallies: ReadonlyMap<number, IterationTally>): void {
  const byIteration = new Map<number, ToolCallSummary>();
  for (const [iteration, t] of tallies) {
    const recent: ToolCallEntry[] = t.recent.map(({ step, tool, server, decision: d }) => ({
      step,
      tool,
      ...(server !== undefined ? { server } : {}),
      toolCallId: d.toolCallId,
      allowed: d.allowed,
      blockedBy: d.blocked_by,
      ...(d.guard.check !== undefined ? { check: d.guard.check } : {}),
      ...(d.allowed ? {} : { reason: d.reason.length > 256 ? `${d.reason.slice(0, 253)}...` : d.reason }),
      ...(d.judges.length > 0 ? { judges: d.judges.map((j) => j.child).filter((c) => c !== "") } : {}),
    }));
    byIteration.set(iteration, {
      proposed: t.proposed,
      allowed: t.allowed,
      blockedByGuard: t.blockedByGuard,
      blockedByJudge: t.blockedByJudge,
      ...(t.blockedByApproval > 0 ? { blockedByApproval: t.blockedByApproval } : {}),
      recent,
    });
  }
  for (const it of status.iterations ?? []) {
    const s = byIteration.get(it.number);
    if (s !== undefined) it.toolCalls = s;
  }
  let proposed = 0;
  let allowed = 0;
  let blocked = 0;
  for (const it of status.iterations ?? []) {
    proposed += it.toolCalls?.proposed ?? 0;
    allowed += it.toolCalls?.allowed ?? 0;
    blocked += (it.toolCalls?.blockedByGuard ?? 0) + (it.toolCalls?.blockedByJudge ?? 0) + (it.toolCalls?.blockedByApproval ?? 0);
  }
  status.toolCalls = { proposed, allowed, blocked };
}
