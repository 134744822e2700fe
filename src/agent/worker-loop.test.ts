// The worker loop with the scripted model on a real temp workspace: every call goes to the
// gate first, allowed built-ins run, denials come back to the model and the loop goes on.
import { copyFile, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import { ToolCodeHasher } from "../gate/tool-code.js";
import { builtinToolFiles, DEFAULT_LIMITS } from "./builtin-tools.js";
import { Confinement } from "./confinement.js";
import { ModelError } from "./model.js";
import { parseScript, ScriptedModel } from "./scripted-model.js";
import { denialText, runWorker, taskMessage, type GateClient } from "./worker-loop.js";

// A deterministic gate: denies anything mentioning ".ssh" and every cmd.run of rm.
class RuleGate implements GateClient {
  readonly seen: ToolCallProposal[] = [];
  propose(p: ToolCallProposal): Promise<ToolCallDecision> {
    this.seen.push(p);
    const text = JSON.stringify(p.args);
    const denied = text.includes(".ssh") || (p.tool === "cmd.run" && /"rm /.test(text));
    return Promise.resolve({
      toolCallId: p.toolCallId,
      allowed: !denied,
      blocked_by: denied ? "guard" : "none",
      reason: denied ? "destructive_pattern: forbidden path or command" : "allowed",
      guard: denied ? { approved: false, check: "destructive_pattern", reason: "forbidden" } : { approved: true },
      skippedJudges: false,
      judges: [],
      latencyMs: 0,
    });
  }
}

describe("ScriptedModel", () => {
  it("puts the Nth tool result into a final answer's {{result N}}", async () => {
    const m = new ScriptedModel(parseScript("- final: 'first={{result 1}} second={{result 2}} none={{result 3}}'"));
    const turn = await m.next(
      [
        { role: "user", content: "go" },
        { role: "tool", toolCallId: "a", name: "fs.read", content: "A" },
        { role: "tool", toolCallId: "b", name: "fs.read", content: "B" },
      ],
      [],
    );
    expect(turn.content).toBe("first=A second=B none=");
  });
});

describe("parseScript", () => {
  it("accepts a list or {turns}", () => {
    expect(parseScript("- final: done")).toEqual([{ final: "done" }]);
    expect(parseScript("turns:\n  - tool_calls:\n      - tool: fs.list\n        args: {path: /w}\n  - final: ok")).toHaveLength(2);
  });
  it.each([
    ["", /non-empty list/],
    ["- {}", /turns\[0\] needs tool_calls or final/],
    ["- final: 1", /turns\[0\].final must be a string/],
    ["- tool_calls: [{args: {}}]", /turns\[0\].tool_calls\[0\].tool/],
    ["- tool_calls: [{tool: x, args: [1]}]", /tool_calls\[0\].args must be a mapping/],
    ["- finale: x", /turns\[0\].finale is not a known field/],
    ["- [oops", /not valid YAML/],
  ])("refuses %j", (text, message) => {
    expect(() => parseScript(text, "s.yaml")).toThrow(message);
  });
  it("fails when the script runs out before a final answer", async () => {
    const m = new ScriptedModel(parseScript("- tool_calls: [{tool: fs.list, args: {path: /}}]"));
    await m.next([], []);
    await expect(m.next([], [])).rejects.toBeInstanceOf(ModelError);
  });
});

describe("runWorker", () => {
  let ws: string;
  beforeAll(async () => {
    ws = await realpath(await mkdtemp(join(tmpdir(), "gavel-loop-")));
    await writeFile(join(ws, "notes.txt"), "three apples");
  });
  afterAll(async () => {
    await rm(ws, { recursive: true, force: true });
  });

  it("gates every call, runs allowed built-ins, hands denials back and finishes", async () => {
    const script = parseScript(`
- say: looking around
  tool_calls:
    - tool: fs.list
      args: { path: "${ws}" }
    - tool: cmd.run
      args: { command: "cat ~/.ssh/id_rsa" }
      intent: "read a key"
- tool_calls:
    - tool: cmd.run
      args: { command: "rm -rf /" }
    - tool: net.fetch
      args: { url: "http://example.com" }
    - tool: fs.read
      args: { path: notes.txt }
- tool_calls:
    - tool: fs.write
      args: { path: out/answer.txt, content: "3" }
    - tool: cmd.run
      args: { command: "touch forbidden" }
- final: "There are 3 apples."
`);
    const model = new ScriptedModel(script);
    const gate = new RuleGate();
    const outcome = await runWorker({
      identity: { namespace: "team", execution: "run-1", iteration: 2 },
      task: { instruction: "Count the apples.", input: { file: "notes.txt" }, feedback: "you miscounted last time" },
      tools: ["fs.list", "fs.read", "fs.write", { name: "cmd.run", allowlist: ["ls", "cat"] }],
      confinement: await Confinement.of([{ path: ws, readOnly: false }]),
      model,
      gate,
      limits: DEFAULT_LIMITS,
      commandEnv: { PATH: process.env.PATH },
      runNonce: "abcd",
    });
    expect(outcome.answer).toBe("There are 3 apples.");
    // Every call was proposed, in order, with its step and a per-run id.
    expect(gate.seen.map((p) => [p.step, p.tool, p.toolCallId])).toEqual([
      [1, "fs.list", "i2-s1-abcd"],
      [2, "cmd.run", "i2-s2-abcd"],
      [3, "cmd.run", "i2-s3-abcd"],
      [4, "net.fetch", "i2-s4-abcd"],
      [5, "fs.read", "i2-s5-abcd"],
      [6, "fs.write", "i2-s6-abcd"],
      [7, "cmd.run", "i2-s7-abcd"],
    ]);
    expect(gate.seen[1]?.intent).toBe("read a key");
    expect(outcome.calls.map((c) => [c.tool, c.allowed, c.executed])).toEqual([
      ["fs.list", true, true],
      ["cmd.run", false, false],
      ["cmd.run", false, false],
      ["net.fetch", true, false],
      ["fs.read", true, true],
      ["fs.write", true, true],
      ["cmd.run", true, false],
    ]);
    expect(await readFile(join(ws, "out", "answer.txt"), "utf8")).toBe("3");
    // What the model saw: the task with input and feedback, the denial reasons, the file.
    const last = model.seen.at(-1) ?? [];
    expect(last[1]).toMatchObject({ role: "user" });
    expect(last[1]?.content).toBe(
      taskMessage({ instruction: "Count the apples.", input: { file: "notes.txt" }, feedback: "you miscounted last time" }),
    );
    const toolOutputs = last.filter((m) => m.role === "tool").map((m) => m.content);
    expect(toolOutputs[1]).toMatch(/^Tool call denied by the guard \(destructive_pattern check\): destructive_pattern/);
    expect(toolOutputs[3]).toMatch(/tool "net.fetch" is not available to this agent/);
    expect(toolOutputs[4]).toBe("three apples");
    expect(toolOutputs[6]).toMatch(/not on the cmd.run allowlist/);
  });

  it("stops with an error when the gate cannot be reached (never runs an undecided call)", async () => {
    const model = new ScriptedModel(parseScript(`- tool_calls: [{tool: fs.write, args: {path: x.txt, content: boom}}]\n- final: no`));
    const gate: GateClient = { propose: () => Promise.reject(new Error("no decision for tool call after 3 sends")) };
    await expect(
      runWorker({
        identity: { namespace: "team", execution: "run-2", iteration: 1 },
        task: { instruction: "t" },
        tools: ["fs.write"],
        confinement: await Confinement.of([{ path: ws, readOnly: false }]),
        model,
        gate,
        limits: DEFAULT_LIMITS,
        commandEnv: {},
      }),
    ).rejects.toThrow(/no decision/);
    await expect(readFile(join(ws, "x.txt"))).rejects.toThrow(/ENOENT/);
  });

  it("sends with each proposal the hash of the code it runs for the tool, re-hashed before every call", async () => {
    // A copy of the built-in modules, so the test can change one as an attacker would.
    const code = await realpath(await mkdtemp(join(tmpdir(), "gavel-tool-code-")));
    const files = builtinToolFiles();
    const copy = Object.fromEntries(Object.entries(files).map(([tool, paths]) => [tool, paths.map((f) => join(code, basename(f)))]));
    for (const f of new Set(Object.values(files).flat())) await copyFile(f, join(code, basename(f)));
    try {
      const model = new ScriptedModel(
        parseScript(
          `- tool_calls: [{tool: fs.read, args: {path: notes.txt}}, {tool: fs.list, args: {path: "."}}, {tool: net.fetch, args: {}}]\n- tool_calls: [{tool: fs.read, args: {path: notes.txt}}]\n- final: done`,
        ),
      );
      const gate = new RuleGate();
      const hasher = new ToolCodeHasher(copy);
      const confinement = await Confinement.of([{ path: ws, readOnly: false }]);
      let turn = 0;
      const tampering: GateClient = {
        propose: async (p) => {
          // While the third call is decided, the module behind fs.* changes on disk.
          if (++turn === 3)
            await writeFile(join(code, basename(files["fs.read"]?.[1] ?? "")), "export const stolen = true;\n", { flag: "a" });
          return gate.propose(p);
        },
      };
      await runWorker({
        identity: { namespace: "team", execution: "run-3", iteration: 1 },
        task: { instruction: "t" },
        tools: ["fs.read", "fs.list"],
        confinement,
        model,
        gate: tampering,
        limits: DEFAULT_LIMITS,
        commandEnv: {},
        toolCode: hasher,
      });
      const original = new ToolCodeHasher(files);
      await original.refresh();
      const [read1, list, fetch, read2] = gate.seen;
      expect(read1?.toolHash).toBe(original.hashes().get("fs.read"));
      expect(read1?.toolHash).toMatch(/^[0-9a-f]{64}$/);
      expect(list?.toolHash).toBe(read1?.toolHash);
      // A tool the runtime has no code for goes without a hash (check 2 denies it if it is registered).
      expect(fetch).not.toHaveProperty("toolHash");
      expect(read2?.toolHash).toMatch(/^[0-9a-f]{64}$/);
      expect(read2?.toolHash).not.toBe(read1?.toolHash);
    } finally {
      await rm(code, { recursive: true, force: true });
    }
  });

  it("names the judges' reasoning in a judge denial", () => {
    const text = denialText({
      toolCallId: "x",
      allowed: false,
      blocked_by: "judge",
      reason: "security-judge rejected",
      guard: { approved: true },
      skippedJudges: false,
      judges: [
        {
          judge: "security-judge",
          child: "c1",
          passed: false,
          result: { score: 0.2, confidence: 0.9, reasoning: "writes outside the task" },
        },
        { judge: "slow-judge", child: "c2", passed: false, rejection: "timed_out" },
      ],
      latencyMs: 3,
    });
    expect(text).toContain("denied by a judge: security-judge rejected");
    expect(text).toContain("judge security-judge: score 0.2, confidence 0.9: writes outside the task");
    expect(text).toContain("judge slow-judge: timed_out");
  });
});
