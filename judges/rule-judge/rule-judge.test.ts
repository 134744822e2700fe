// The rule judge on the vaglio's own cases and on validation payloads with rules over the
// output and mounted files.
import { mkdtemp, mkdir, rm, writeFile, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseGradientResult } from "../../src/engine/gradient.js";
import { DEFAULT_CONFIG, configFromEnv, ruleJudge } from "./rule-judge.js";
import { guardViolation } from "./guard.js";
import { isReadOnlyTool } from "./tool-call-score.js";
import { parseRules } from "./output-rules.js";

const noFiles = () => Promise.resolve(undefined);
const call = (tool: string, args: Record<string, unknown>, task = "") => ({ task, proposed_tool_call: { tool, args } });

describe("guard (phase one)", () => {
  it.each([
    ["fs_read", { path: "~/.ssh/id_rsa" }],
    ["fs_read", { path: "/etc/passwd" }],
    ["fs_read", { path: "~/.config/metnos/credentials.env" }],
    ["search", { exclude: ["x", { deep: "/root/.bashrc" }] }],
    ["shell_exec", { command: "rm -rf /" }],
    ["shell_exec", { command: ":(){ :|:& };:" }],
    ["cmd.run", { cmd: ["dd", "if=/dev/zero", "of=/dev/sda"] }],
    ["shell_exec", { command: "cat ~/.ssh/id_rsa" }],
  ])("blocks %s %j", async (tool, args) => {
    const v = await ruleJudge(call(tool, args), DEFAULT_CONFIG, noFiles);
    expect(v.score).toBe(0);
    expect(v.confidence).toBe(1);
    expect(v.reasoning).toMatch(/^guard: /);
    expect(v.metadata?.blocked_by).toBe("guard");
  });

  it("lets a harmless shell command through", () => {
    expect(guardViolation("shell_exec", { command: "ls -la /tmp" })).toBeUndefined();
    // Only shell tools have their command checked against the shell patterns.
    expect(guardViolation("fs_write", { command: "rm -rf /" })).toBeUndefined();
  });
});

describe("graded judge (phase two)", () => {
  it("scores the reference example: intent match → 0.80", async () => {
    const v = await ruleJudge(
      call("fs_read", { path: "/tmp/n.txt" }, "read my notes in /tmp/n.txt"),
      { ...DEFAULT_CONFIG, readOnlyTools: [] },
      noFiles,
    );
    expect(v.score).toBe(0.8);
    expect(v.reasoning).toContain("intent matches tool");
    expect(v.signals?.find((s) => s.category === "intent_match")?.score).toBe(1);
  });

  it("adds the read-only bonus for a read-only tool", async () => {
    const v = await ruleJudge(call("fs_read", { path: "/tmp/n.txt" }, "read my notes"), DEFAULT_CONFIG, noFiles);
    expect(v.score).toBe(0.85);
    expect(isReadOnlyTool("fs_read")).toBe(true);
    expect(isReadOnlyTool("fs_write")).toBe(false);
    expect(isReadOnlyTool("readAndDelete")).toBe(false);
  });

  it("path traversal lowers the score; odd keys too; both are noted", async () => {
    const plain = await ruleJudge(call("fs_write", { path: "/tmp/foo" }), DEFAULT_CONFIG, noFiles);
    const traversal = await ruleJudge(call("fs_write", { path: "/tmp/../etc/foo" }), DEFAULT_CONFIG, noFiles);
    const odd = await ruleJudge(call("fs_write", { "pa th;": "/tmp/foo" }), DEFAULT_CONFIG, noFiles);
    expect(plain.score).toBe(0.7);
    expect(traversal.score).toBe(0.5);
    expect(traversal.reasoning).toContain("path traversal");
    expect(odd.score).toBe(0.6);
    expect(odd.signals?.some((s) => s.category === "odd_keys")).toBe(true);
  });

  it("a threshold above the score denies (env or criteria)", async () => {
    const strict = configFromEnv({ RULE_JUDGE_THRESHOLD: "0.99" });
    const v = await ruleJudge(call("fs_read", { path: "/tmp/x" }), strict, noFiles);
    expect(v.score).toBe(0);
    expect(v.reasoning).toMatch(/^judge: score 0\.75 < threshold 0\.99/);
    expect(v.metadata?.raw_score).toBe(0.75);
    const viaCriteria = await ruleJudge(
      { ...call("fs_read", { path: "/tmp/x" }), criteria: "Be strict.\nthreshold: 0.9" },
      DEFAULT_CONFIG,
      noFiles,
    );
    expect(viaCriteria.score).toBe(0);
    expect(() => configFromEnv({ RULE_JUDGE_THRESHOLD: "lots" })).toThrow(/RULE_JUDGE_THRESHOLD/);
  });

  it("accepts the {name, arguments} form of a call", async () => {
    const v = await ruleJudge({ proposed_tool_call: { name: "fs_read", arguments: { path: "/etc/shadow" } } }, DEFAULT_CONFIG, noFiles);
    expect(v.reasoning).toMatch(/^guard/);
  });
});

describe("validation payloads (outer loop)", () => {
  let ws: string;
  const read = async (p: string) => readFile(p, "utf8").catch(() => undefined);
  beforeAll(async () => {
    ws = await mkdtemp(join(tmpdir(), "rule-judge-"));
    await mkdir(join(ws, "out"));
    await writeFile(join(ws, "out", "result.json"), '{"status": "ok", "count": 3}');
    await writeFile(join(ws, "broken.json"), "{nope");
  });
  afterAll(async () => rm(ws, { recursive: true, force: true }));

  it("passes when every rule holds, over the output and the mounted files", async () => {
    const criteria = [
      "The worker must report success and write its result.",
      "- contains: ALL GOOD",
      "- not_contains: TODO",
      "- matches: \\d+ tests? passed",
      "- file_exists: out/result.json",
      `- file_contains: ${ws}/out/result.json :: "status": "ok"`,
      "- file_json: out/result.json",
      "- file_absent: secrets.txt",
      "- max_output_bytes: 1000",
    ].join("\n");
    const v = await ruleJudge({ output: "3 tests passed. ALL GOOD", criteria, worker_mounts: [ws] }, DEFAULT_CONFIG, read);
    expect(v.score).toBe(1);
    expect(v.confidence).toBe(1);
    expect(v.signals?.filter((s) => s.category.startsWith("rule:")).length).toBe(8);
    expect(v.reasoning).toContain("8/8 rules pass");
  });

  it("scores the pass ratio and names each failure", async () => {
    const criteria = "contains: ALL GOOD\nfile_exists: out/missing.txt\nfile_json: broken.json\nfile_exists: /etc/hostname";
    const v = await ruleJudge({ output: "ALL GOOD", criteria, worker_mounts: [ws] }, DEFAULT_CONFIG, read);
    expect(v.score).toBe(0);
    expect(v.metadata?.raw_score).toBe(0.25);
    expect(v.reasoning).toContain("out/missing.txt is missing");
    expect(v.reasoning).toContain("broken.json is not valid JSON");
    expect(v.reasoning).toContain("/etc/hostname is outside the worker mounts");
    const half = await ruleJudge(
      { output: "ALL GOOD", criteria: "contains: ALL GOOD\ncontains: nope", worker_mounts: [ws] },
      DEFAULT_CONFIG,
      read,
    );
    expect(half.score).toBe(0.5);
  });

  it("refuses a relative path that climbs out of the mount", async () => {
    const v = await ruleJudge({ output: "", criteria: "file_exists: ../../etc/passwd", worker_mounts: [ws] }, DEFAULT_CONFIG, read);
    expect(v.signals?.[0]?.message).toMatch(/leaves the worker mount/);
  });

  it("takes rules from env too, and counts a malformed rule as a failure", async () => {
    const config = configFromEnv({ RULE_JUDGE_RULES: "contains: hello\nmatches: (unclosed" });
    const v = await ruleJudge({ content: "hello", intent: "" }, config, noFiles);
    expect(v.metadata?.raw_score).toBe(0.5);
    expect(v.reasoning).toMatch(/not valid RE2/);
  });

  it("without rules checks only that there is output", async () => {
    expect((await ruleJudge({ content: "something", intent: "be nice" }, DEFAULT_CONFIG, noFiles)).score).toBe(1);
    expect((await ruleJudge({ content: "  ", intent: "be nice" }, DEFAULT_CONFIG, noFiles)).score).toBe(0);
  });

  it("parses rules, ignoring prose", () => {
    const set = parseRules("Please check this.\nNote: this is prose\ncontains: x\nthreshold: 2\nfile_contains: no-separator");
    expect(set.rules).toEqual([{ kind: "contains", text: "x" }]);
    expect(set.errors.length).toBe(2);
  });
});

describe("every verdict is accepted by the engine's parser", () => {
  it.each([
    call("fs_read", { path: "/tmp/x" }, "read it"),
    call("shell_exec", { command: "rm -rf /" }),
    { content: "x", intent: "contains: y" },
  ])("%j", async (payload) => {
    const v = await ruleJudge(payload, DEFAULT_CONFIG, noFiles);
    const parsed = parseGradientResult(`log line\n${JSON.stringify(v)}\n`);
    expect(parsed.ok).toBe(true);
  });
});

describe("rule judge properties", () => {
  it("any tool call gets a verdict in [0, 1] that the engine accepts", async () => {
    const fc = await import("fast-check");
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), async (tool, args, task) => {
        const v = await ruleJudge(call(tool, args, task), DEFAULT_CONFIG, noFiles);
        expect(v.score).toBeGreaterThanOrEqual(0);
        expect(v.score).toBeLessThanOrEqual(1);
        expect(parseGradientResult(JSON.stringify(v)).ok).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
