// The ToolApproval the gate creates for a call: the call as a person sees it, its digest, what
// the guard and the judges found, the deadline, owned by the Execution so it goes with it.
import { describe, expect, it } from "vitest";
import type { ToolCallDecision } from "../api/protocol.js";
import type { Execution, ToolApproval } from "../api/types.js";
import { callDigest } from "../gate/approval.js";
import { expiryWarningAt, toolApprovalOf } from "./tool-approvals.js";

const execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "run", namespace: "team", uid: "uid-1" },
} as Execution;
const proposal = {
  namespace: "team",
  execution: "run",
  iteration: 2,
  step: 3,
  toolCallId: "i2-s3-x",
  tool: "cmd.run",
  args: { command: `echo ${"y".repeat(2000)}` },
  intent: "say it",
};
const pending: ToolCallDecision = {
  toolCallId: "i2-s3-x",
  allowed: false,
  blocked_by: "judge",
  reason: "judge sec: score 0.40 is below min_score 0.70. too broad",
  guard: { approved: true, flags: ["noisy_echo"] },
  skippedJudges: false,
  judges: [{ judge: "sec", child: "run-i2-t0-s3-sec", passed: false, result: { score: 0.4, confidence: 0.9, reasoning: "too broad" } }],
  latencyMs: 12,
};

describe("expiryWarningAt", () => {
  const at = (created: string | undefined, deadline: string) =>
    new Date(
      expiryWarningAt({
        metadata: { name: "a", ...(created !== undefined ? { creationTimestamp: created } : {}) },
        spec: { deadline } as ToolApproval["spec"],
      }),
    ).toISOString();
  it("is a fifth of the approval's time before its deadline, at most a minute before", () => {
    expect(at("2026-12-07T15:00:00Z", "2026-12-07T15:00:10Z")).toBe("2026-12-07T15:00:08.000Z");
    expect(at("2026-12-07T15:00:00Z", "2026-12-07T15:05:00Z")).toBe("2026-12-07T15:04:00.000Z");
    expect(at("2026-12-07T15:00:00Z", "2026-12-07T16:00:00Z")).toBe("2026-12-07T15:59:00.000Z");
    expect(at(undefined, "2026-12-07T16:00:00Z")).toBe("2026-12-07T15:59:00.000Z");
  });
});

describe("toolApprovalOf", () => {
  it("shows the call (long strings cut), binds it to its digest, lists the guard's findings and each verdict, and is owned by the Execution", () => {
    const now = new Date("2026-12-07T15:00:00Z");
    const digest = callDigest(proposal);
    const a = toolApprovalOf(
      "run-i2-s3-a1",
      execution,
      {
        proposal,
        digest,
        repeatDigest: `sha256:${"b".repeat(64)}`,
        trigger: "on_judge_reject",
        pending,
        timeoutMs: 90_000,
        onTimeout: "fail",
      },
      now,
    );
    expect(a.metadata).toMatchObject({ name: "run-i2-s3-a1", namespace: "team", labels: { "gavel.dev/execution": "run" } });
    expect(a.metadata.ownerReferences).toEqual([
      { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "run", uid: "uid-1", controller: true, blockOwnerDeletion: true },
    ]);
    expect(a.spec).toMatchObject({
      execution: "run",
      executionUID: "uid-1",
      toolCallId: "i2-s3-x",
      iteration: 2,
      step: 3,
      tool: "cmd.run",
      intent: "say it",
      digest,
      repeatDigest: `sha256:${"b".repeat(64)}`,
      trigger: "on_judge_reject",
      reason: pending.reason,
      guardFindings: ["flagged: noisy_echo"],
      judges: [{ judge: "sec", child: "run-i2-t0-s3-sec", passed: false, score: 0.4, confidence: 0.9, reasoning: "too broad" }],
      deadline: "2026-12-07T15:01:30.000Z",
      onTimeout: "fail",
    });
    expect(a.spec.arguments?.command).toHaveLength(1024);
  });
});
