// The one condition rule: replaced in place, observedGeneration set, lastTransitionTime moved
// only on a status change.
import { describe, expect, it } from "vitest";
import { findCondition, sameCondition, setCondition } from "./conditions.js";
import type { Condition } from "./types.js";

const T0 = new Date("2026-01-01T00:00:00Z");
const T1 = new Date("2026-01-01T01:00:00Z");
const other: Condition = { type: "Other", status: "True", reason: "X", message: "", lastTransitionTime: T0.toISOString() };

describe("setCondition", () => {
  it("appends a new condition with now and the generation", () => {
    expect(setCondition(undefined, { type: "Ready", status: "True", reason: "Valid", message: "ok" }, T0, 3)).toEqual([
      { type: "Ready", status: "True", reason: "Valid", message: "ok", lastTransitionTime: T0.toISOString(), observedGeneration: 3 },
    ]);
    expect(setCondition([], { type: "Ready", status: "True", reason: "Valid", message: "ok" }, T0)[0]).not.toHaveProperty(
      "observedGeneration",
    );
  });

  it("keeps the transition time while the status stays, even as reason, message and generation change", () => {
    const first = setCondition([other], { type: "Ready", status: "False", reason: "A", message: "a" }, T0, 1);
    const second = setCondition(first, { type: "Ready", status: "False", reason: "B", message: "b" }, T1, 2);
    expect(second).toEqual([
      other,
      { type: "Ready", status: "False", reason: "B", message: "b", lastTransitionTime: T0.toISOString(), observedGeneration: 2 },
    ]);
    expect(first[1]?.reason).toBe("A"); // the input is not changed
  });

  it("moves the transition time when the status flips, and keeps the condition where it stood", () => {
    const first = setCondition([], { type: "Ready", status: "False", reason: "A", message: "a" }, T0);
    const flipped = setCondition([...first, other], { type: "Ready", status: "True", reason: "Valid", message: "ok" }, T1);
    expect(flipped.map((c) => c.type)).toEqual(["Ready", "Other"]);
    expect(flipped[0]?.lastTransitionTime).toBe(T1.toISOString());
  });

  it("treats a malformed stored list as none", () => {
    expect(setCondition("nope", { type: "Ready", status: "True", reason: "Valid", message: "" }, T0)).toHaveLength(1);
    expect(findCondition([null, 3, other], "Other")).toBe(other);
    expect(findCondition({}, "Other")).toBeUndefined();
  });
});

describe("sameCondition", () => {
  it("compares all but the time", () => {
    const a = setCondition([], { type: "Ready", status: "True", reason: "Valid", message: "ok" }, T0, 1)[0];
    const b = setCondition([], { type: "Ready", status: "True", reason: "Valid", message: "ok" }, T1, 1)[0];
    expect(sameCondition(a, b)).toBe(true);
    expect(sameCondition(a, { ...(b as Condition), observedGeneration: 2 })).toBe(false);
    expect(sameCondition(undefined, b)).toBe(false);
  });
});
