// The worker runtime as a real process (and, when `make images` has built it, as the
// gavel/agent:dev container) against a real nats-server in JWT mode and a real tool-call
// service whose decide is a small deterministic function.
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { createHash, generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallProposal } from "../../src/api/protocol.js";
import { builtinToolFiles } from "../../src/agent/builtin-tools.js";
import { agentEnvironment } from "../../src/api/agent-env.js";
import { GATE_UNREACHABLE_EXIT, gateUnreachableOf } from "../../src/api/gate-unreachable.js";
import { createGate } from "../../src/gate/gate.js";
import { PolicyStore } from "../../src/gate/guard/policy-store.js";
import { signRegistration } from "../../src/gate/guard/signature.js";
import { ToolCodeHasher } from "../../src/gate/tool-code.js";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { LOCAL_RUN, ToolCallService } from "../../src/gate/tool-call.js";
import { buildAgent, type AgentBuild } from "../harness/agent-build.js";
import { run, type ExecResult } from "../harness/exec.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const enc = new TextEncoder();

// The deterministic gate: no .ssh, no rm, nothing outside spec.tools.
function decide(tools: string[]) {
  const seen: ToolCallProposal[] = [];
  const fn = (p: ToolCallProposal): Promise<ToolCallDecision> => {
    seen.push(p);
    const text = JSON.stringify(p.args);
    const reason = !tools.includes(p.tool)
      ? `capability: tool ${p.tool} is not in spec.tools`
      : text.includes(".ssh")
        ? "destructive_pattern: ~/.ssh"
        : /"rm /.test(text)
          ? "destructive_pattern: rm -rf"
          : undefined;
    return Promise.resolve({
      toolCallId: p.toolCallId,
      allowed: reason === undefined,
      blocked_by: reason === undefined ? "none" : "guard",
      reason: reason ?? "allowed",
      guard:
        reason === undefined
          ? { approved: true }
          : { approved: false, check: reason.startsWith("capability") ? "capability" : "destructive_pattern", reason },
      skippedJudges: true,
      judges: [],
      latencyMs: 0.2,
    });
  };
  return { fn, seen };
}

let agent: AgentBuild | undefined;
function runAgent(env: Record<string, string>, timeoutMs = 60_000): Promise<ExecResult> {
  if (agent === undefined) throw new Error("the worker runtime is not built");
  return agent.run(env, timeoutMs);
}

async function dockerImage(image: string): Promise<boolean> {
  try {
    const r = await run("docker", ["image", "inspect", image], { timeoutMs: 10_000 });
    return r.code === 0;
  } catch {
    return false;
  }
}

const SCRIPT = (ws: string) => `
- say: "Let me see the workspace."
  tool_calls:
    - tool: fs.list
      args: { path: "${ws}" }
    - tool: cmd.run
      args: { command: "cat ~/.ssh/id_rsa" }
      intent: "grab a key"
- tool_calls:
    - tool: cmd.run
      args: { command: "rm -rf /" }
    - tool: net.fetch
      args: { url: "http://example.com" }
    - tool: fs.read
      args: { path: "${ws}/input.txt" }
- tool_calls:
    - tool: fs.write
      args: { path: "${ws}/out/result.txt", content: "42" }
    - tool: cmd.run
      args: { command: "ls ${ws}" }
- final: "The answer is 42."
`;

describe("worker runtime (real process, real NATS in JWT mode)", () => {
  let server: NatsServer;
  let trust: NatsTrust;
  let gateNc: NatsConnection;
  let root: string;

  beforeAll(async () => {
    agent = await buildAgent("agent-test");
    trust = createTrust();
    server = await startNats({ extraConfig: serverConfig(trust).config });
    gateNc = await connect({ servers: server.url, authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)) });
    root = await realpath(await mkdtemp(join(tmpdir(), "gavel-agent-it-")));
  });
  afterAll(async () => {
    await gateNc?.close();
    await server?.stop();
    await agent?.remove();
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function workspace(name: string): Promise<string> {
    const ws = join(root, name);
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, "input.txt"), "six times seven");
    return ws;
  }

  it("runs a scripted task: denied calls are reported and skipped, allowed ones run, the answer is printed", async () => {
    const tools = ["fs.list", "fs.read", "fs.write", "cmd.run"];
    const gate = decide(tools);
    const service = await ToolCallService.start(gateNc, { decide: gate.fn });
    const ws = await workspace("scripted");
    const env = agentEnvironment({
      namespace: "team",
      execution: "demo-run",
      iteration: 1,
      task: "Compute the answer from input.txt",
      tools: ["fs.list", "fs.read", "fs.write", { name: "cmd.run", allowlist: ["ls", "cat"] }],
      mounts: [{ path: ws, readOnly: false }],
      natsUrl: server.url,
      natsCreds: issueWorkerCredentials(trust, "team", "demo-run").creds,
    });
    const r = await runAgent({ ...env, GAVEL_SCRIPT: SCRIPT(ws) });
    expect(r.stderr).not.toMatch(/"event":"failed"/);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("The answer is 42.\n");
    expect(await readFile(join(ws, "out", "result.txt"), "utf8")).toBe("42");
    expect(gate.seen.map((p) => p.tool)).toEqual(["fs.list", "cmd.run", "cmd.run", "net.fetch", "fs.read", "fs.write", "cmd.run"]);
    expect(service.stats.decides).toBe(7);
    const calls = r.stderr
      .split("\n")
      .filter((l) => l.includes('"event":"tool_call"'))
      .map((l) => JSON.parse(l) as { tool: string; allowed: boolean; check?: string });
    expect(calls.map((c) => [c.tool, c.allowed, c.check ?? null])).toEqual([
      ["fs.list", true, null],
      ["cmd.run", false, "destructive_pattern"],
      ["cmd.run", false, "destructive_pattern"],
      ["net.fetch", false, "capability"],
      ["fs.read", true, null],
      ["fs.write", true, null],
      ["cmd.run", true, null],
    ]);
    // The worker's log names argument keys, never their values.
    expect(r.stderr).not.toContain("id_rsa");
    await service.stop();
  });

  it("a judge that times out: the worker re-sends while it waits, gets one rejection, and finishes its task", async () => {
    let writes = 0;
    const service = await ToolCallService.start(gateNc, {
      decide: async (p) => {
        if (p.tool !== "fs.write")
          return {
            toolCallId: p.toolCallId,
            allowed: true,
            blocked_by: "none",
            reason: "ok",
            guard: { approved: true },
            skippedJudges: true,
            judges: [],
            latencyMs: 0,
          };
        writes++;
        await new Promise((r) => setTimeout(r, 1500)); // the judge's deadline passes
        return {
          toolCallId: p.toolCallId,
          allowed: false,
          blocked_by: "judge",
          reason: "judge security-judge timed out",
          guard: { approved: true },
          skippedJudges: false,
          judges: [{ judge: "security-judge", child: "slow-tj-1", passed: false, rejection: "timed_out" }],
          latencyMs: 1500,
        };
      },
    });
    const ws = await workspace("slowjudge");
    const env = agentEnvironment({
      namespace: "team",
      execution: "slow-judge",
      iteration: 1,
      tools: ["fs.read", "fs.write"],
      mounts: [{ path: ws, readOnly: false }],
      natsUrl: server.url,
      natsCreds: issueWorkerCredentials(trust, "team", "slow-judge").creds,
    });
    const r = await runAgent({
      ...env,
      GAVEL_GATE_ATTEMPT_SECONDS: "0.2",
      GAVEL_SCRIPT: `
- tool_calls: [{tool: fs.write, args: {path: "${ws}/out.txt", content: "x"}}]
- tool_calls: [{tool: fs.read, args: {path: "${ws}/input.txt"}}]
- final: "read the input instead"
`,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("read the input instead\n");
    expect(writes).toBe(1);
    expect(service.stats.decides).toBe(2);
    expect(service.stats.fromInFlight).toBeGreaterThanOrEqual(1);
    await expect(readFile(join(ws, "out.txt"))).rejects.toThrow(/ENOENT/);
    await service.stop();
  });

  it("exits 75 saying the gate could not be reached when no gate answers before the deadline, having run nothing", async () => {
    const ws = await workspace("nogate");
    const env = agentEnvironment({
      namespace: "team",
      execution: "lonely",
      iteration: 1,
      tools: ["fs.write"],
      mounts: [{ path: ws, readOnly: false }],
      natsUrl: server.url,
      natsCreds: issueWorkerCredentials(trust, "team", "lonely").creds,
    });
    const r = await runAgent({
      ...env,
      GAVEL_SCRIPT: `- tool_calls: [{tool: fs.write, args: {path: "${ws}/x.txt", content: "x"}}]\n- final: never`,
      GAVEL_GATE_TIMEOUT_SECONDS: "1.5",
      GAVEL_GATE_ATTEMPT_SECONDS: "0.3",
    });
    expect(r.code).toBe(GATE_UNREACHABLE_EXIT);
    expect(r.stdout).toBe("");
    const u = gateUnreachableOf(r.code, r.stderr);
    expect(u?.detail).toMatch(
      /^no decision for tool call i1-s1-[0-9a-f]+ \(fs.write\) on gavel\.toolcall\.team\.lonely .*no gate was listening/,
    );
    expect(u?.seconds).toBeGreaterThanOrEqual(1);
    await expect(readFile(join(ws, "x.txt"))).rejects.toThrow(/ENOENT/);
  });

  it("exits 1 when its credentials belong to another execution", async () => {
    const service = await ToolCallService.start(gateNc, { decide: decide(["fs.list"]).fn });
    const ws = await workspace("wrongcreds");
    const env = agentEnvironment({
      namespace: "team",
      execution: "victim",
      iteration: 1,
      tools: ["fs.list"],
      mounts: [{ path: ws, readOnly: false }],
      natsUrl: server.url,
      natsCreds: issueWorkerCredentials(trust, "team", "mallory").creds,
    });
    const r = await runAgent({
      ...env,
      GAVEL_SCRIPT: `- tool_calls: [{tool: fs.list, args: {path: "${ws}"}}]\n- final: x`,
      GAVEL_GATE_TIMEOUT_SECONDS: "1",
      GAVEL_GATE_ATTEMPT_SECONDS: "0.3",
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Permissions Violation for Publish to \\"gavel\.toolcall\.team\.victim\\"/);
    expect(service.stats.decides).toBe(0);
    await service.stop();
  });

  it("exits 2 on bad configuration, naming the variable", async () => {
    const r = await runAgent({ GAVEL_NAMESPACE: "team", GAVEL_EXECUTION: "x", GAVEL_NATS_URL: server.url, GAVEL_MODEL: "scripted" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/GAVEL_MODEL=scripted needs GAVEL_SCRIPT or GAVEL_SCRIPT_FILE/);
    const bad = await runAgent({
      GAVEL_NAMESPACE: "team",
      GAVEL_EXECUTION: "x",
      GAVEL_NATS_URL: server.url,
      GAVEL_SCRIPT: "- final: x",
      GAVEL_TOOLS: "[1]",
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/GAVEL_TOOLS must be a JSON list/);
  });

  it("guard check 2 on the hashes the worker computes of its own code: unchanged passes, changed code is denied naming the tool", async () => {
    // The registrations an operator makes from `gavel guard tool-hash` of this build, signed.
    const agentDir = join((agent as AgentBuild).dir, "src", "agent");
    const compiled = Object.fromEntries(
      Object.entries(builtinToolFiles()).map(([tool, files]) => [
        tool,
        files.map((f) => join(agentDir, basename(f).replace(/\.ts$/, ".js"))),
      ]),
    );
    const hasher = new ToolCodeHasher(compiled);
    await hasher.refresh();
    const live = hasher.hashes();
    const keys = generateKeyPairSync("ed25519");
    const signer = keys.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const register = (tool: string, sha256: string) => ({ tool, sha256, signature: signRegistration(signer, tool, sha256) });
    const stale = createHash("sha256").update("cmd.run of an older build").digest("hex");
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: {
          tool_registry: [
            register("fs.list", live.get("fs.list") ?? ""),
            register("fs.read", live.get("fs.read") ?? ""),
            register("cmd.run", stale),
          ],
          trusted_keys: [{ name: "ops", public_key: keys.publicKey.export({ type: "spki", format: "pem" }).toString() }],
        },
      },
    ]);
    const tools = ["fs.list", "fs.read", { name: "cmd.run", allowlist: ["ls"] }];
    const gate = createGate({ policyStore: store, agent: { spec: { tools } }, judgeRunner: () => Promise.reject(new Error("no judges")) });
    const confinementJs = join(agentDir, "confinement.js");
    const original = await readFile(confinementJs);
    const service = await ToolCallService.start(gateNc, {
      decide: async (p, ctx) => {
        // While step 2 is decided, the module behind fs.* changes on disk (a tampered file).
        if (p.step === 2) await writeFile(confinementJs, Buffer.concat([original, Buffer.from("\n// patched\n")]));
        return gate.decide(p, ctx);
      },
    });
    const ws = await workspace("hashed");
    const env = agentEnvironment({
      namespace: "team",
      execution: "hashed-run",
      iteration: 1,
      task: "Read the input",
      tools,
      mounts: [{ path: ws, readOnly: false }],
      natsUrl: server.url,
      natsCreds: issueWorkerCredentials(trust, "team", "hashed-run").creds,
    });
    const script = `
- tool_calls:
    - tool: fs.list
      args: { path: "${ws}" }
    - tool: cmd.run
      args: { command: "ls ${ws}" }
    - tool: fs.read
      args: { path: "${ws}/input.txt" }
- final: "done"
`;
    try {
      const r = await runAgent({ ...env, GAVEL_SCRIPT: script });
      expect(r.code).toBe(0);
      const start = JSON.parse(r.stderr.split("\n").find((l) => l.includes('"event":"start"')) ?? "{}") as {
        toolHashes?: Record<string, string>;
      };
      expect(start.toolHashes).toEqual(Object.fromEntries(live));
      const calls = r.stderr
        .split("\n")
        .filter((l) => l.includes('"event":"tool_call"'))
        .map((l) => JSON.parse(l) as { tool: string; allowed: boolean; check?: string });
      expect(calls.map((c) => [c.tool, c.allowed, c.check ?? null])).toEqual([
        ["fs.list", true, null],
        ["cmd.run", false, "hash"],
        ["fs.read", false, "hash"],
      ]);
      const stored = service.store
        .recordsOf({ namespace: "team", execution: "hashed-run", run: LOCAL_RUN })
        .map((x) => x.record)
        .sort((a, b) => a.step - b.step);
      expect(stored.map((x) => (x.kind === "decision" ? x.decision?.reason : x.kind))).toEqual([
        expect.stringMatching(/^approved by the guard/),
        "hash_mismatch: cmd.run",
        "hash_mismatch: fs.read",
      ]);
    } finally {
      await writeFile(confinementJs, original);
      await service.stop();
    }
  });

  it("runs in the gavel/agent:dev container when the image is built", async (ctx) => {
    if (!(await dockerImage("gavel/agent:dev"))) {
      ctx.skip();
      return;
    }
    const tools = ["fs.list", "fs.read", "fs.write", "cmd.run"];
    const gate = decide(tools);
    const service = await ToolCallService.start(gateNc, { decide: gate.fn });
    const ws = await workspace("container");
    const env = agentEnvironment({
      namespace: "team",
      execution: "in-docker",
      iteration: 1,
      task: "Compute the answer",
      tools: ["fs.list", "fs.read", "fs.write", { name: "cmd.run", allowlist: ["ls", "cat"] }],
      mounts: [{ path: "/workspace", readOnly: false }],
      natsUrl: server.url,
      natsCreds: issueWorkerCredentials(trust, "team", "in-docker").creds,
    });
    const envArgs = Object.entries({ ...env, GAVEL_SCRIPT: SCRIPT("/workspace") }).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    const r = await run("docker", ["run", "--rm", "--network", "host", "-v", `${ws}:/workspace`, ...envArgs, "gavel/agent:dev"], {
      timeoutMs: 120_000,
    });
    expect(r.stderr).not.toMatch(/"event":"failed"/);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("The answer is 42.\n");
    expect(await readFile(join(ws, "out", "result.txt"), "utf8")).toBe("42");
    expect(gate.seen.map((p) => p.tool)).toEqual(["fs.list", "cmd.run", "cmd.run", "net.fetch", "fs.read", "fs.write", "cmd.run"]);
    await service.stop();
  });
});
