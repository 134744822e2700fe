// Judge deadlines: the validator's wait and the judge's own timeout, the tighter one wins.
import { describe, expect, it } from "vitest";
import { withDefaults } from "../api/defaults.js";
import type { Agent, SemanticValidatorSpec } from "../api/types.js";
import { childTimeoutSeconds, judgeTimeoutSeconds, parseDurationSeconds } from "./durations.js";

function judge(timeout?: string): Agent {
  return withDefaults({
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "j", labels: { role: "judge" } },
    spec: {
      runtime: { language: "python", version: "3.11" },
      execution: { mode: "one-shot" },
      ...(timeout !== undefined ? { security: { resources: { timeout } } } : {}),
    },
  } as Agent);
}

/** A validator as the controller sees it: defaults applied (timeout_seconds 300 when unset). */
function validator(timeout?: number): SemanticValidatorSpec {
  const agent = withDefaults({
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "w" },
    spec: {
      runtime: { image: "x" },
      execution: { validation: [{ type: "semantic", judge_agent: "j", ...(timeout !== undefined ? { timeout_seconds: timeout } : {}) }] },
    },
  } as Agent);
  return (agent.spec.execution?.validation as SemanticValidatorSpec[])[0] as SemanticValidatorSpec;
}

describe("judgeTimeoutSeconds", () => {
  it("a judge's own timeout bounds it under the defaulted validator wait (the reference judge: 60s)", () => {
    expect(validator().timeout_seconds).toBe(300);
    expect(judgeTimeoutSeconds(validator(), judge("60s"))).toBe(60);
  });
  it("a tighter validator timeout wins over the judge's own", () => {
    expect(judgeTimeoutSeconds(validator(20), judge("60s"))).toBe(20);
  });
  it("a judge cannot lengthen the validator's wait", () => {
    expect(judgeTimeoutSeconds(validator(), judge("10m"))).toBe(300);
    expect(judgeTimeoutSeconds(validator(900), judge("10m"))).toBe(600);
  });
  it("without either, the reference default 300", () => {
    expect(judgeTimeoutSeconds({ type: "semantic", judge_agent: "j" }, judge())).toBe(300);
    expect(judgeTimeoutSeconds({ type: "semantic", judge_agent: "j" }, undefined)).toBe(300);
  });
  it("a child Execution's own timeoutSeconds is its deadline", () => {
    const child = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name: "c" },
      spec: { agentRef: { name: "j" }, timeoutSeconds: 7 },
    } as never;
    expect(childTimeoutSeconds(child, judge("60s"))).toBe(7);
  });
  it("parses Kubernetes-style durations", () => {
    expect(parseDurationSeconds("1h30m")).toBe(5400);
    expect(parseDurationSeconds("90")).toBe(90);
    expect(parseDurationSeconds("soon")).toBeUndefined();
  });
});
