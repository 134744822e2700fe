// The exit-75 contract between the worker runtime and the engine: what counts as "the gate
// could not be reached", and what does not.
import { describe, expect, it } from "vitest";
import { describeGateUnreachable, GATE_UNREACHABLE_EXIT, gateUnreachableFields, gateUnreachableOf } from "./gate-unreachable.js";

const line = (o: Record<string, unknown>) => JSON.stringify({ time: "2026-12-07T00:00:00Z", component: "gavel-agent", ...o });

describe("gate unreachable contract", () => {
  it("reads the worker's line back from stderr, the last one winning", () => {
    const stderr = [
      line({ event: "start" }),
      line(gateUnreachableFields({ seconds: 3, detail: "first" })),
      line(gateUnreachableFields({ seconds: 27.4, detail: "NATS at nats://n:4222: connection refused" })),
      "",
    ].join("\n");
    expect(gateUnreachableOf(GATE_UNREACHABLE_EXIT, stderr)).toEqual({ seconds: 27, detail: "NATS at nats://n:4222: connection refused" });
  });

  it("finds it in a later output (stdout when the driver merged the streams)", () => {
    expect(gateUnreachableOf(75, "", `answer\n${line(gateUnreachableFields({ seconds: 5, detail: "d" }))}`)).toEqual({
      seconds: 5,
      detail: "d",
    });
  });

  it("needs both the exit code and the line", () => {
    const l = line(gateUnreachableFields({ seconds: 5, detail: "d" }));
    expect(gateUnreachableOf(1, l)).toBeUndefined();
    expect(gateUnreachableOf(75, "temporary failure\n")).toBeUndefined();
    expect(gateUnreachableOf(75, '{"event":"gate_unreachable"}')).toBeUndefined();
    expect(gateUnreachableOf(75, '{"event":"gate_unreachable", "seconds": 4')).toBeUndefined();
  });

  it("says how long and that it is not the agent's failure", () => {
    expect(describeGateUnreachable({ seconds: 12, detail: "no gate was listening" })).toMatch(
      /^the tool-call gate could not be reached for 12 s \(no gate was listening\).*not a failure of the agent's code/,
    );
  });
});
