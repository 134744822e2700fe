// The llm judge against a real HTTP server speaking the chat completions API: request
// shape, verdicts, the one retry, the malformed-output outcome, API errors.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseGradientResult } from "../../src/engine/gradient.js";
import { configFromEnv, llmJudge, malformedOutput, userMessage } from "./llm-judge.js";
import { type ScriptedChatServer, startScriptedChatServer } from "./scripted-chat-server.js";
import { checkReply } from "./verdict-check.js";

const payload = { task: "write a haiku", criteria: "Is it a haiku?", output: "an old silent pond", worker_mounts: ["/workspace"] };
const good =
  '{"score": 0.8, "confidence": 0.9, "reasoning": "close to a haiku", "signals": [{"category": "form", "score": 0.8, "message": "5-7-5 almost"}]}';

describe("llmJudge", () => {
  let server: ScriptedChatServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const config = (s: ScriptedChatServer) =>
    configFromEnv({ LLM_JUDGE_BASE_URL: s.baseUrl, LLM_JUDGE_MODEL: "judge-model", LLM_JUDGE_API_KEY: "sk-test" });

  it("asks at temperature 0 with the key, model and payload, and returns the verdict", async () => {
    server = await startScriptedChatServer([good]);
    const out = await llmJudge(payload, config(server));
    expect(out).toMatchObject({ ok: true, attempts: 1, verdict: { score: 0.8, confidence: 0.9, metadata: { model: "judge-model" } } });
    const req = server.received[0];
    expect(req?.authorization).toBe("Bearer sk-test");
    expect(req?.body.temperature).toBe(0);
    expect(req?.body.model).toBe("judge-model");
    expect(req?.body.messages?.[0]?.role).toBe("system");
    expect(req?.body.messages?.[1]?.content).toContain("an old silent pond");
    expect(req?.body.messages?.[1]?.content).toContain("Is it a haiku?");
  });

  it("accepts a fenced verdict inside prose", async () => {
    server = await startScriptedChatServer([`Sure! Here it is:\n\`\`\`json\n${good}\n\`\`\`\nHope that helps.`]);
    expect((await llmJudge(payload, config(server))).ok).toBe(true);
  });

  it("retries once on a malformed reply, telling the model what was wrong", async () => {
    server = await startScriptedChatServer(['{"score": 1.5, "confidence": 1, "reasoning": "too good"}', good]);
    const out = await llmJudge(payload, config(server));
    expect(out).toMatchObject({ ok: true, attempts: 2 });
    const retry = server.received[1]?.body.messages ?? [];
    expect(retry.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(retry[3]?.content).toContain('"score" must be a number in [0, 1], got 1.5');
  });

  it("after two malformed replies yields the malformed-output outcome, which gavel's parser rejects", async () => {
    server = await startScriptedChatServer(["I think it is pretty good!", '{"score": "high", "confidence": 0.5, "reasoning": "x"}']);
    const out = await llmJudge(payload, config(server));
    expect(out.ok).toBe(false);
    expect(server.received.length).toBe(2);
    if (out.ok) return;
    expect(out.problem).toContain('"score" must be a number');
    const parsed = parseGradientResult(`llm-judge log\n${malformedOutput(out.problem)}`);
    expect(parsed).toMatchObject({ ok: false, rejection: "malformed_output" });
  });

  it("an API error is an error naming the status, not a verdict", async () => {
    server = await startScriptedChatServer([{ status: 401, body: '{"error":{"message":"bad key"}}' }]);
    await expect(llmJudge(payload, config(server))).rejects.toThrow(/answered 401: .*bad key/);
  });

  it("an unreachable API is an error naming the URL", async () => {
    const cfg = configFromEnv({ LLM_JUDGE_BASE_URL: "http://127.0.0.1:9/v1", LLM_JUDGE_MODEL: "m" });
    await expect(llmJudge(payload, cfg)).rejects.toThrow(/POST http:\/\/127\.0\.0\.1:9\/v1\/chat\/completions failed/);
  });

  it("shows the model the files named by `include:` lines, from the worker mounts only", async () => {
    const ws = await mkdtemp(join(tmpdir(), "llm-judge-"));
    await writeFile(join(ws, "sum.js"), "module.exports = (a, b) => a + b;\n");
    server = await startScriptedChatServer([good]);
    const criteria = "Is sum.js correct?\ninclude: sum.js\ninclude: /etc/passwd\ninclude: nope.js";
    await llmJudge({ ...payload, criteria, worker_mounts: [ws] }, config(server));
    const prompt = server.received[0]?.body.messages?.[1]?.content ?? "";
    expect(prompt).toContain("## File sum.js\nmodule.exports = (a, b) => a + b;");
    expect(prompt).toContain("## File /etc/passwd (outside the worker mounts; not read)");
    expect(prompt).not.toContain("root:");
    expect(prompt).toContain("## File nope.js (missing)");
    await rm(ws, { recursive: true, force: true });
  });

  it("sends response_format only in JSON mode", async () => {
    server = await startScriptedChatServer([good]);
    await llmJudge(payload, { ...config(server), jsonMode: true });
    expect(server.received[0]?.body.response_format).toEqual({ type: "json_object" });
  });
});

describe("configuration and checks", () => {
  it("names missing or bad settings", () => {
    expect(() => configFromEnv({})).toThrow(/LLM_JUDGE_BASE_URL/);
    expect(() => configFromEnv({ LLM_JUDGE_BASE_URL: "nope" })).toThrow(/not a URL/);
    expect(() => configFromEnv({ LLM_JUDGE_BASE_URL: "http://x/v1" })).toThrow(/LLM_JUDGE_MODEL/);
    expect(configFromEnv({ OPENAI_BASE_URL: "http://x/v1", LLM_JUDGE_MODEL: "m", OPENAI_API_KEY: "k" }).apiKey).toBe("k");
  });

  it("holds replies to the GradientResult shape", () => {
    expect(checkReply(good).ok).toBe(true);
    expect(checkReply('{"score": 0.5, "confidence": 0.5}')).toMatchObject({ ok: false, problem: '"reasoning" must be a string' });
    expect(checkReply('{"score": NaN}')).toMatchObject({ ok: false });
    expect(checkReply('{"score": 0.5, "confidence": 0.5, "reasoning": "r", "signals": [{"category": "c"}]}')).toMatchObject({ ok: false });
    expect(checkReply("no json")).toMatchObject({ ok: false, problem: "the reply contains no JSON object" });
  });

  it("labels payload sections and puts the material last", () => {
    const m = userMessage({ proposed_tool_call: { tool: "fs_read", args: { path: "/x" } }, criteria: "safe?", output: "{...}" });
    expect(m.indexOf("## Criteria")).toBeLessThan(m.indexOf("## Proposed tool call"));
    expect(m.trimEnd().endsWith("{...}")).toBe(true);
  });
});
