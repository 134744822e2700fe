// The shipped judge images run through DockerWorkloads (runToEnd) as local mode runs judges:
// payload on stdin and in GAVEL_INPUT, the workspace mounted read-only, no network (the llm judge: host
// network to a scripted chat server). Each verdict must pass `gavel verdict`.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeOutcome } from "../../src/engine/gradient.js";
import { DockerWorkloads } from "../../src/runtime/docker/docker-workloads.js";
import { runToEnd } from "../../src/runtime/run-to-end.js";
import type { WorkloadMount, WorkloadResult, WorkloadSpec } from "../../src/runtime/workload.js";
import { type ScriptedChatServer, startScriptedChatServer } from "../../judges/llm-judge/scripted-chat-server.js";
import { run, runOk } from "../harness/exec.js";
import { BASE_IMAGE, HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const LOCAL = { namespace: "local" };

/** `gavel verdict -` over a judge's stdout, as a judge author would check it. */
async function gavelVerdict(result: WorkloadResult): Promise<{ code: number; stdout: string }> {
  const r = await run(GAVEL, ["verdict", "--exit-code", String(result.exitCode), "-"], { stdin: result.stdout });
  return { code: r.code, stdout: r.stdout };
}

describe("judge images through DockerWorkloads (real dockerd)", () => {
  let workloads: DockerWorkloads;
  let ws: string;
  let mount: WorkloadMount;

  function judge(name: string, image: string, payload: object, extra: Partial<WorkloadSpec> = {}): WorkloadSpec {
    const input = JSON.stringify(payload);
    return {
      name,
      image,
      stdin: input,
      env: { GAVEL_INPUT: input, ...extra.env },
      mounts: [mount],
      network: "none",
      timeoutSeconds: 60,
      ...extra,
    };
  }

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "base-image.sh"), []);
    await runOk(join(REPO_DIR, "judges", "build-images.sh"), [], { env: { ...process.env, BASE_IMAGE } });
    workloads = new DockerWorkloads();
    ws = await mkdtemp(join(tmpdir(), "gavel-judges-"));
    await chmod(ws, 0o755);
    await mkdir(join(ws, "out"));
    await writeFile(join(ws, "out", "result.json"), '{"status": "ok"}\n');
    await writeFile(join(ws, "ok.test.mjs"), "import test from 'node:test'; test('passes', () => {});\n");
    await writeFile(
      join(ws, "bad.test.mjs"),
      "import test from 'node:test'; import assert from 'node:assert'; test('fails', () => assert.equal(1, 2, 'one is not two'));\n",
    );
    mount = { name: "workspace", source: ws, mountPath: "/workspace", readOnly: true };
  }, 600_000);
  afterAll(async () => {
    await workloads.removeAll();
    await rm(ws, { recursive: true, force: true });
  });

  it("rule-judge scores a worker's output and files from the read-only workspace", async () => {
    const payload = {
      output: "done: 1 file written",
      criteria:
        'Check the result.\n- contains: done\n- file_json: out/result.json\n- file_contains: out/result.json :: "status": "ok"\n- file_exists: out/missing.txt',
      worker_mounts: ["/workspace"],
      validation_context: "rule-judge",
    };
    const r = await runToEnd(workloads, judge("rule-judge-output", "gavel/rule-judge:dev", payload), LOCAL);
    expect(r.exitCode).toBe(0);
    const v = await gavelVerdict(r);
    expect(v.code).toBe(0);
    const verdict = JSON.parse(v.stdout) as { score: number; reasoning: string };
    expect(verdict.score).toBe(0.75);
    expect(verdict.reasoning).toContain("/workspace/out/missing.txt is missing");
  });

  it("rule-judge blocks a tool call at the guard", async () => {
    const payload = {
      task: "tidy up",
      proposed_tool_call: { tool: "shell_exec", args: { command: "rm -rf /" } },
      available_tools: ["shell_exec"],
      worker_mounts: ["/workspace"],
      criteria: "",
      validation_context: "semantic_judge_pre_execution_inner_loop",
      policy_violations: [],
    };
    const r = await runToEnd(workloads, judge("rule-judge-call", "gavel/rule-judge:dev", payload), LOCAL);
    const outcome = judgeOutcome(r);
    expect(outcome.ok && outcome.result.score).toBe(0);
    expect(outcome.ok && outcome.result.reasoning).toMatch(/^guard: dangerous shell command/);
    expect((await gavelVerdict(r)).code).toBe(0);
  });

  it("command-judge runs node --test over the read-only workspace and scores the pass ratio", async () => {
    const r = await runToEnd(
      workloads,
      judge("command-judge", "gavel/command-judge:dev", { criteria: "run: node --test", worker_mounts: ["/workspace"] }),
      LOCAL,
    );
    expect(r.exitCode).toBe(0);
    const v = await gavelVerdict(r);
    expect(v.code).toBe(0);
    const verdict = JSON.parse(v.stdout) as { score: number; reasoning: string };
    expect(verdict.score).toBe(0.5);
    expect(verdict.reasoning).toContain("one is not two");
  });

  describe("llm-judge against a scripted chat completions server", () => {
    let server: ScriptedChatServer | undefined;
    afterAll(async () => server?.close());
    const env = (s: ScriptedChatServer) => ({
      LLM_JUDGE_BASE_URL: s.baseUrl,
      LLM_JUDGE_MODEL: "judge-model",
      LLM_JUDGE_API_KEY: "sk-local",
    });
    const payload = {
      task: "summarise",
      output: "a summary",
      criteria: "Is it a summary?\ninclude: out/result.json",
      worker_mounts: ["/workspace"],
    };

    it("returns the model's verdict (host network: the engine has no bridge)", async () => {
      server = await startScriptedChatServer(['{"score": 0.7, "confidence": 0.6, "reasoning": "a fair summary"}']);
      const r = await runToEnd(
        workloads,
        judge("llm-judge-ok", "gavel/llm-judge:dev", payload, { network: "allow", env: env(server) }),
        LOCAL,
      );
      expect(r.stderr).toBe("");
      const v = await gavelVerdict(r);
      expect(v.code).toBe(0);
      expect(JSON.parse(v.stdout)).toMatchObject({ score: 0.7, confidence: 0.6 });
      expect(server.received[0]?.body.temperature).toBe(0);
      // The file named by `include:` was read from the read-only mount inside the container.
      expect(server.received[0]?.body.messages?.[1]?.content).toContain('## File out/result.json\n{"status": "ok"}');
      await server.close();
      server = undefined;
    });

    it("after two malformed replies the run is rejected as malformed_output", async () => {
      server = await startScriptedChatServer(["looks great to me", "still no JSON, sorry"]);
      const r = await runToEnd(
        workloads,
        judge("llm-judge-bad", "gavel/llm-judge:dev", payload, { network: "allow", env: env(server) }),
        LOCAL,
      );
      expect(server.received.length).toBe(2);
      const v = await gavelVerdict(r);
      expect(v.code).toBe(1);
      expect(v.stdout).toMatch(/^rejected: malformed_output/);
      await server.close();
      server = undefined;
    });

    it("with network none it cannot reach the API and fails", async () => {
      server = await startScriptedChatServer(['{"score": 1, "confidence": 1, "reasoning": "x"}']);
      const r = await runToEnd(workloads, judge("llm-judge-offline", "gavel/llm-judge:dev", payload, { env: env(server) }), LOCAL);
      expect(server.received.length).toBe(0);
      expect(judgeOutcome(r)).toMatchObject({ ok: false, rejection: "failed" });
      expect(r.stderr).toContain("chat/completions failed");
    });
  });

  it("a judge that tries to write the workspace fails, and the workspace is unchanged", async () => {
    // The judge images' entrypoint is fixed; a rogue judge is any image run as a judge.
    const rogue = judge(
      "rogue-judge",
      BASE_IMAGE,
      {},
      {
        command: [
          "node",
          "-e",
          "require('fs').writeFileSync('/workspace/out/result.json', '{\"status\": \"forged\"}'); console.log(JSON.stringify({score: 1, confidence: 1, reasoning: 'forged'}))",
        ],
      },
    );
    const r = await runToEnd(workloads, rogue, LOCAL);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("EROFS");
    expect(judgeOutcome(r)).toMatchObject({ ok: false, rejection: "failed" });
    expect((await gavelVerdict(r)).code).toBe(1);
    expect(await readFile(join(ws, "out", "result.json"), "utf8")).toBe('{"status": "ok"}\n');
  });
});
