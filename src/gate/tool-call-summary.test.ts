import { describe, expect, it } from "vitest";
import type { GuardDecision, ToolCallDecision } from "../api/protocol.js";
import type { ExecutionStatus } from "../api/types.js";
import { toolCallHistoryOf } from "../engine/judge-payload.js";
import { applySummary } from "./tool-call-summary.js";
import type { DecisionRecord } from "./tool-call/records.js";

const decision = (toolCallId: string, allowed: boolean, check?: GuardDecision["check"]): ToolCallDecision => ({
  toolCallId,
  allowed,
  blocked_by: allowed ? "none" : "guard",
  reason: allowed ? "ok" : "secrets: reads files: a secret file [path]",
  guard: { approved: allowed, ...(check !== undefined ? { check } : {}) },
  skippedJudges: true,
  judges: [],
  latencyMs: 1,
});

const record = (step: number, tool: string, d: ToolCallDecision, server?: string): DecisionRecord => ({
  kind: "decision",
  gate: "g",
  write: "w",
  fingerprint: "f",
  iteration: 1,
  step,
  tool,
  ...(server !== undefined ? { server } : {}),
  decision: d,
});

describe("applySummary", () => {
  it("keeps an MCP call's server on its status entry (none for a built-in), and counts as before", () => {
    const status: ExecutionStatus = { iterations: [{ number: 1, phase: "Running" }] } as ExecutionStatus;
    const recent = [
      record(1, "fs.read", decision("i1-s1-a", false, "destructive_pattern")),
      record(2, "files.read_text_file", decision("i1-s2-b", false, "destructive_pattern"), "files"),
      record(3, "files.write_file", decision("i1-s3-c", true), "files"),
    ];
    applySummary(status, new Map([[1, { proposed: 3, allowed: 1, blockedByGuard: 2, blockedByJudge: 0, blockedByApproval: 0, recent }]]));
    const calls = status.iterations?.[0]?.toolCalls;
    expect(calls?.recent?.map((e) => [e.step, e.tool, e.server, e.allowed, e.check])).toEqual([
      [1, "fs.read", undefined, false, "destructive_pattern"],
      [2, "files.read_text_file", "files", false, "destructive_pattern"],
      [3, "files.write_file", "files", true, undefined],
    ]);
    expect(calls?.recent?.[0]).not.toHaveProperty("server");
    expect(status.toolCalls).toEqual({ proposed: 3, allowed: 1, blocked: 2 });
    // The outer loop's judges get the calls as before: tool (its full name), step, outcome.
    expect(toolCallHistoryOf(status, 1)?.[1]).toEqual({
      tool: "files.read_text_file",
      step: 2,
      allowed: false,
      reason: "secrets: reads files: a secret file [path]",
    });
  });
});
