// The pure part of the Agent Ready controller: desired condition, status patch only when
// changed (lastTransitionTime kept), referrers of a judge, keys. No server.
import { describe, expect, it } from "vitest";
import type { Agent, Condition } from "../api/types.js";
import { runtimeTable } from "../children/runtime-table.js";
import {
  CANNOT_ENFORCE,
  currentReady,
  desiredReady,
  INVALID_SPEC,
  POLICY_NOT_ENFORCED,
  readyStatusPatch,
  referrersOf,
  UNKNOWN_RUNTIME,
} from "./agent-readiness.js";

const T0 = new Date("2026-01-01T00:00:00Z");
const T1 = new Date("2026-01-01T01:00:00Z");

function worker(name: string, judge: string, generation = 1): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, namespace: "ns", generation, resourceVersion: "10" },
    spec: { execution: { validation: [{ type: "semantic", judge_agent: judge, criteria: "be good" }] } },
  } as unknown as Agent;
}

function judge(name: string, mode: "one-shot" | "iterative" = "one-shot", labelled = true): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, namespace: "ns", generation: 1, ...(labelled ? { labels: { role: "judge" } } : {}) },
    spec: { execution: { mode } },
  } as unknown as Agent;
}

const lookupIn = (agents: Agent[]) => (n: string) => agents.find((a) => a.metadata.name === n);

describe("desiredReady", () => {
  it("is False/JudgeNotFound naming the field and the judge when the judge does not exist", () => {
    const c = desiredReady(worker("w", "missing-judge", 3), lookupIn([]), T0);
    expect(c).toMatchObject({
      type: "Ready",
      status: "False",
      reason: "JudgeNotFound",
      observedGeneration: 3,
      lastTransitionTime: T0.toISOString(),
    });
    expect(c.message).toContain('spec.execution.validation[0].judge_agent: judge Agent "missing-judge" does not exist');
  });

  it("is True/Valid when the judge exists, is labelled a judge and runs one-shot", () => {
    const c = desiredReady(worker("w", "j"), lookupIn([judge("j")]), T0);
    expect(c).toMatchObject({ status: "True", reason: "Valid", observedGeneration: 1 });
  });

  it("is False/PolicyNotEnforced while a covering GuardPolicy is not in force on every replica, and says which (ADR 0074)", () => {
    const lag = "GuardPolicy ns/team generation 2 is not yet enforced by b (at generation 1)";
    expect(desiredReady(worker("w", "j"), lookupIn([judge("j")]), T0, undefined, undefined, lag)).toMatchObject({
      status: "False",
      reason: POLICY_NOT_ENFORCED,
      message: lag,
    });
    // A gate that cannot serve at all says so first.
    expect(desiredReady(worker("w", "j"), lookupIn([judge("j")]), T0, "no gate", undefined, lag).reason).toBe(CANNOT_ENFORCE);
  });

  it("is False/JudgeNotOneShot when the judge is iterative, and False/NotAJudge when it lacks the label", () => {
    expect(desiredReady(worker("w", "j"), lookupIn([judge("j", "iterative")]), T0)).toMatchObject({
      status: "False",
      reason: "JudgeNotOneShot",
    });
    const c = desiredReady(worker("w", "j"), lookupIn([judge("j", "one-shot", false)]), T0);
    expect(c).toMatchObject({ status: "False", reason: "NotAJudge" });
    expect(c.message).toContain("metadata.labels.role: judge");
  });

  it("is False/InvalidSpec with field paths when the object breaks a schema rule, and does not throw on junk", () => {
    const bad = { ...worker("w", "j"), spec: { execution: { mode: "sometimes" } } } as unknown as Agent;
    const c = desiredReady(bad, lookupIn([]), T0);
    expect(c).toMatchObject({ status: "False", reason: INVALID_SPEC });
    expect(c.message).toContain("spec.execution.mode");
    const junk = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "x" },
      spec: { execution: { validation: "nope" } },
    } as unknown as Agent;
    expect(() => desiredReady(junk, lookupIn([]), T0)).not.toThrow();
    expect(desiredReady(junk, lookupIn([]), T0).status).toBe("False");
  });
});

describe("desiredReady with the controller's runtime table", () => {
  const withRuntime = (runtime: Record<string, unknown>) => ({ ...judge("j"), spec: { ...judge("j").spec, runtime } }) as unknown as Agent;

  it("is False/UnknownRuntime naming the field when the language or its version is not in the table", () => {
    const lang = desiredReady(withRuntime({ language: "cobol" }), lookupIn([]), T0, undefined, runtimeTable());
    expect(lang).toMatchObject({ status: "False", reason: UNKNOWN_RUNTIME });
    expect(lang.message).toMatch(/^spec\.runtime\.language: no runtime for "cobol" in the runtime table \(known: .*python 3\.11/);
    const version = desiredReady(withRuntime({ language: "python", version: "2.7" }), lookupIn([]), T0, undefined, runtimeTable());
    expect(version).toMatchObject({ status: "False", reason: UNKNOWN_RUNTIME });
    expect(version.message).toMatch(/^spec\.runtime\.version: no runtime for python 2\.7/);
  });

  it("is True for the reference's python 3.11, an image, or neither (gavel's agent image)", () => {
    for (const agent of [withRuntime({ language: "python", version: "3.11" }), withRuntime({ image: "example/judge:1" }), judge("j")]) {
      const c = desiredReady(agent, lookupIn([]), T0, undefined, runtimeTable());
      expect(c, c.message).toMatchObject({ status: "True", reason: "Valid" });
    }
  });
});

describe("readyStatusPatch", () => {
  it("writes the condition with observedGeneration and the resourceVersion when there is none yet", () => {
    const w = worker("w", "j", 2);
    const desired = desiredReady(w, lookupIn([judge("j")]), T0);
    expect(readyStatusPatch(w, desired)).toEqual({
      metadata: { resourceVersion: "10" },
      status: { observedGeneration: 2, conditions: [desired] },
    });
  });

  it("writes nothing when the stored condition already says the same, whatever the time", () => {
    const w = worker("w", "j");
    const stored = desiredReady(w, lookupIn([judge("j")]), T0);
    const withStatus = { ...w, status: { observedGeneration: 1, conditions: [stored] } } as Agent;
    expect(readyStatusPatch(withStatus, desiredReady(withStatus, lookupIn([judge("j")]), T1))).toBeUndefined();
  });

  it("keeps lastTransitionTime when only the message or generation changes, and moves it when the status flips", () => {
    const w = worker("w", "j");
    const stored: Condition = desiredReady(w, lookupIn([]), T0); // False, JudgeNotFound
    const withStatus = {
      ...w,
      status: {
        observedGeneration: 1,
        conditions: [{ type: "Other", status: "True", reason: "X", message: "", lastTransitionTime: T0.toISOString() }, stored],
      },
    } as Agent;
    // Still False, another reason: time kept, other condition kept.
    const p1 = readyStatusPatch(withStatus, desiredReady(withStatus, lookupIn([judge("j", "iterative")]), T1)) as {
      status: { conditions: Condition[] };
    };
    expect(p1.status.conditions.map((c) => c.type)).toEqual(["Other", "Ready"]);
    expect(p1.status.conditions[1]).toMatchObject({ status: "False", reason: "JudgeNotOneShot", lastTransitionTime: T0.toISOString() });
    // True now: the time moves.
    const p2 = readyStatusPatch(withStatus, desiredReady(withStatus, lookupIn([judge("j")]), T1)) as {
      status: { conditions: Condition[] };
    };
    expect(p2.status.conditions[1]).toMatchObject({ status: "True", lastTransitionTime: T1.toISOString() });
  });

  it("writes when the generation moved even if the verdict did not", () => {
    const w = worker("w", "j", 1);
    const stored = desiredReady(w, lookupIn([judge("j")]), T0);
    const newer = { ...worker("w", "j", 2), status: { observedGeneration: 1, conditions: [stored] } } as Agent;
    const p = readyStatusPatch(newer, desiredReady(newer, lookupIn([judge("j")]), T1)) as {
      status: { observedGeneration: number; conditions: Condition[] };
    };
    expect(p.status.observedGeneration).toBe(2);
    expect(p.status.conditions[0]).toMatchObject({ observedGeneration: 2, lastTransitionTime: T0.toISOString() });
  });

  it("tolerates a malformed stored status", () => {
    const w = { ...worker("w", "j"), status: { conditions: "nope" } } as unknown as Agent;
    expect(currentReady(w)).toBeUndefined();
    expect(readyStatusPatch(w, desiredReady(w, lookupIn([]), T0))).toBeDefined();
  });
});

describe("referrersOf", () => {
  it("finds the Agents that name a judge in semantic, multi_judge and tool_validation", () => {
    const multi = {
      ...worker("m", "x"),
      spec: { execution: { validation: [{ type: "multi_judge", judges: ["a", "j"], consensus: "majority" }] } },
    } as unknown as Agent;
    const tool = { ...worker("t", "x"), spec: { execution: { tool_validation: [{ judge_agent: "j" }] } } } as unknown as Agent;
    const junk = { metadata: { name: "junk" }, spec: null } as unknown as Agent;
    expect(referrersOf("j", [worker("w", "j"), worker("v", "other"), multi, tool, judge("j"), junk])).toEqual(["w", "m", "t"]);
  });
});
