// The one mapping between a judge's outcome and its child Execution's status, both ways.
import { describe, expect, it } from "vitest";
import type { JudgeOutcome } from "./gradient.js";
import { isTerminal, judgeStatus, outcomeOfStatus, phaseOfOutcome, RAW_STDOUT_BYTES, rawOutputOf, rejectionOfPhase } from "./phases.js";

const NOW = new Date("2026-11-23T10:00:00Z");

describe("judge outcome and phase", () => {
  it("round-trips verdicts and rejections through a child's status", () => {
    const ok: JudgeOutcome = { ok: true, result: { score: 0.7, confidence: 0.8, reasoning: "mostly" } };
    const st = judgeStatus({ phase: "Running", startTime: "2026-11-23T09:59:00.000Z" }, ok, NOW);
    expect(st).toMatchObject({
      phase: "Succeeded",
      score: 0.7,
      verdict: ok.result,
      startTime: "2026-11-23T09:59:00.000Z",
      completionTime: NOW.toISOString(),
    });
    expect(outcomeOfStatus(st)).toEqual(ok);
    for (const rejection of ["timed_out", "cancelled", "failed", "malformed_output"] as const) {
      const out: JudgeOutcome = { ok: false, rejection, detail: `why ${rejection}` };
      const s = judgeStatus(undefined, out, NOW);
      expect(s.phase).toBe(rejection === "timed_out" ? "TimedOut" : rejection === "cancelled" ? "Cancelled" : "Failed");
      expect(s.phase).toBe(phaseOfOutcome(out));
      expect(s.startTime).toBe(NOW.toISOString());
      expect(outcomeOfStatus(s)).toEqual(out);
    }
    expect(outcomeOfStatus({ phase: "Running" })).toBeUndefined();
    expect(outcomeOfStatus(undefined)).toBeUndefined();
  });

  it("reads a rejection from a final phase alone (a ChildRef), and knows which phases are final", () => {
    expect(rejectionOfPhase("TimedOut")).toBe("timed_out");
    expect(rejectionOfPhase("Cancelled")).toBe("cancelled");
    expect(rejectionOfPhase("Failed")).toBe("failed");
    expect(outcomeOfStatus({ phase: "Failed" })).toEqual({ ok: false, rejection: "failed", detail: "the judge child ended Failed" });
    // Succeeded without a verdict is no verdict.
    expect(outcomeOfStatus({ phase: "Succeeded" })).toMatchObject({ ok: false, rejection: "failed" });
    expect(
      ["Pending", "Running", "Refining", "Succeeded", "Failed", "Cancelled", "TimedOut"].filter((p) => isTerminal(p as never)),
    ).toEqual(["Succeeded", "Failed", "Cancelled", "TimedOut"]);
  });
});

describe("raw judge output", () => {
  it("keeps the tails, cut on a character boundary, and says when it cut", () => {
    const raw = rawOutputOf({ stdout: `${"é".repeat(RAW_STDOUT_BYTES)}END`, stderr: "warn", exitCode: 3 });
    expect(raw.stdout.endsWith("END")).toBe(true);
    expect(Buffer.byteLength(raw.stdout)).toBeLessThanOrEqual(RAW_STDOUT_BYTES);
    expect(raw.stdout.startsWith("é")).toBe(true);
    expect(raw).toMatchObject({ stderr: "warn", exitCode: 3, stdoutBytes: 2 * RAW_STDOUT_BYTES + 3, truncated: true });
    const status = judgeStatus(
      undefined,
      { ok: false, rejection: "malformed_output", detail: "no verdict" },
      new Date(0),
      rawOutputOf({ stdout: "garbage", exitCode: 0 }),
    );
    expect(status.rawOutput).toEqual({ stdout: "garbage", stderr: "", exitCode: 0, stdoutBytes: 7, truncated: false });
  });
});
