// `gavel verdict` through the CLI entry: verdicts, each rejection, usage errors.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verdictCommand } from "./verdict.js";
import { gavel } from "../../test/harness/cli.js";

const verdict = (argv: string[], stdin = "") => gavel(argv, { stdin });

const good = '{"score": 0.9, "confidence": 0.8, "reasoning": "fine", "signals": [{"category": "c", "score": 1, "message": "m"}]}';

describe("gavel verdict", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "gavel-verdict-"));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("is registered", () => {
    expect(verdictCommand.name).toBe("verdict");
  });

  it("prints the GradientResult of a judge's output from stdin, the last JSON object winning", async () => {
    const r = await verdict(
      ["verdict", "-"],
      `thinking...\n{"score": 0.1, "confidence": 1, "reasoning": "draft"}\nfinal:\n\`\`\`json\n${good}\n\`\`\`\n`,
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual(JSON.parse(good));
  });

  it("reads a file", async () => {
    const f = join(dir, "out.txt");
    await writeFile(f, good);
    const r = await verdict(["verdict", f]);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { score: number }).score).toBe(0.9);
  });

  it("rejects malformed output with the reason and exit 1", async () => {
    for (const text of [
      "no json here",
      '{"score": 1.5, "confidence": 1, "reasoning": "x"}',
      '{"score": "0.9", "confidence": 1, "reasoning": "x"}',
    ]) {
      const r = await verdict(["verdict"], text);
      expect(r.code).toBe(1);
      expect(r.out).toMatch(/^rejected: malformed_output: /);
    }
  });

  it("a non-zero --exit-code is a failed judge unless its manifest says must_succeed: false", async () => {
    const failed = await verdict(["verdict", "--exit-code", "3", "-"], good);
    expect(failed.code).toBe(1);
    expect(failed.out).toContain("rejected: failed: the judge exited with code 3");
    const manifest = join(dir, "judge.yaml");
    await writeFile(
      manifest,
      "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: j}\nspec:\n  execution:\n    validation:\n      system: {must_succeed: false}\n",
    );
    const lenient = await verdict(["verdict", "--exit-code", "3", "--agent", manifest, "-"], good);
    expect(lenient.code).toBe(0);
  });

  it("applies the judge manifest's output schema", async () => {
    const manifest = join(dir, "strict.yaml");
    await writeFile(
      manifest,
      "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: j}\nspec:\n  execution:\n    validation:\n      output:\n        format: json\n        schema: {type: object, required: [metadata]}\n",
    );
    const r = await verdict(["verdict", "--agent", manifest, "-"], good);
    expect(r.code).toBe(1);
    expect(r.out).toContain("does not match the judge's output schema");
  });

  it("--output json prints the whole outcome", async () => {
    const r = await verdict(["verdict", "-o", "json"], "garbage");
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, rejection: "malformed_output" });
  });

  it("usage errors exit 2", async () => {
    expect((await verdict(["verdict", "a", "b"])).code).toBe(2);
    expect((await verdict(["verdict", "--bogus"])).code).toBe(2);
    expect((await verdict(["verdict", "--exit-code", "x"])).code).toBe(2);
    const missing = await verdict(["verdict", join(dir, "nope.txt")]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("nope.txt");
    const notAgent = join(dir, "other.yaml");
    await writeFile(notAgent, "kind: Execution\n");
    expect((await verdict(["verdict", "--agent", notAgent, "-"], good)).code).toBe(2);
  });
});
