// The pure parts of the controller's event publishing: dedup ids, how events are filed in
// the stream (as local mode files them), and the status fingerprint the outbox relies on.
import { describe, expect, it } from "vitest";
import type { Execution, ExecutionStatus } from "../api/types.js";
import { eventId, statusFingerprint, toGavelEvents } from "./execution-events.js";

const ex: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "quick", namespace: "team-a", uid: "u-1" },
  spec: { agentRef: { name: "writer" } },
};

describe("eventId", () => {
  it("is the same for the same transition decided twice, and differs per iteration, validator, child and phase", () => {
    const a = eventId(ex, "validator.result", { iteration: 1, index: 1, type: "semantic", passed: true, score: 1 });
    // A retried reconcile decides the same transition again; its data may differ in detail (reasoning) but not in what it is about
    expect(eventId(ex, "validator.result", { iteration: 1, index: 1, type: "semantic", passed: true, score: 1, reasoning: "x" })).toBe(a);
    const ids = [
      a,
      eventId(ex, "validator.result", { iteration: 2, index: 1 }),
      eventId(ex, "validator.result", { iteration: 1, index: 0 }),
      eventId(ex, "validator.started", { iteration: 1, index: 1 }),
      eventId(ex, "execution.started", { agent: "writer" }),
      eventId(ex, "execution.phase", { phase: "Running" }),
      eventId(ex, "execution.phase", { phase: "Succeeded" }),
      eventId(ex, "iteration.started", { iteration: 1 }),
      eventId(ex, "iteration.finished", { iteration: 1 }),
      eventId(ex, "worker.finished", { iteration: 1 }),
      eventId(ex, "judge.spawned", { child: "quick-i1-v1-rule-judge" }),
      eventId(ex, "judge.finished", { child: "quick-i1-v1-rule-judge" }),
      eventId(ex, "judge.finished", { child: "quick-i2-v1-rule-judge" }),
      eventId(ex, "toolcall.decision", { iteration: 1, step: 3 }),
      eventId(ex, "something.else", { a: 1 }),
      eventId(ex, "something.else", { a: 2 }),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("names the Execution's namespace, name and uid, so a re-created Execution of the same name is not deduplicated", () => {
    expect(eventId(ex, "execution.started", {})).toBe("team-a/quick/u-1/started");
    const again = { ...ex, metadata: { ...ex.metadata, uid: "u-2" } };
    expect(eventId(again, "execution.started", {})).not.toBe(eventId(ex, "execution.started", {}));
  });
});

describe("toGavelEvents", () => {
  it("files the Execution's events under it and a judge's under the judge child, in the Execution's tree, in order", () => {
    const events = toGavelEvents(
      ex,
      [
        { event: "validator.started", data: { iteration: 1, index: 1, type: "semantic" } },
        {
          event: "judge.spawned",
          data: { child: "quick-i1-v1-rule-judge", judge: "rule-judge", iteration: 1, index: 1, purpose: "validation" },
        },
      ],
      new Date("2026-11-23T12:00:00Z"),
    );
    expect(events.map((e) => [e.namespace, e.root, e.execution, e.type])).toEqual([
      ["team-a", "quick", "quick", "validator.started"],
      ["team-a", "quick", "quick-i1-v1-rule-judge", "judge.spawned"],
    ]);
    expect(events[1]?.data).toEqual({
      child: "quick-i1-v1-rule-judge",
      judge: "rule-judge",
      iteration: 1,
      index: 1,
      purpose: "validation",
    });
    expect(events[0]?.time).toBe("2026-11-23T12:00:00.000Z");
  });
});

describe("statusFingerprint", () => {
  const base: ExecutionStatus = {
    phase: "Running",
    iteration: 1,
    startTime: "2026-11-23T12:00:00Z",
    iterations: [{ number: 1, phase: "Running", startTime: "2026-11-23T12:00:00Z" }],
    children: [],
  };

  it("ignores what the API server may reformat and changes with every transition engine events report", () => {
    // Timestamps, messages and reasoning do not decide whether a write happened
    expect(statusFingerprint({ ...base, startTime: "2026-11-23T12:00:00.000Z", message: "m" })).toBe(statusFingerprint(base));
    const worker: ExecutionStatus = { ...base, iterations: [{ number: 1, phase: "Validating", exitCode: 0, validators: [] }] };
    const validated: ExecutionStatus = {
      ...base,
      iterations: [
        {
          number: 1,
          phase: "Validating",
          exitCode: 0,
          validators: [{ index: 0, type: "exit_code", passed: true, score: 1, confidence: 1, reasoning: "ok" }],
        },
      ],
    };
    const spawned: ExecutionStatus = {
      ...validated,
      children: [{ name: "c", purpose: "validation", iteration: 1, validatorIndex: 1, judge: "j", phase: "Running" }],
    };
    const judged: ExecutionStatus = {
      ...validated,
      children: [{ name: "c", purpose: "validation", iteration: 1, validatorIndex: 1, judge: "j", phase: "Succeeded" }],
    };
    const done: ExecutionStatus = { ...judged, phase: "Succeeded" };
    const prints = [undefined, base, worker, validated, spawned, judged, done].map(statusFingerprint);
    expect(new Set(prints).size).toBe(prints.length);
  });
});
