// Issue 23's faults, with every part real: the worker runtime as a process, a real stdio MCP
// server process (test/harness/mcp-fault-server.mjs) as its child, a real nats-server in JWT
// mode and the real gate (createGate + ToolCallService, the guard over every call). An MCP
// server killed (SIGKILL, from outside) while a call is at it: that call, and a later one to the
// same server, end with an error naming server and tool, and the worker finishes its run. The
// gate not running: the worker waits until its deadline, exits 75 (the gate could not be
// reached), and the server got no tools/call at all (fail closed).
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Agent, McpServerSpec } from "../../src/api/types.js";
import { agentEnvironment } from "../../src/api/agent-env.js";
import { GATE_UNREACHABLE_EXIT, gateUnreachableOf } from "../../src/api/gate-unreachable.js";
import { decisionEvent } from "../../src/gate/audit.js";
import { createGate } from "../../src/gate/gate.js";
import { PolicyStore } from "../../src/gate/guard/policy-store.js";
import { ToolCallService } from "../../src/gate/tool-call.js";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { buildAgent, type AgentBuild } from "../harness/agent-build.js";
import { eventually } from "../harness/eventually.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { HARNESS_DIR } from "../harness/paths.js";

const NS = "team";
const FAULT_SERVER = join(HARNESS_DIR, "mcp-fault-server.mjs");

/** The lines the fault server logged ("<pid> <method> [<tool>]"); none when it never started. */
const requests = async (log: string): Promise<string[][]> =>
  (await readFile(log, "utf8").catch(() => ""))
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.split(" "));

describe("MCP faults (worker process, real MCP server process, real nats-server and gate)", () => {
  let nats: NatsServer;
  let trust: NatsTrust;
  let gateNc: NatsConnection | undefined;
  let service: ToolCallService | undefined;
  let agent: AgentBuild;
  let root: string;
  /** The gate's decision events, by tool call id. */
  const audited = new Map<string, Record<string, unknown>>();

  /** Runs the gate for the Agent whose MCP servers are `servers` (the real guard, no judges). */
  async function startGate(servers: McpServerSpec[]): Promise<void> {
    const spec: Pick<Agent, "spec"> = { spec: { tools: ["fs.read"], mcp_servers: servers } as Agent["spec"] };
    const store = new PolicyStore();
    // The operators' word: the fault server's tool skips the judges (none are configured here).
    store.update([
      { name: "mcp", namespace: NS, spec: { mcp_servers: [{ server: "fault", capabilities: { echo: { skip_judge: true } } }] } },
    ]);
    const gate = createGate({
      policyStore: store,
      agent: spec,
      judgeRunner: () => Promise.reject(new Error("no tool_validation judges are configured")),
      audit: { record: (r) => void audited.set(r.toolCallId, decisionEvent(r)) },
    });
    gateNc = await connect({
      servers: nats.url,
      authenticator: credsAuthenticator(new TextEncoder().encode(issueControllerCredentials(trust).creds)),
    });
    service = await ToolCallService.start(gateNc, { decide: (p, ctx) => gate.decide(p, ctx), onDecided: (p, d) => void gate.record(p, d) });
  }

  async function stopGate(): Promise<void> {
    await service?.stop(500).catch(() => undefined);
    await gateNc?.close().catch(() => undefined);
    service = undefined;
    gateNc = undefined;
  }

  /** Starts the worker runtime with the fault server in `mode` as MCP server `fault`, logging to `log`. */
  function startWorker(execution: string, servers: McpServerSpec[], script: string, iterationTimeoutSeconds: number) {
    const env = agentEnvironment({
      namespace: NS,
      execution,
      iteration: 1,
      tools: ["fs.read"],
      mcpServers: servers,
      mounts: [{ path: root, readOnly: false }],
      natsUrl: nats.url,
      natsCreds: issueWorkerCredentials(trust, NS, execution).creds,
      iterationTimeoutSeconds,
    });
    return agent.run({ ...env, GAVEL_SCRIPT: script, GAVEL_GATE_ATTEMPT_SECONDS: "0.5" }, 90_000);
  }

  beforeAll(async () => {
    agent = await buildAgent("mcp-faults");
    trust = createTrust();
    nats = await startNats({ extraConfig: serverConfig(trust).config });
    root = await realpath(await mkdtemp(join(tmpdir(), "gavel-mcp-faults-")));
  }, 180_000);

  afterAll(async () => {
    await stopGate();
    await nats?.stop();
    await agent?.remove();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("the MCP server killed mid-call: that call and a later one end with an error naming server and tool; the run finishes", async () => {
    const log = join(root, "killed.log");
    // 60 s per call: the kill, not the call's deadline, is what ends the call.
    const servers: McpServerSpec[] = [{ name: "fault", command: ["node", FAULT_SERVER, "hang", log], timeout_seconds: 60 }];
    await startGate(servers);
    try {
      const script = [
        "- tool_calls: [{tool: fault.echo, args: {text: first}}]",
        "- tool_calls: [{tool: fault.echo, args: {text: second}}]",
        "- final: 'first={{result 1}} second={{result 2}}'",
      ].join("\n");
      const started = Date.now();
      const done = startWorker("killed", servers, script, 120);
      // The call reached the server (the gate allowed it): kill the server while it holds the call.
      const call = await eventually(async () => (await requests(log)).find((r) => r[1] === "tools/call"), {
        timeoutMs: 60_000,
        what: "the call at the MCP server",
      });
      process.kill(Number(call[0]), "SIGKILL");
      const r = await done;
      const took = (Date.now() - started) / 1000;
      expect(r.code, r.stderr).toBe(0);
      const [first, second] = r.stdout
        .trim()
        .replace(/^first=/, "")
        .split(" second=");
      expect(first).toMatch(/^Error: MCP tool fault\.echo: /);
      expect(second).toMatch(/^Error: MCP tool fault\.echo: /);
      console.log(`killed mid-call: the worker finished in ${took.toFixed(1)} s (call deadline 60 s); the model got: ${r.stdout.trim()}`);
      // Only the first call reached the server; the second was decided, then refused by the client (the server is gone).
      expect((await requests(log)).filter((q) => q[1] === "tools/call").map((q) => q[2])).toEqual(["echo"]);
      const decisions = [...audited.values()].filter((e) => e.tool === "fault.echo");
      expect(decisions.map((e) => [e.step, e.allowed, (e.mcp as { server?: string } | undefined)?.server])).toEqual([
        [1, true, "fault"],
        [2, true, "fault"],
      ]);
      // The worker's log names server and tool for each failed call.
      const errors = r.stderr
        .split("\n")
        .filter((l) => l.includes('"event":"tool_error"'))
        .map((l) => JSON.parse(l) as { tool: string; error: string });
      expect(errors.map((e) => e.tool)).toEqual(["fault.echo", "fault.echo"]);
    } finally {
      await stopGate();
    }
  });

  it("the gate not running: no call reaches the MCP server; the worker stops at its deadline with exit 75", async () => {
    const log = join(root, "nogate.log");
    await writeFile(log, "");
    const servers: McpServerSpec[] = [{ name: "fault", command: ["node", FAULT_SERVER, "ok", log] }];
    // NATS is up; no gate answers proposals.
    const script = "- tool_calls: [{tool: fault.echo, args: {text: hello}}]\n- final: done";
    const r = await startWorker("nogate", servers, script, 8);
    expect(r.code, r.stderr).toBe(GATE_UNREACHABLE_EXIT);
    const u = gateUnreachableOf(r.code, r.stderr);
    expect(u?.detail, r.stderr).toMatch(/fault\.echo/);
    // The server ran (initialize, tools/list) and got no call.
    const got = (await requests(log)).map((q) => q[1]);
    expect(got).toContain("initialize");
    expect(got).toContain("tools/list");
    expect(got).not.toContain("tools/call");
  });
});
