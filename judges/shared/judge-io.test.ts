// The judge side of the input contract: stdin first, env GAVEL_INPUT otherwise, clear errors.
import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readJudgeInput, runJudge, unit } from "./judge-io.js";

const stdinOf = (text: string) => Readable.from([text]);

describe("readJudgeInput", () => {
  it("prefers stdin, falls back to GAVEL_INPUT", async () => {
    expect(await readJudgeInput(stdinOf('{"a":1}'), { GAVEL_INPUT: '{"b":2}' })).toEqual({ a: 1 });
    expect(await readJudgeInput(stdinOf(""), { GAVEL_INPUT: '{"b":2}' })).toEqual({ b: 2 });
  });

  it("names the source of bad input", async () => {
    await expect(readJudgeInput(stdinOf("{oops"), {})).rejects.toThrow(/stdin is not JSON/);
    await expect(readJudgeInput(stdinOf(""), { GAVEL_INPUT: "[1]" })).rejects.toThrow(/GAVEL_INPUT must be a JSON object/);
    await expect(readJudgeInput(stdinOf(" \n"), {})).rejects.toThrow(/no judge input/);
  });
});

describe("runJudge", () => {
  it("prints the verdict as the last line and exits 0; bad input exits 2", async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    const code = await runJudge(() => Promise.resolve({ score: 1, confidence: 1, reasoning: "ok" }), {
      stdin: stdinOf("{}"),
      stdout: out,
      stderr: err,
      env: {},
    });
    expect(code).toBe(0);
    expect(JSON.parse(text)).toEqual({ score: 1, confidence: 1, reasoning: "ok" });
    const bad = await runJudge(() => Promise.resolve({ score: 1, confidence: 1, reasoning: "ok" }), {
      stdin: stdinOf("nope"),
      stdout: out,
      stderr: err,
      env: {},
    });
    expect(bad).toBe(2);
  });

  it("clamps and rounds scores", () => {
    expect(unit(1.2)).toBe(1);
    expect(unit(-1)).toBe(0);
    expect(unit(Number.NaN)).toBe(0);
    expect(unit(0.1 + 0.2)).toBe(0.3);
  });
});
