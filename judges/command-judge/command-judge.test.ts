// The command judge on real processes: node --test over temporary workspaces, the
// allowlist (no shell, word-for-word prefixes), deadlines and test-count parsing.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseGradientResult } from "../../src/engine/gradient.js";
import { type CommandRun, commandJudge, configFromEnv, detectCommands, runCommand } from "./command-judge.js";
import { isAllowed, parsePlan, splitArgv, testCounts } from "./commands.js";

const config = configFromEnv({});
const allowlist = config.allowlist as readonly string[];

describe("allowlist and argv", () => {
  it("splits with quotes and matches whole words", () => {
    expect(splitArgv(`pytest -k "a b" 'c'`)).toEqual(["pytest", "-k", "a b", "c"]);
    expect(() => splitArgv(`pytest "open`)).toThrow(/unclosed/);
    expect(isAllowed(["npm", "test"], allowlist)).toBe(true);
    expect(isAllowed(["npm", "test", "--", "-x"], allowlist)).toBe(true);
    expect(isAllowed(["npm", "install"], allowlist)).toBe(false);
    expect(isAllowed(["npm", "test;", "curl", "x"], allowlist)).toBe(false);
    expect(isAllowed(["pytestx"], allowlist)).toBe(false);
    expect(() => configFromEnv({ COMMAND_JUDGE_TIMEOUT_SECONDS: "-1" })).toThrow(/COMMAND_JUDGE_TIMEOUT_SECONDS/);
  });

  it("takes its allowlist from its manifest's spec.tools (GAVEL_TOOLS), not from an env setting", () => {
    const tools = (t: unknown) => configFromEnv({ GAVEL_TOOLS: JSON.stringify(t) }).allowlist;
    expect(tools([{ name: "cmd.run", allowlist: ["make check", "./run-tests"] }])).toEqual(["make check", "./run-tests"]);
    expect(tools(["fs.read"])).toEqual([]);
    expect(tools(["cmd.run"])).toBe("any");
    expect(tools([{ name: "cmd.run" }])).toBe("any");
    expect(configFromEnv({ COMMAND_JUDGE_ALLOWLIST: "curl" }).allowlist).toEqual(allowlist);
    expect(() => configFromEnv({ GAVEL_TOOLS: "{" })).toThrow(/GAVEL_TOOLS is not JSON/);
  });

  it("refuses every command when its manifest declares no cmd.run", async () => {
    const verdict = await commandJudge(
      { criteria: "run: node --version\nworkdir: /tmp", worker_mounts: [] },
      { ...config, allowlist: [] },
      {},
    );
    expect(verdict.score).toBe(0);
    expect(verdict.reasoning).toMatch(/declares no cmd.run/);
  });

  it("reads run/workdir lines from the criteria", () => {
    expect(parsePlan("Run the tests.\n- run: npm test\nrun: pytest -q\nworkdir: app")).toEqual({
      commands: ["npm test", "pytest -q"],
      workdir: "app",
    });
  });

  it("finds test counts of common runners", () => {
    expect(testCounts("# tests 4\n# pass 3\n# fail 1\n")).toEqual({ passed: 3, failed: 1 });
    expect(testCounts("ℹ tests 2\nℹ pass 2\nℹ fail 0\n")).toEqual({ passed: 2, failed: 0 });
    expect(testCounts("===== 5 passed, 2 failed, 1 error in 0.3s =====")).toEqual({ passed: 5, failed: 3 });
    expect(testCounts("Tests:       1 failed, 3 passed, 4 total")).toEqual({ passed: 3, failed: 1 });
    expect(testCounts("all good")).toBeUndefined();
  });
});

describe("commandJudge on real node --test runs", () => {
  let good: string;
  let mixed: string;
  let empty: string;
  beforeAll(async () => {
    good = await mkdtemp(join(tmpdir(), "cj-good-"));
    await writeFile(
      join(good, "sum.test.mjs"),
      "import test from 'node:test'; import assert from 'node:assert'; test('adds', () => assert.equal(1 + 1, 2)); test('again', () => assert.ok(true));\n",
    );
    mixed = await mkdtemp(join(tmpdir(), "cj-mixed-"));
    await writeFile(
      join(mixed, "a.test.mjs"),
      "import test from 'node:test'; import assert from 'node:assert'; test('ok', () => {}); test('broken', () => assert.equal(2 + 2, 5, 'arithmetic is off'));\n",
    );
    empty = await mkdtemp(join(tmpdir(), "cj-empty-"));
  });
  afterAll(async () => {
    for (const d of [good, mixed, empty]) await rm(d, { recursive: true, force: true });
  });

  it("scores 1 when every test passes", async () => {
    const v = await commandJudge({ criteria: "run: node --test", worker_mounts: [good] }, config, process.env);
    expect(v.score).toBe(1);
    expect(v.reasoning).toMatch(/^1\/1 commands pass/);
    expect(parseGradientResult(JSON.stringify(v)).ok).toBe(true);
  });

  it("scores the test pass ratio and puts the failing output in the reasoning", async () => {
    const v = await commandJudge({ criteria: "run: node --test", worker_mounts: [mixed] }, config, process.env);
    expect(v.score).toBe(0.5);
    expect(v.reasoning).toContain("arithmetic is off");
    expect(v.signals?.[0]?.message).toBe("node --test: exit 1, 1/2 tests pass");
    expect(v.reasoning).toMatch(/^0\/1 commands pass in \S+: node --test: exit 1, 1\/2 tests pass/);
  });

  it("averages over commands; refuses commands off the allowlist without running them", async () => {
    const ran: string[] = [];
    const spy: typeof runCommand = async (argv, cwd, t, env) => {
      ran.push(argv.join(" "));
      return runCommand(argv, cwd, t, env);
    };
    const v = await commandJudge(
      { criteria: "run: node --test\nrun: rm -rf /tmp/x\nrun: npm install evil", worker_mounts: [good] },
      config,
      process.env,
      spy,
    );
    expect(ran).toEqual(["node --test"]);
    expect(v.score).toBeCloseTo(1 / 3, 3);
    expect(v.reasoning).toContain("$ rm -rf /tmp/x\nnot in the allowlist");
  });

  it("detects node --test when the criteria name no command", async () => {
    expect(await detectCommands(good)).toEqual(["node --test"]);
    const v = await commandJudge({ content: "output", intent: "just check it", worker_mounts: [good] }, config, process.env);
    expect(v.score).toBe(1);
    expect(v.reasoning).toContain("detected");
  });

  it("kills a command past its deadline", async () => {
    const slow = await mkdtemp(join(tmpdir(), "cj-slow-"));
    await writeFile(
      join(slow, "hang.test.mjs"),
      "import test from 'node:test'; test('hangs', () => new Promise(() => setInterval(() => {}, 1000)));\n",
    );
    const t0 = Date.now();
    const v = await commandJudge({ criteria: "run: node --test", worker_mounts: [slow] }, { ...config, timeoutSeconds: 1 }, process.env);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(v.score).toBe(0);
    expect(v.reasoning).toContain("killed after 1s");
    await rm(slow, { recursive: true, force: true });
  });

  it("a missing program, no workspace and nothing to run all score 0 with a reason", async () => {
    const missing = await commandJudge(
      { criteria: "run: pytest", worker_mounts: [good] },
      { ...config, allowlist: ["pytest"] },
      { PATH: "/nonexistent" },
    );
    expect(missing.score).toBe(0);
    expect(missing.reasoning).toContain("pytest is not installed");
    expect((await commandJudge({ criteria: "run: node --test" }, config, process.env)).reasoning).toMatch(/no workspace/);
    expect((await commandJudge({ criteria: "", worker_mounts: [empty] }, config, process.env)).reasoning).toMatch(/nothing to run/);
    expect(
      (await commandJudge({ criteria: "run: node --test", worker_mounts: ["/does/not/exist"] }, config, process.env)).reasoning,
    ).toMatch(/not a directory/);
  });

  it("a non-zero exit with no failed test still scores 0", async () => {
    const run: CommandRun = { command: "x", exitCode: 2, output: "# pass 3\n# fail 0\n", timedOut: false };
    const { runScore } = await import("./command-judge.js");
    expect(runScore(run)).toBe(0);
    expect(runScore({ ...run, exitCode: 0 })).toBe(1);
  });
});
