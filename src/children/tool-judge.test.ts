// The tool-judge step both drivers run: its events, its ChildRef and its outcome.
import { describe, expect, it } from "vitest";
import type { ToolCallProposal } from "../api/protocol.js";
import type { Agent, ChildRef, Execution, ExecutionStatus, SemanticValidatorSpec } from "../api/types.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { toolJudgeChild } from "./child-executions.js";
import { judgeToolCall, mergeToolJudgeRefs, toolJudgeRef, type ToolJudgeEvent } from "./tool-judge.js";

const parent: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "uid-1" },
  spec: { agentRef: { name: "w" } },
};
const worker: Agent = { apiVersion: "100monkeys.ai/v1", kind: "Agent", metadata: { name: "w" }, spec: { tools: ["fs.write"] } };
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "rule-judge", labels: { role: "judge" } },
  spec: { runtime: { image: "gavel/rule-judge:dev" } },
};
const entry = { type: "semantic", judge_agent: "rule-judge", criteria: "safe?" } as SemanticValidatorSpec;
const proposal: ToolCallProposal = {
  namespace: "team",
  execution: "demo",
  iteration: 2,
  step: 5,
  toolCallId: "tc-9",
  tool: "fs.write",
  args: { path: "/workspace/a" },
};

function child(index: number) {
  return toolJudgeChild({ parent, worker, judge, entry, index, proposal, policyViolations: [], workerMounts: [], stdin: true });
}

/** A driver that records what the step did and ends each child with `outcome`. */
function driver(outcome: JudgeOutcome) {
  const events: ToolJudgeEvent[] = [];
  const refs: ChildRef[] = [];
  return {
    events,
    refs,
    announced: new Set<string>(),
    publish: (e: ToolJudgeEvent[]) => void events.push(...e),
    track: (ref: ChildRef) => void refs.push(ref),
    run: () => Promise.resolve(outcome),
  };
}

describe("judgeToolCall", () => {
  it("shows the call once however many entries judge it, each judge's start and end, and answers the verdict with the child's name", async () => {
    const d = driver({ ok: true, result: { score: 0.9, confidence: 0.8, reasoning: "fine" } });
    const first = await judgeToolCall(child(0), proposal, d);
    const second = await judgeToolCall(child(1), proposal, d);
    expect(d.events.map((e) => e.event)).toEqual([
      "toolcall.proposed",
      "judge.spawned",
      "judge.finished",
      "judge.spawned",
      "judge.finished",
    ]);
    expect(d.events[0]?.data).toEqual({ iteration: 2, step: 5, tool: "fs.write" });
    expect(d.events[1]?.data).toEqual({ child: child(0).name, judge: "rule-judge", iteration: 2, step: 5, purpose: "tool_validation" });
    expect(d.events[2]?.data).toEqual({ child: child(0).name, judge: "rule-judge", score: 0.9, confidence: 0.8 });
    expect(first).toEqual({ result: { score: 0.9, confidence: 0.8, reasoning: "fine" }, child: child(0).name });
    expect(second.child).toBe(child(1).name);
  });

  it("keeps a ChildRef that follows a rejection, unless the engine stopped the child first", async () => {
    const d = driver({ ok: false, rejection: "timed_out", detail: "deadline" });
    const result = await judgeToolCall(child(0), proposal, d);
    expect(result).toEqual({ rejection: "timed_out", detail: "deadline", child: child(0).name });
    expect(d.refs).toEqual([
      {
        name: child(0).name,
        purpose: "tool_validation",
        iteration: 2,
        validatorIndex: 0,
        judge: "rule-judge",
        toolCallId: "tc-9",
        phase: "TimedOut",
      },
    ]);
    expect(d.events.at(-1)?.data).toEqual({ child: child(0).name, judge: "rule-judge", rejection: "timed_out" });

    const stopped = driver({ ok: false, rejection: "failed", detail: "exit 1" });
    const run = stopped.run;
    stopped.run = () => {
      const ref = stopped.refs[0];
      if (ref !== undefined) ref.phase = "Cancelled";
      return run();
    };
    await judgeToolCall(child(0), proposal, stopped);
    expect(stopped.refs[0]?.phase).toBe("Cancelled");
  });
});

describe("tool-judge ChildRefs", () => {
  it("is made only for tool_validation children, Running until the child's status ends", () => {
    const c = child(1).execution;
    expect(toolJudgeRef(c)).toMatchObject({ validatorIndex: 1, toolCallId: "tc-9", phase: "Running" });
    expect(toolJudgeRef({ ...c, status: { phase: "Pending" } })?.phase).toBe("Running");
    expect(toolJudgeRef({ ...c, status: { phase: "Succeeded" } })?.phase).toBe("Succeeded");
    expect(toolJudgeRef({ ...c, spec: { ...c.spec, parent: { ...c.spec.parent!, purpose: "validation" } } })).toBeUndefined();
  });

  it("merges listed children into the status; a phase the engine gave stands until the child itself ended", () => {
    const c = child(0).execution;
    const status: ExecutionStatus = {};
    mergeToolJudgeRefs(status, [c]);
    expect(status.children?.map((r) => r.phase)).toEqual(["Running"]);
    (status.children as ChildRef[])[0]!.phase = "Cancelled";
    mergeToolJudgeRefs(status, [{ ...c, status: { phase: "Running" } }]);
    expect(status.children?.map((r) => r.phase)).toEqual(["Cancelled"]);
    mergeToolJudgeRefs(status, [{ ...c, status: { phase: "Failed" } }]);
    expect(status.children?.map((r) => r.phase)).toEqual(["Failed"]);
  });
});
