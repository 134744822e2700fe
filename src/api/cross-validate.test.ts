// Cross-object rules: judge references resolve to one-shot judges, judge inputs are mappable,
// and problems become a Ready condition.
import { describe, expect, it } from "vitest";
import { crossValidateAgent, crossValidateAgents, crossValidateExecution, judgeReferences, readyCondition } from "./cross-validate.js";
import type { Agent, AgentSpec, Execution } from "./types.js";

function agent(name: string, spec: AgentSpec, labels?: Record<string, string>): Agent {
  return { apiVersion: "100monkeys.ai/v1", kind: "Agent", metadata: { name, ...(labels ? { labels } : {}) }, spec };
}
const judge = (name: string, spec: AgentSpec = { execution: { mode: "one-shot" } }) => agent(name, spec, { role: "judge" });
const worker = agent("worker", {
  execution: {
    validation: [{ type: "exit_code" }, { type: "semantic", judge_agent: "a" }, { type: "multi_judge", judges: ["a", "b"] }],
    tool_validation: [{ type: "semantic", judge_agent: "c" }],
  },
});

describe("cross-object validation", () => {
  it("lists every judge reference with its field", () => {
    expect(judgeReferences(worker)).toEqual([
      { path: "spec.execution.validation[1].judge_agent", name: "a" },
      { path: "spec.execution.validation[2].judges[0]", name: "a" },
      { path: "spec.execution.validation[2].judges[1]", name: "b" },
      { path: "spec.execution.tool_validation[0].judge_agent", name: "c" },
    ]);
  });

  it("accepts references to existing one-shot judges", () => {
    const all = [worker, judge("a"), judge("b"), judge("c")];
    expect(crossValidateAgents(all).get("worker")).toEqual([]);
  });

  it("names a missing judge, a non-judge and an iterative judge", () => {
    const all = new Map([
      ["a", agent("a", { execution: { mode: "one-shot" } })],
      ["b", judge("b", { execution: { mode: "iterative" } })],
      ["c", judge("c", {})],
    ]);
    const problems = crossValidateAgent(worker, (n) => all.get(n));
    expect(problems.map((p) => [p.path, p.reason])).toEqual([
      ["spec.execution.validation[1].judge_agent", "NotAJudge"],
      ["spec.execution.validation[2].judges[0]", "NotAJudge"],
      ["spec.execution.validation[2].judges[1]", "JudgeNotOneShot"],
      // no execution block: the default mode (iterative) applies
      ["spec.execution.tool_validation[0].judge_agent", "JudgeNotOneShot"],
    ]);
    expect(crossValidateAgent(worker, () => undefined).every((p) => p.reason === "JudgeNotFound")).toBe(true);
  });

  it("refuses judge inputs gavel cannot map, and only for judges", () => {
    const schema = {
      type: "object",
      properties: { output: { type: "string" }, policy_violations: { type: "array" }, mood: { type: "string" } },
    };
    expect(crossValidateAgent(judge("j", { input_schema: schema, execution: { mode: "one-shot" } }), () => undefined)).toEqual([
      expect.objectContaining({ path: "spec.input_schema.properties.mood", reason: "UnmappableJudgeInput" }),
    ]);
    expect(crossValidateAgent(agent("w", { input_schema: schema }), () => undefined)).toEqual([]);
  });

  it("turns problems into a Ready condition", () => {
    const now = new Date("2026-11-23T10:00:00Z");
    expect(readyCondition([], 3, now)).toMatchObject({ type: "Ready", status: "True", observedGeneration: 3 });
    const c = readyCondition(
      crossValidateAgent(worker, () => undefined),
      4,
      now,
    );
    expect(c).toMatchObject({ type: "Ready", status: "False", reason: "JudgeNotFound", lastTransitionTime: "2026-11-23T10:00:00.000Z" });
    expect(c.message).toContain('spec.execution.validation[1].judge_agent: judge Agent "a" does not exist');
  });

  it("survives malformed specs (the schema reports those)", () => {
    const odd = agent("odd", { execution: { validation: "x", tool_validation: { type: "semantic" } } as never });
    expect(crossValidateAgent(odd, () => undefined)).toEqual([]);
  });

  it("checks an Execution's input against its Agent's input_schema", () => {
    const summarizer = agent("summarizer", {
      input_schema: {
        type: "object",
        required: ["topic"],
        properties: { topic: { type: "string" }, pages: { type: "array", items: { type: "integer" } } },
      },
    });
    const run = (input: Execution["spec"]["input"], name = "summarizer"): Execution => ({
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name: "r" },
      spec: { agentRef: { name }, ...(input === undefined ? {} : { input }) },
    });
    const lookup = (n: string) => (n === "summarizer" ? summarizer : undefined);
    expect(crossValidateExecution(run({ topic: "gavel", pages: [1, 2] }), lookup)).toEqual([]);
    expect(crossValidateExecution(run(undefined), lookup).map((p) => p.path)).toEqual(["spec.input.topic"]);
    expect(crossValidateExecution(run({ topic: "x", pages: [1, "two"] }), lookup).map((p) => [p.path, p.reason])).toEqual([
      ["spec.input.pages[1]", "InputInvalid"],
    ]);
    expect(crossValidateExecution(run({}, "nobody"), lookup)).toEqual([
      expect.objectContaining({ reason: "AgentNotFound", path: "spec.agentRef.name" }),
    ]);
    expect(crossValidateExecution(run("anything"), (n) => (n === "summarizer" ? agent("summarizer", {}) : undefined))).toEqual([]);
  });
});
