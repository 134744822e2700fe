// The span tree an Execution's events make: root, iterations, validators, validation judges,
// verdicts as gen_ai.evaluation.result events on the iteration they judged.
import { describe, expect, it } from "vitest";
import type { GavelEvent } from "../api/events.js";
import { ExecutionTrace, ExecutionTraces } from "./execution-trace.js";
import { parseTraceparent } from "./trace-context.js";
import { recordingTracing } from "./tracing.js";

const ex = { namespace: "team-a", name: "ex-1", uid: "uid-1", agent: "coder" };
let t = 0;
const ev = (type: string, data: Record<string, unknown>): GavelEvent => ({
  id: `${t}`,
  time: new Date(1_700_000_000_000 + 1000 * t++).toISOString(),
  namespace: "team-a",
  root: "ex-1",
  execution: "ex-1",
  type,
  data,
});

const RUN: GavelEvent[] = [
  ev("execution.started", { agent: "coder" }),
  ev("iteration.started", { iteration: 1 }),
  ev("worker.finished", { iteration: 1, exitCode: 0, timedOut: false }),
  ev("validator.started", { iteration: 1, index: 0, type: "exit_code" }),
  ev("validator.result", { iteration: 1, index: 0, type: "exit_code", passed: true, score: 1, confidence: 1, reasoning: "exit 0" }),
  ev("validator.started", { iteration: 1, index: 1, type: "semantic" }),
  ev("judge.spawned", { child: "ex-1-i1-v1-j", judge: "j", iteration: 1, index: 1, purpose: "validation" }),
  ev("judge.spawned", { child: "ex-1-i1-t0-s1-j", judge: "j", iteration: 1, step: 1, purpose: "tool_validation" }),
  ev("judge.finished", { child: "ex-1-i1-v1-j", judge: "j", score: 0.4, confidence: 0.9 }),
  ev("validator.result", { iteration: 1, index: 1, type: "semantic", passed: false, score: 0.4, confidence: 0.9, reasoning: "too short" }),
  ev("iteration.finished", { iteration: 1, outcome: "refining", score: 0.4 }),
  ev("iteration.started", { iteration: 2 }),
  ev("iteration.finished", { iteration: 2, outcome: "failed", reason: "timed_out" }),
  ev("execution.phase", { phase: "Failed", message: "no iteration passed" }),
];

describe("ExecutionTrace", () => {
  it("builds the tree with planned ids: the worker's TRACEPARENT names its iteration span before it exists", () => {
    const tracing = recordingTracing();
    const trace = new ExecutionTrace(tracing, ex);
    const parent = parseTraceparent(trace.iterationParent(1));
    for (const e of RUN) trace.observe(e);
    const byName = (n: string) => tracing.spans.filter((s) => s.name === n);
    const [root] = byName("invoke_agent coder");
    const iterations = byName("iteration");
    expect(root?.parent).toBeUndefined();
    expect(root?.ref.traceId).toBe(trace.traceId);
    expect(root?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "coder",
      "gavel.execution.name": "ex-1",
      "gavel.execution.phase": "Failed",
    });
    expect(root?.error).toBe("failed");
    expect(iterations.map((s) => s.attributes["gavel.iteration"])).toEqual([1, 2]);
    expect(iterations[0]?.ref.spanId).toBe(parent?.spanId);
    expect(iterations.every((s) => s.parent?.spanId === root?.ref.spanId)).toBe(true);
    const [semantic] = byName("validate semantic");
    expect(byName("validate exit_code")[0]?.parent?.spanId).toBe(iterations[0]?.ref.spanId);
    expect(semantic?.attributes).toMatchObject({ "gavel.passed": false, "gavel.score": 0.4 });
    // Only the validation judge: tool judges are the gate's spans.
    const judges = byName("invoke_agent j");
    expect(judges).toHaveLength(1);
    expect(judges[0]?.parent?.spanId).toBe(semantic?.ref.spanId);
    expect(iterations[0]?.events).toEqual([
      {
        name: "gen_ai.evaluation.result",
        attributes: {
          "gen_ai.evaluation.name": "exit_code",
          "gen_ai.evaluation.score.value": 1,
          "gen_ai.evaluation.score.label": "pass",
          "gen_ai.evaluation.explanation": "exit 0",
        },
      },
      { name: "gen_ai.evaluation.result", attributes: { "gen_ai.evaluation.name": "j", "gen_ai.evaluation.score.value": 0.4 } },
      {
        name: "gen_ai.evaluation.result",
        attributes: {
          "gen_ai.evaluation.name": "semantic",
          "gen_ai.evaluation.score.value": 0.4,
          "gen_ai.evaluation.score.label": "fail",
          "gen_ai.evaluation.explanation": "too short",
        },
      },
    ]);
    expect(tracing.spans.every((s) => s.ended)).toBe(true);
    expect(trace.done).toBe(true);
  });

  it("after a controller restart, a span whose start was missed begins at the first event seen, under the same ids", () => {
    const tracing = recordingTracing();
    const traces = new ExecutionTraces(tracing);
    const planned = parseTraceparent(traces.iterationParent(ex, 2));
    traces.observe(ex, RUN.slice(12));
    const [iteration] = tracing.spans.filter((s) => s.name === "iteration");
    expect(iteration?.ref.spanId).toBe(planned?.spanId);
    expect(iteration?.attributes).toMatchObject({ "gavel.iteration": 2, "gavel.iteration.outcome": "failed" });
    expect(tracing.spans.every((s) => s.ended)).toBe(true);
  });

  it("a rejected judge marks its span failed with the rejection as error.type", () => {
    const tracing = recordingTracing();
    const trace = new ExecutionTrace(tracing, ex);
    trace.observe(ev("judge.spawned", { child: "c", judge: "j", iteration: 1, index: 0, purpose: "validation" }));
    trace.observe(ev("judge.finished", { child: "c", judge: "j", rejection: "malformed_output" }));
    const judge = tracing.spans.find((s) => s.name === "invoke_agent j");
    expect(judge?.error).toBe("malformed_output");
    expect(tracing.spans.find((s) => s.name === "iteration")?.events[0]?.attributes).toEqual({
      "gen_ai.evaluation.name": "j",
      "error.type": "malformed_output",
    });
  });

  it("drops the entry of a deleted Execution (its spans end, the root marked deleted) and of a replaced one: entries stay bounded", () => {
    const tracing = recordingTracing();
    const traces = new ExecutionTraces(tracing);
    traces.iterationParent(ex, 1);
    traces.observe(ex, RUN.slice(1, 4));
    expect(traces.size).toBe(1);
    traces.deleted(ex.namespace, ex.name);
    expect(traces.size).toBe(0);
    expect(tracing.spans.every((s) => s.ended)).toBe(true);
    expect(tracing.spans.find((s) => s.name === "invoke_agent coder")?.error).toBe("deleted");
    // Re-created under the same name (another uid): the old run's trace ends, one entry remains.
    traces.iterationParent(ex, 1);
    const again = { ...ex, uid: "uid-2" };
    traces.iterationParent(again, 1);
    expect(traces.size).toBe(1);
    expect(
      tracing.spans
        .filter((s) => s.name === "invoke_agent coder" && s.ref.traceId !== tracing.spans.at(-1)?.ref.traceId)
        .every((s) => s.ended),
    ).toBe(true);
    traces.deleted(ex.namespace, ex.name);
    // 1,000 Executions started and deleted leave nothing behind.
    for (let i = 0; i < 1000; i++) {
      traces.iterationParent({ ...ex, name: `ex-${i}`, uid: `u-${i}` }, 1);
      traces.deleted(ex.namespace, `ex-${i}`);
    }
    expect(traces.size).toBe(0);
  });
});
