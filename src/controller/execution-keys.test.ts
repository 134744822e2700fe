// executionKeys: a new Execution is queued first, one at work normally; its parent is woken too.
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { executionKeys, podKeys } from "./execution-keys.js";
import { PRIORITY } from "./runtime/work-queue.js";

const parentRef = { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "run", uid: "u1", controller: true };

function execution(status?: Execution["status"], owned = false): Execution {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: { name: owned ? "run-i1-v0-judge" : "run", namespace: "ns", ...(owned ? { ownerReferences: [parentRef] } : {}) },
    spec: { agentRef: { name: "a" } },
    ...(status !== undefined ? { status } : {}),
  } as Execution;
}

describe("executionKeys", () => {
  it("queues an Execution no reconcile has started first, and one started or ended normally", () => {
    expect(executionKeys(execution())).toEqual([{ key: "ns/run", priority: PRIORITY.first }]);
    // Held before its start (a gate or an earlier run of its name): still not started.
    expect(executionKeys(execution({ phase: "Pending" }))).toEqual([{ key: "ns/run", priority: PRIORITY.first }]);
    const started = { phase: "Running" as const, startTime: "2026-12-07T18:00:00Z" };
    expect(executionKeys(execution(started))).toEqual([{ key: "ns/run", priority: PRIORITY.normal }]);
    // Refused before it started: nothing to hurry.
    expect(executionKeys(execution({ phase: "Failed" }))).toEqual([{ key: "ns/run", priority: PRIORITY.normal }]);
  });

  it("wakes a judge child's parent normally, and the new child itself first", () => {
    expect(executionKeys(execution(undefined, true))).toEqual([
      { key: "ns/run-i1-v0-judge", priority: PRIORITY.first },
      { key: "ns/run", priority: PRIORITY.normal },
    ]);
  });

  it("wakes the Execution that controls a pod, and nothing for another pod", () => {
    expect(podKeys({ metadata: { name: "p", namespace: "ns", ownerReferences: [parentRef] } })).toEqual(["ns/run"]);
    expect(podKeys({ metadata: { name: "p", namespace: "ns" } })).toEqual([]);
  });
});
