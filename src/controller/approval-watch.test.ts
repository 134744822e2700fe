// When a call waiting for a person stops waiting because its run ended: the Execution as the
// controller's cache shows it (cancelled, ended, being deleted, or another run of that name).
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { runEnded } from "./approval-watch.js";
import { CANCEL_ANNOTATION } from "./execution-pods.js";

function execution(o: { uid?: string; phase?: string; annotations?: Record<string, string>; deleting?: boolean } = {}): Execution {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: {
      name: "ex",
      namespace: "team",
      uid: o.uid ?? "u-1",
      ...(o.annotations !== undefined ? { annotations: o.annotations } : {}),
      ...(o.deleting === true ? { deletionTimestamp: "2026-12-07T18:00:00Z" } : {}),
    },
    spec: { agentRef: { name: "a" } },
    ...(o.phase !== undefined ? { status: { phase: o.phase } } : {}),
  } as Execution;
}

describe("runEnded", () => {
  it("is undefined while the run goes on", () => {
    expect(runEnded(execution({ phase: "Running" }), "u-1")).toBeUndefined();
    expect(runEnded(execution({ phase: "Refining" }), "u-1")).toBeUndefined();
  });
  it("says why once it is cancelled, ended, being deleted, gone, or re-created under the same name", () => {
    expect(runEnded(execution({ phase: "Running", annotations: { [CANCEL_ANNOTATION]: "yes" } }), "u-1")).toBe("the run was cancelled");
    expect(runEnded(execution({ phase: "Cancelled" }), "u-1")).toBe("the run ended (Cancelled)");
    expect(runEnded(execution({ phase: "Failed" }), "u-1")).toBe("the run ended (Failed)");
    expect(runEnded(execution({ deleting: true }), "u-1")).toBe("the Execution is being deleted");
    expect(runEnded(undefined, "u-1")).toBe("the Execution was deleted");
    expect(runEnded(execution({ uid: "u-2" }), "u-1")).toBe("the Execution was deleted (another of that name exists)");
  });
});
