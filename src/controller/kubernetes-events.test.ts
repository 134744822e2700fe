// Engine events as Kubernetes Events.
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { kubernetesEvent } from "./kubernetes-events.js";

const ex: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "u1" },
  spec: { agentRef: { name: "w" } },
};
const now = new Date("2026-11-23T13:00:00Z");

describe("kubernetesEvent", () => {
  it("names the Execution, turns the engine event type into a reason, and warns on failures", () => {
    const e = kubernetesEvent(ex, "iteration.started", { iteration: 2, feedback: "fix" }, now, 7);
    expect(e.involvedObject).toEqual({ apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "demo", namespace: "team", uid: "u1" });
    expect(e.reason).toBe("IterationStarted");
    expect(e.type).toBe("Normal");
    expect(JSON.parse(e.message ?? "")).toEqual({ iteration: 2, feedback: "fix" });
    expect(e.metadata.name).toBe(`demo.${now.getTime().toString(16)}7`);
    expect(kubernetesEvent(ex, "execution.phase", { phase: "Failed" }, now, 0).type).toBe("Warning");
    expect(kubernetesEvent(ex, "validator.result", { passed: false }, now, 0).type).toBe("Warning");
    expect(kubernetesEvent(ex, "judge.finished", { rejection: "timed_out" }, now, 0)).toMatchObject({
      type: "Warning",
      reason: "JudgeFinished",
    });
    expect(kubernetesEvent(ex, "worker.finished", { out: "x".repeat(5000) }, now, 0).message).toHaveLength(1024);
    expect(kubernetesEvent(ex, "worker.finished", { exitCode: 0 }, now, 0).type).toBe("Normal");
    // A worker whose stderr is merged into stdout: a Warning, saying why (an anchored regex may fail on a log line).
    expect(
      kubernetesEvent(ex, "worker.finished", { exitCode: 0, streamsMerged: "stderr is merged into stdout: ..." }, now, 0),
    ).toMatchObject({ type: "Warning", reason: "WorkerFinished" });
    // A worker that gave up on an unreachable gate (exit 75): its own reason, so it does not read as the agent's failure.
    expect(
      kubernetesEvent(
        ex,
        "worker.finished",
        { exitCode: 75, gateUnreachable: "the tool-call gate could not be reached for 27 s (...)" },
        now,
        0,
      ),
    ).toMatchObject({ type: "Warning", reason: "WorkerGateUnreachable" });
  });
});
