// The agent runtime as a judge: its payload from GAVEL_INPUT_DIR (parts in name order), stdin
// or env; its own tools only, on read-only mounts; its final answer is the verdict text.
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readAgentConfig } from "./config.js";
import { Confinement } from "./confinement.js";
import { readJudgeInput } from "./judge-input.js";
import { JUDGE_SYSTEM_PROMPT, ownToolsGate } from "./judge-mode.js";
import { ScriptedModel } from "./scripted-model.js";
import { runWorker } from "./worker-loop.js";

const noStdin = () => Readable.from([]);

describe("judge input", () => {
  it("reads GAVEL_INPUT_DIR parts in name order before stdin and env", async () => {
    const dir = await mkdtemp(join(tmpdir(), "judge-input-"));
    await writeFile(join(dir, "001"), '"b"}');
    await writeFile(join(dir, "000"), '{"a": ');
    await writeFile(join(dir, "..data"), "ignored");
    expect(await readJudgeInput(Readable.from(['{"x":1}']), { GAVEL_INPUT_DIR: dir, GAVEL_INPUT: '{"y":2}' })).toEqual({ a: "b" });
    expect(await readJudgeInput(noStdin(), { GAVEL_INPUT: '{"y":2}' })).toEqual({ y: 2 });
    await expect(readJudgeInput(noStdin(), { GAVEL_INPUT_DIR: join(dir, "missing") })).rejects.toThrow(/GAVEL_INPUT_DIR .* cannot be read/);
  });
});

describe("judge mode", () => {
  it("needs no NATS; a worker still does", () => {
    const env = { GAVEL_NAMESPACE: "t", GAVEL_EXECUTION: "j", GAVEL_SCRIPT: "- final: x" };
    expect(readAgentConfig({ ...env, GAVEL_ROLE: "judge" }).role).toBe("judge");
    expect(() => readAgentConfig(env)).toThrow(/GAVEL_NATS_URL is not set/);
    expect(() => readAgentConfig({ ...env, GAVEL_ROLE: "referee" })).toThrow(/GAVEL_ROLE must be/);
  });

  it("runs its own allowlisted tools on read-only mounts and answers with the verdict text", async () => {
    const ws = await mkdtemp(join(tmpdir(), "judge-ws-"));
    await writeFile(join(ws, "result.txt"), "42\n");
    const model = new ScriptedModel([
      {
        tool_calls: [
          { tool: "fs.read", args: { path: join(ws, "result.txt") } },
          { tool: "fs.write", args: { path: join(ws, "x"), content: "no" } },
          { tool: "cmd.run", args: { command: "rm -rf /" } },
        ],
      },
      { final: '{"score": 1, "confidence": 0.9, "reasoning": "the answer is 42"}' },
    ]);
    const outcome = await runWorker({
      identity: { namespace: "t", execution: "j", iteration: 1 },
      task: { instruction: "You are a judge.", input: { output: "42", criteria: "is it 42?" } },
      tools: ["fs.read", "fs.write", { name: "cmd.run", allowlist: ["pytest"] }],
      confinement: await Confinement.of([{ path: ws, readOnly: true }]),
      model,
      gate: ownToolsGate,
      limits: { commandTimeoutSeconds: 5, outputCapBytes: 4096 },
      commandEnv: {},
      systemPrompt: JUDGE_SYSTEM_PROMPT,
    });
    expect(outcome.answer).toContain('"score": 1');
    const results = model.seen[1]?.filter((m) => m.role === "tool").map((m) => m.content) ?? [];
    expect(results[0]).toContain("42");
    expect(results[1]).toMatch(/read-only/i);
    expect(results[2]).toMatch(/not on the cmd.run allowlist/);
    expect(model.seen[0]?.[0]?.content).toBe(JUDGE_SYSTEM_PROMPT);
    expect(model.seen[0]?.[1]?.content).toMatch(/You are a judge\.[\s\S]*"criteria": "is it 42\?"/);
    expect(await readFile(join(ws, "result.txt"), "utf8")).toBe("42\n");
  });
});
