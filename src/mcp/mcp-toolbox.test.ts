// The MCP toolbox against real stdio servers: the official filesystem server from npm, and
// test/harness/mcp-fault-server.mjs misbehaving on purpose (no start, no answer to
// initialize, a tool listed twice or under a bad name, a crash, a hang, a line that is not
// JSON-RPC, an oversized result). Each ends with an error naming the server and the tool,
// within the deadline; and the worker loop sends every MCP call through the real gate first.
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, GuardPolicySpec, McpServerSpec } from "../api/types.js";
import { BUILTIN_TOOLS, DEFAULT_LIMITS } from "../agent/builtin-tools.js";
import { Confinement } from "../agent/confinement.js";
import { parseScript, ScriptedModel } from "../agent/scripted-model.js";
import { runWorker, type GateClient } from "../agent/worker-loop.js";
import { createGate } from "../gate/gate.js";
import { compilePolicy } from "../gate/guard/policy.js";
import { McpServerError } from "./mcp-server.js";
import { McpToolbox } from "./mcp-toolbox.js";

const REPO = join(import.meta.dirname, "../..");
const FS_SERVER = join(REPO, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const FAULT_SERVER = join(REPO, "test/harness/mcp-fault-server.mjs");
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
const options = { env, outputCapBytes: DEFAULT_LIMITS.outputCapBytes, reserved: Object.keys(BUILTIN_TOOLS) };
const fault = (mode: string, extra: Partial<McpServerSpec> = {}): McpServerSpec => ({
  name: "flaky",
  command: [process.execPath, FAULT_SERVER, mode],
  ...extra,
});

/** The error a promise rejects with, and how long it took. */
async function failure(p: Promise<unknown>): Promise<{ err: McpServerError; ms: number }> {
  const t0 = Date.now();
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(McpServerError);
    return { err: err as McpServerError, ms: Date.now() - t0 };
  }
  throw new Error("expected a rejection");
}

describe("McpToolbox with the official filesystem server", () => {
  let ws: string;
  let box: McpToolbox;
  beforeAll(async () => {
    ws = await realpath(await mkdtemp(join(tmpdir(), "gavel-mcp-")));
    await writeFile(join(ws, "notes.txt"), "hello from the workspace\n");
    box = await McpToolbox.start([{ name: "files", command: [process.execPath, FS_SERVER, ws] }], options);
  }, 60_000);
  afterAll(async () => {
    await box?.close();
    await rm(ws, { recursive: true, force: true });
  });

  it("offers its tools as files.<tool>, pinned, with description, schema and annotations", () => {
    const names = box.tools().map((t) => t.name);
    expect(names).toContain("files.read_text_file");
    expect(names).toContain("files.write_file");
    const d = box.descriptor("files.read_text_file");
    expect(d).toMatchObject({ server: "files", tool: "read_text_file", pinned: true, annotations: { readOnlyHint: true } });
    expect(d?.inputSchema).toMatchObject({ type: "object", properties: { path: { type: "string" } } });
    expect(box.owns("files.anything")).toBe(true);
    expect(box.owns("fs.read")).toBe(false);
  });

  it("returns a call's text, and the server's own error result as an error text", async () => {
    expect(await box.call("files.read_text_file", { path: join(ws, "notes.txt") })).toBe("hello from the workspace\n");
    expect(await box.call("files.read_text_file", { path: "/etc/hostname" })).toMatch(/^Error from the tool: .*(denied|outside)/i);
  });
});

describe("McpToolbox refuses servers that misbehave, naming server and tool", () => {
  it("a server that exits at start", async () => {
    const { err } = await failure(McpToolbox.start([fault("nostart")], options));
    expect(err.server).toBe("flaky");
    expect(err.message).toMatch(/^MCP server flaky \(.*mcp-fault-server.mjs nostart\) did not start: .*refusing to start/);
  });
  it("a server that never answers initialize, within its startup deadline", async () => {
    const { err, ms } = await failure(McpToolbox.start([fault("noinit", { startup_timeout_seconds: 1 })], options));
    expect(err.message).toMatch(/^MCP server flaky .*did not start: .*timed out/i);
    expect(ms).toBeLessThan(10_000);
  });
  it("a tool listed twice, a tool name that cannot be <server>.<tool>, a declared tool it does not list", async () => {
    expect((await failure(McpToolbox.start([fault("dup")], options))).err.message).toBe("MCP server flaky lists tool echo twice");
    expect((await failure(McpToolbox.start([fault("badname")], options))).err.message).toMatch(
      /^MCP server flaky lists a tool named "echo now!"/,
    );
    expect((await failure(McpToolbox.start([fault("ok", { tools: ["echo", "shout"] })], options))).err.message).toMatch(
      /^MCP server flaky does not list tool shout/,
    );
  });
  it("a name that collides with a built-in tool", async () => {
    const { err } = await failure(McpToolbox.start([fault("ok")], { ...options, reserved: ["flaky.echo"] }));
    expect(err).toMatchObject({ server: "flaky", tool: "echo", message: "MCP tool flaky.echo collides with a built-in tool of that name" });
  });

  it.each([
    ["crash", /^MCP tool flaky\.echo: MCP server flaky exited/],
    ["hang", /^MCP tool flaky\.echo: MCP server flaky did not answer echo within 1 s/],
    ["garbage", /^MCP tool flaky\.echo: MCP server flaky answered out of protocol/],
    ["huge", /^MCP tool flaky\.echo: MCP server flaky (answered out of protocol: .*ReadBuffer exceeded|exited)/],
  ])("a server that answers a call with a %s: the call fails fast, later calls too", async (mode, message) => {
    // Only the hang needs its timeout to fire; the others get a long one, so that reading a
    // huge answer at load 17-20 (which took over 1 s) is not cut short by the timer.
    const box = await McpToolbox.start([fault(mode, { timeout_seconds: mode === "hang" ? 1 : 30 })], options);
    try {
      const { err } = await failure(box.call("flaky.echo", { text: "hi" }));
      expect(err).toMatchObject({ server: "flaky", tool: "echo" });
      expect(err.message).toMatch(message);
      // The message names the cause (for a hang, the 1 s timeout firing). A later call gets the
      // remembered failure, not a new wait: under the timeout, whatever the machine's load.
      const again = await failure(box.call("flaky.echo", { text: "again" }));
      expect(again.err.message).toBe(err.message);
      expect(again.ms).toBeLessThan(1000);
    } finally {
      await box.close();
    }
  });
});

describe("the worker loop's MCP calls go through the gate", () => {
  let ws: string;
  let box: McpToolbox;
  const agent: Pick<Agent, "spec"> = {
    spec: {
      tools: ["fs.read"],
      mcp_servers: [{ name: "files", command: ["mcp-server-filesystem", "/workspace"] }],
      volumes: [{ name: "ws", mount_path: "/workspace" }],
    },
  };
  beforeAll(async () => {
    ws = await realpath(await mkdtemp(join(tmpdir(), "gavel-mcp-loop-")));
    await mkdir(join(ws, "keys"));
    await writeFile(join(ws, "keys/id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- secret\n");
    await writeFile(join(ws, "notes.txt"), "the notes\n");
    box = await McpToolbox.start([{ name: "files", command: [process.execPath, FS_SERVER, ws] }], options);
  }, 60_000);
  afterAll(async () => {
    await box?.close();
    await rm(ws, { recursive: true, force: true });
  });

  it("denies a secret read by the guard before the server sees it, and returns an allowed read", async () => {
    const policy: GuardPolicySpec = {};
    const gate = createGate({
      policyStore: { get: () => compilePolicy([{ name: "p", spec: policy }]) },
      agent,
      judgeRunner: () => Promise.reject(new Error("no judges")),
    });
    const seen: ToolCallProposal[] = [];
    const client: GateClient = {
      async propose(p): Promise<ToolCallDecision> {
        seen.push(p);
        const o = gate.decide(p, { iteration: { calls: () => [], violations: [] } });
        return "judged" in o ? o.judged() : o;
      },
    };
    const model = new ScriptedModel(
      parseScript(`
- tool_calls:
    - tool: files.read_text_file
      args: { path: "${ws}/keys/id_rsa" }
    - tool: files.read_text_file
      args: { path: "${ws}/notes.txt" }
- final: done`),
    );
    const out = await runWorker({
      identity: { namespace: "default", execution: "e1", iteration: 1 },
      task: { instruction: "read" },
      tools: agent.spec.tools ?? [],
      mcp: box,
      confinement: await Confinement.of([{ path: ws, readOnly: false }]),
      model,
      gate: client,
      limits: DEFAULT_LIMITS,
      commandEnv: {},
    });
    expect(out.calls.map((c) => [c.tool, c.allowed, c.blockedBy, c.executed])).toEqual([
      ["files.read_text_file", false, "guard", false],
      ["files.read_text_file", true, "none", true],
    ]);
    // Both proposals carried the tool's listing; the gate judged the arguments.
    expect(seen.map((p) => p.mcp?.tool)).toEqual(["read_text_file", "read_text_file"]);
    const results = (model.seen.at(-1) ?? []).filter((m) => m.role === "tool").map((m) => m.content);
    expect(results[0]).toMatch(/^Tool call denied by the guard \(destructive_pattern check\): secrets: reads files: a secret file/);
    expect(results[0]).not.toContain("BEGIN OPENSSH");
    expect(results[1]).toBe("the notes\n");
  }, 30_000);
});
