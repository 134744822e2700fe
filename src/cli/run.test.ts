// Tests of `gavel run`'s manifest loading and argument errors (no Docker needed): bad
// manifests are refused naming the file and field, before any container starts.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gavel } from "../../test/harness/cli.js";
import { loadRunManifests, ManifestError, parseInput, plainLine } from "./run.js";

const WORKER = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: writer }
spec:
  runtime: { image: "gavel/base:bookworm-node20" }
  execution:
    mode: iterative
    max_iterations: 2
    validation:
      - type: exit_code
      - type: semantic
        judge_agent: checker
`;
const JUDGE = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: checker, labels: { role: judge } }
spec:
  runtime: { image: "gavel/rule-judge:dev" }
  execution: { mode: one-shot }
`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gavel-run-test-"));
  await writeFile(join(dir, "worker.yaml"), WORKER);
  await writeFile(join(dir, "judge.yaml"), JUDGE);
  await writeFile(join(dir, "bad.yaml"), WORKER.replace("max_iterations: 2", "max_iterations: -4"));
  await writeFile(join(dir, "input.json"), '{"n": 2}');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cli = (args: string[]) => gavel(args, { cwd: dir });

describe("gavel run: manifests and arguments", () => {
  it("loads one worker and its judges, defaults applied", async () => {
    const m = await loadRunManifests(["worker.yaml", "judge.yaml"], dir);
    expect(m.worker.metadata.name).toBe("writer");
    expect([...m.judges.keys()]).toEqual(["checker"]);
  });

  it("refuses a judge that is not among the files, naming the field", async () => {
    const err = await loadRunManifests(["worker.yaml"], dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ManifestError);
    expect((err as ManifestError).message).toContain("worker.yaml:doc#1: spec.execution.validation[1].judge_agent");
    expect((err as ManifestError).message).toContain("pass its manifest with -f");
  });

  it("refuses an invalid field with file and path, exit 2, before starting anything", async () => {
    const r = await cli(["run", "-f", "bad.yaml", "-f", "judge.yaml"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("bad.yaml:doc#1: spec.execution.max_iterations");
  });

  it("refuses two workers and no worker", async () => {
    await expect(loadRunManifests(["worker.yaml", "worker.yaml", "judge.yaml"], dir)).rejects.toThrow(/exactly one worker Agent/);
    await expect(loadRunManifests(["judge.yaml"], dir)).rejects.toThrow(/no worker Agent/);
  });

  it("usage errors: no -f, bad --output, bad --input", async () => {
    expect((await cli(["run"])).code).toBe(2);
    expect((await cli(["run", "-f", "worker.yaml", "--output", "xml"])).err).toContain("--output must be json or tree");
    expect((await cli(["run", "-f", "worker.yaml", "--input", "{nope"])).err).toContain("--input JSON is not valid JSON");
    expect((await cli(["run", "-f", "missing.yaml"])).err).toContain("missing.yaml: no such file or directory");
    expect((await cli(["run", "-f", "worker.yaml", "--timeout", "soon"])).err).toContain("--timeout must be a positive number");
  });

  it("parses --input inline and from @file", async () => {
    expect(await parseInput('{"a":1}', dir)).toEqual({ a: 1 });
    expect(await parseInput("@input.json", dir)).toEqual({ n: 2 });
    await expect(parseInput("@nope.json", dir)).rejects.toThrow(/--input @nope.json/);
  });

  it("prints one plain line per event", () => {
    const e = {
      id: "1",
      time: "",
      namespace: "d",
      root: "x",
      execution: "x",
      type: "validator.result",
      data: { iteration: 1, index: 0, type: "regex", passed: false, score: 0, confidence: 1, reasoning: "stdout does not match /ok/" },
    };
    expect(plainLine(e)).toBe("iteration 1 validator 0 regex failed score 0.00 confidence 1.00: stdout does not match /ok/");
    const flagged = {
      ...e,
      type: "toolcall.decision",
      data: {
        iteration: 1,
        step: 2,
        tool: "fs.write",
        allowed: true,
        blocked_by: "none",
        flags: ["watch_writes"],
        reason: "approved by the guard",
      },
    };
    expect(plainLine(flagged)).toBe("iteration 1 tool call 2 fs.write allowed [flagged: watch_writes]: approved by the guard");
  });
});
