// What `gavel approve|deny` refuses before it sends anything: an approval already decided,
// expired (by its phase or its deadline), or whose Execution is gone or was re-created.
import { describe, expect, it } from "vitest";
import type { Execution, ToolApproval } from "../api/types.js";
import { refusal } from "./approve.js";

const now = new Date("2026-12-07T15:00:00Z");
const approval = (status?: ToolApproval["status"], deadline = "2026-12-07T15:05:00Z"): ToolApproval => ({
  apiVersion: "100monkeys.ai/v1",
  kind: "ToolApproval",
  metadata: { name: "run-i1-s1-a0badf00d", namespace: "team" },
  spec: {
    execution: "run",
    executionUID: "uid-1",
    toolCallId: "i1-s1-x",
    iteration: 1,
    step: 1,
    tool: "fs.write",
    digest: `sha256:${"a".repeat(64)}`,
    trigger: "always",
    deadline,
    onTimeout: "deny",
  },
  ...(status !== undefined ? { status } : {}),
});
const execution = (uid: string) => ({ metadata: { name: "run", uid } }) as Execution;

describe("gavel approve|deny refusals", () => {
  it("lets a pending approval of a live Execution be decided", () => {
    expect(refusal(approval({ phase: "Pending" }), execution("uid-1"), now)).toBeUndefined();
  });
  it("refuses one already decided, naming the decider", () => {
    const decided = approval({ phase: "Approved", decision: { approved: true, decidedBy: "alice", digest: `sha256:${"a".repeat(64)}` } });
    expect(refusal(decided, execution("uid-1"), now)).toBe("toolapproval run-i1-s1-a0badf00d is already decided: approved by alice");
  });
  it("refuses one that expired, by its phase or past its deadline", () => {
    expect(refusal(approval({ phase: "TimedOut" }), execution("uid-1"), now)).toContain(
      "expired at 2026-12-07T15:05:00Z (onTimeout: deny)",
    );
    expect(refusal(approval(undefined, "2026-12-07T14:59:59Z"), execution("uid-1"), now)).toContain("expired at");
  });
  it("refuses one withdrawn because its run ended while it waited, saying why", () => {
    expect(refusal(approval({ phase: "Withdrawn", message: "the run was cancelled" }), execution("uid-1"), now)).toBe(
      "toolapproval run-i1-s1-a0badf00d was withdrawn: the run was cancelled",
    );
  });
  it("refuses one whose Execution is gone or is another run of the same name", () => {
    expect(refusal(approval(), undefined, now)).toBe("toolapproval run-i1-s1-a0badf00d: its Execution run is gone");
    expect(refusal(approval(), execution("uid-2"), now)).toContain("is gone");
  });
});
