// Tests of the regex validator: RE2 search semantics, file targets, rejected patterns, linear time.
import { describe, expect, it } from "vitest";
import type { FileContent } from "./outcome.js";
import { compilePattern, validateRegexPattern } from "../re2.js";
import { regexTargetPath, trimTrailingNewline, validateRegex } from "./regex.js";

const text = (content: string): FileContent => ({ ok: true, content });

describe("regex validator", () => {
  it("passes when stdout matches the reference's status pattern (one trailing newline dropped)", () => {
    const spec = { type: "regex" as const, pattern: '^\\{.*"status":\\s*"success".*\\}$' };
    expect(validateRegex(spec, text('{"status": "success", "n": 1}\n'))).toMatchObject({ passed: true, score: 1 });
  });

  it("fails when stdout does not match, naming the pattern", () => {
    const spec = { type: "regex" as const, pattern: '"status":\\s*"success"' };
    const r = validateRegex(spec, text('{"status": "error"}'));
    expect(r.passed).toBe(false);
    expect(r.score).toBe(0);
    expect(r.reasoning).toContain("stdout does not match");
  });

  it("a failing match on stdout that holds stderr too says why (the driver's note); a file target or a pass does not", () => {
    const note = "stderr is merged into stdout: gavel does not know the program of image x";
    const spec = { type: "regex" as const, pattern: "^RESULT=ok$" };
    const r = validateRegex(spec, text("warning: slow disk\nRESULT=ok\n"), note);
    expect(r.passed).toBe(false);
    expect(r.reasoning).toBe(`stdout does not match /^RESULT=ok$/ (${note})`);
    expect(r.signals?.[0]?.message).toBe(r.reasoning);
    expect(validateRegex(spec, text("RESULT=ok\n"), note).reasoning).toBe("stdout matches /^RESULT=ok$/");
    expect(validateRegex({ ...spec, target: "/w/out" }, text("no"), note).reasoning).toBe("/w/out does not match /^RESULT=ok$/");
  });

  it("searches rather than matching the whole text; ^ and $ anchor the whole text unless (?m)", () => {
    expect(validateRegex({ type: "regex", pattern: "ok" }, text("all ok here")).passed).toBe(true);
    expect(validateRegex({ type: "regex", pattern: "^ok$" }, text("line\nok\n")).passed).toBe(false);
    expect(validateRegex({ type: "regex", pattern: "(?m)^ok$" }, text("line\nok\n")).passed).toBe(true);
  });

  it("targets a file and reports a missing one", () => {
    const spec = { type: "regex" as const, pattern: "done", target: "/workspace/log.txt" };
    expect(regexTargetPath(spec)).toBe("/workspace/log.txt");
    expect(regexTargetPath({ type: "regex", pattern: "x" })).toBeUndefined();
    expect(validateRegex(spec, text("all done")).passed).toBe(true);
    const r = validateRegex(spec, { ok: false, reason: "missing", detail: "" });
    expect(r.passed).toBe(false);
    expect(r.reasoning).toBe("/workspace/log.txt does not exist");
  });

  it("rejects patterns RE2 cannot run in linear time with a clear error", () => {
    expect(validateRegexPattern("(a)\\1")).toMatch(/not supported by RE2/);
    expect(validateRegexPattern("(?=x)")).toMatch(/RE2/);
    expect(validateRegexPattern("[a-z]+")).toBeUndefined();
    const r = validateRegex({ type: "regex", pattern: "(a)\\1" }, text("aa"));
    expect(r.passed).toBe(false);
    expect(r.reasoning).toMatch(/not supported by RE2/);
    expect(compilePattern("(").ok).toBe(false);
  });

  it("matches a catastrophic-backtracking pattern in linear time", () => {
    const subject = "a".repeat(100_000) + "!";
    const start = performance.now();
    const r = validateRegex({ type: "regex", pattern: "^(a+)+$" }, text(subject));
    expect(r.passed).toBe(false);
    expect(performance.now() - start).toBeLessThan(2000);
  });

  it("drops exactly one trailing newline", () => {
    expect(trimTrailingNewline("a\n\n")).toBe("a\n");
    expect(trimTrailingNewline("a\r\n")).toBe("a");
    expect(trimTrailingNewline("a")).toBe("a");
  });
});
