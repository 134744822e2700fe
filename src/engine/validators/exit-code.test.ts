// Tests of the exit_code validator: pass on the expected code, fail otherwise with stderr's tail.
import { describe, expect, it } from "vitest";
import { validateExitCode } from "./exit-code.js";

describe("exit_code validator", () => {
  it("passes with score 1 when the exit code is the default expected 0", () => {
    const r = validateExitCode({ type: "exit_code" }, 0);
    expect(r).toMatchObject({ passed: true, score: 1, confidence: 1 });
  });

  it("fails with score 0 on a non-zero exit and quotes the tail of stderr", () => {
    const r = validateExitCode({ type: "exit_code" }, 2, "line one\nTypeError: boom\n");
    expect(r.passed).toBe(false);
    expect(r.score).toBe(0);
    expect(r.reasoning).toContain("exit code 2, expected 0");
    expect(r.reasoning).toContain("TypeError: boom");
    expect(r.signals[0]).toMatchObject({ category: "exit_code", score: 0 });
  });

  it("honours a non-zero expected code both ways", () => {
    expect(validateExitCode({ type: "exit_code", expected: 3 }, 3).passed).toBe(true);
    const r = validateExitCode({ type: "exit_code", expected: 3 }, 0);
    expect(r.passed).toBe(false);
    expect(r.reasoning).toContain("expected 3");
  });

  it("keeps only the last 20 lines of a long stderr", () => {
    const stderr = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    const r = validateExitCode({ type: "exit_code" }, 1, stderr);
    expect(r.reasoning).toContain("line 99");
    expect(r.reasoning).toContain("line 80");
    expect(r.reasoning).not.toContain("line 79\n");
  });

  it("says nothing about stderr when it is empty", () => {
    expect(validateExitCode({ type: "exit_code" }, 1, "").reasoning).toBe("exit code 1, expected 0");
  });
});
