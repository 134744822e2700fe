// Engine events as Kubernetes Event notes: reason from the type, Warning on failures, a sentence.
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { engineEventNote } from "./kubernetes-events.js";
import { coreEvent } from "./runtime/event-recorder.js";

const ex: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "u1" },
  spec: { agentRef: { name: "w" } },
};
const now = new Date("2026-11-23T13:00:00Z");

describe("engineEventNote", () => {
  it("turns the engine event type into a reason, warns on failures, and says it in a sentence", () => {
    expect(engineEventNote("iteration.started", { iteration: 2, feedback: "fix the sum" })).toEqual({
      type: "Normal",
      reason: "IterationStarted",
      message: "Iteration 2 started, with feedback: fix the sum",
    });
    expect(engineEventNote("execution.phase", { phase: "Failed", message: "max_iterations 2 reached" })).toEqual({
      type: "Warning",
      reason: "ExecutionPhase",
      message: "Execution Failed: max_iterations 2 reached",
    });
    expect(engineEventNote("execution.phase", { phase: "Succeeded", score: 0.91234, message: "all validators passed" }).message).toBe(
      "Execution Succeeded with score 0.912: all validators passed",
    );
    expect(engineEventNote("validator.started", { iteration: 1, index: 2, type: "regex" }).message).toBe(
      "Iteration 1: validator 2 (regex) started",
    );
    expect(
      engineEventNote("validator.result", {
        iteration: 1,
        index: 0,
        type: "semantic",
        passed: false,
        score: 0.4,
        confidence: 0.9,
        reasoning: "misses the tests",
      }),
    ).toEqual({
      type: "Warning",
      reason: "ValidatorResult",
      message: "Iteration 1: validator 0 (semantic) failed, score 0.4 (confidence 0.9): misses the tests",
    });
    expect(engineEventNote("judge.spawned", { child: "demo-i1-v0-j", judge: "j", iteration: 1, index: 0 }).message).toBe(
      "Judge j started as Execution demo-i1-v0-j for validator 0 of iteration 1",
    );
    expect(engineEventNote("judge.finished", { child: "c", judge: "j", rejection: "timed_out" })).toMatchObject({
      type: "Warning",
      reason: "JudgeFinished",
      message: "Judge j (c) gave no verdict: timed_out",
    });
    expect(engineEventNote("judge.finished", { child: "c", judge: "j", score: 1, confidence: 0.8 }).message).toBe(
      "Judge j (c) finished, score 1 (confidence 0.8)",
    );
    expect(engineEventNote("iteration.finished", { iteration: 1, outcome: "refining", score: 0.5 }).message).toBe(
      "Iteration 1 refining with score 0.5",
    );
    expect(engineEventNote("worker.finished", { iteration: 1, exitCode: 0, timedOut: false })).toEqual({
      type: "Normal",
      reason: "WorkerFinished",
      message: "Worker of iteration 1 finished: exit 0",
    });
    expect(engineEventNote("worker.finished", { iteration: 3, exitCode: 137, timedOut: true }).message).toBe(
      "Worker of iteration 3 finished: timed out",
    );
    expect(engineEventNote("something.new", { a: 1, b: "x" }).message).toBe("something.new: a 1, b x");
  });

  it("warns on a worker whose streams were merged, and gives a gate-unreachable exit its own reason", () => {
    // stderr merged into stdout: a Warning saying why (an anchored regex may fail on a log line).
    expect(
      engineEventNote("worker.finished", { iteration: 1, exitCode: 0, streamsMerged: "stderr is merged into stdout: ..." }),
    ).toMatchObject({
      type: "Warning",
      reason: "WorkerFinished",
      message: "Worker of iteration 1 finished: exit 0; stderr is merged into stdout: ...",
    });
    // Exit 75 on an unreachable gate: its own reason, so it does not read as the agent's failure.
    expect(
      engineEventNote("worker.finished", {
        iteration: 1,
        exitCode: 75,
        gateUnreachable: "the tool-call gate could not be reached for 27 s (...)",
      }),
    ).toEqual({
      type: "Warning",
      reason: "WorkerGateUnreachable",
      message: "Worker of iteration 1 gave up (exit 75): the tool-call gate could not be reached for 27 s (...)",
    });
  });

  it("becomes a core/v1 Event on the Execution, cut at 1024 characters", () => {
    const e = coreEvent(
      ex,
      engineEventNote("worker.finished", { iteration: 1, exitCode: 1, streamsMerged: "x".repeat(5000) }),
      "gavel-controller",
      now,
    );
    expect(e.involvedObject).toEqual({ apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "demo", namespace: "team", uid: "u1" });
    expect(e).toMatchObject({ reason: "WorkerFinished", type: "Warning", source: { component: "gavel-controller" }, count: 1 });
    expect(e.message).toHaveLength(1024);
    expect(e.metadata.name).toMatch(new RegExp(`^demo\\.${now.getTime().toString(16)}[0-9a-f]{8}$`));
    expect(coreEvent(ex, engineEventNote("execution.started", { agent: "w" }), "gavel-controller", now).metadata.name).not.toBe(
      coreEvent(ex, engineEventNote("execution.started", { agent: "w" }), "gavel-controller", now).metadata.name,
    );
  });
});
