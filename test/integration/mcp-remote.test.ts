// An Agent's remote MCP server (`url`, a bearer token from a Secret key), with every part
// real: the worker runtime as a process, a Streamable HTTP MCP server on loopback (the
// official SDK's server, test/harness/mcp-http-server.mjs) that refuses requests without the
// token, a real nats-server in JWT mode and the real gate (createGate + ToolCallService).
// The token reaches the worker as the pod's Secret-backed variable would (GAVEL_MCP_TOKEN_0):
// an allowed call reaches the server and its result the model, a denied one never reaches it,
// a wrong token fails the start naming the server, and the token is in no output.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Agent, McpServerSpec } from "../../src/api/types.js";
import { agentEnvironment, mcpTokenEnv } from "../../src/api/agent-env.js";
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
import { startNats, type NatsServer } from "../harness/nats.js";
import { HARNESS_DIR } from "../harness/paths.js";

const NS = "team";
const TOKEN = "tok-9f3c1d7e5b";

describe("a remote MCP server by url with a bearer token (worker process, SDK Streamable HTTP server on loopback, real nats-server and gate)", () => {
  let nats: NatsServer;
  let trust: NatsTrust;
  let gateNc: NatsConnection;
  let service: ToolCallService;
  let agent: AgentBuild;
  let root: string;
  let http: ChildProcess;
  let url: string;
  let log: string;
  const audited = new Map<string, Record<string, unknown>>();
  const servers = (): McpServerSpec[] => [
    { name: "remote", url, bearer_token_secret: { name: "remote-mcp", key: "token" }, timeout_seconds: 20 },
  ];

  /** The worker runtime with the remote server, its token as the pod would hold it. */
  function runWorker(execution: string, script: string, token: string) {
    const env = agentEnvironment({
      namespace: NS,
      execution,
      iteration: 1,
      tools: ["fs.read"],
      mcpServers: servers(),
      mounts: [{ path: root, readOnly: false }],
      natsUrl: nats.url,
      natsCreds: issueWorkerCredentials(trust, NS, execution).creds,
      iterationTimeoutSeconds: 60,
    });
    return agent.run({ ...env, [mcpTokenEnv(0)]: token, GAVEL_SCRIPT: script }, 90_000);
  }

  const requests = async () => (await readFile(log, "utf8").catch(() => "")).split("\n").filter((l) => l !== "");

  beforeAll(async () => {
    agent = await buildAgent("mcp-remote");
    trust = createTrust();
    nats = await startNats({ extraConfig: serverConfig(trust).config });
    root = await realpath(await mkdtemp(join(tmpdir(), "gavel-mcp-remote-")));
    log = join(root, "requests.log");
    http = spawn("node", [join(HARNESS_DIR, "mcp-http-server.mjs"), "127.0.0.1", "0"], {
      env: { ...process.env, MCP_TOKEN: TOKEN, MCP_LOG: log },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const [line] = (await once(http.stdout ?? http, "data")) as [Buffer];
    url = `http://127.0.0.1:${/listening (\d+)/.exec(line.toString())?.[1] ?? "?"}/mcp`;
    // The real gate for an Agent with that server; the operators' policy lets remote.echo skip the
    // judges (none are configured) and denies any argument naming a forbidden word.
    const store = new PolicyStore();
    store.update([
      {
        name: "mcp",
        namespace: NS,
        spec: {
          mcp_servers: [{ server: "remote", capabilities: { echo: { skip_judge: true } } }],
          adaptive_rules: [
            { name: "no-forbidden", match_field: "args", pattern: "forbidden", action: "deny", reason: "no forbidden words" },
          ],
        },
      },
    ]);
    const gate = createGate({
      policyStore: store,
      agent: { spec: { tools: ["fs.read"], mcp_servers: servers() } as Agent["spec"] },
      judgeRunner: () => Promise.reject(new Error("no tool_validation judges are configured")),
      audit: { record: (r) => void audited.set(r.toolCallId, decisionEvent(r)) },
    });
    gateNc = await connect({
      servers: nats.url,
      authenticator: credsAuthenticator(new TextEncoder().encode(issueControllerCredentials(trust).creds)),
    });
    service = await ToolCallService.start(gateNc, { decide: (p, ctx) => gate.decide(p, ctx), onDecided: (p, d) => void gate.record(p, d) });
  }, 180_000);

  afterAll(async () => {
    await service?.stop(500).catch(() => undefined);
    await gateNc?.close().catch(() => undefined);
    http?.kill();
    await nats?.stop();
    await agent?.remove();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("an allowed call reaches the server with the token and its result the model; a denied call never reaches it; the token is in no output", async () => {
    const script = [
      "- tool_calls: [{tool: remote.echo, args: {text: hello}}]",
      "- tool_calls: [{tool: remote.echo, args: {text: a forbidden word}}]",
      "- final: 'first={{result 1}} second={{result 2}}'",
    ].join("\n");
    const r = await runWorker("remote-ok", script, TOKEN);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("first=echo: hello second=");
    expect(r.stdout).toMatch(/second=.*adaptive_rule|second=.*no forbidden words/);
    const got = await requests();
    expect(got).toContain("initialize");
    expect(got).toContain("tools/list");
    // Only the allowed call reached the server.
    expect(got.filter((l) => l.startsWith("tools/call"))).toEqual(["tools/call echo"]);
    expect(got.filter((l) => l.startsWith("refused"))).toEqual([]);
    const decisions = [...audited.values()].filter((e) => e.tool === "remote.echo");
    expect(decisions.map((e) => [e.step, e.allowed, (e.mcp as { server?: string } | undefined)?.server])).toEqual([
      [1, true, "remote"],
      [2, false, "remote"],
    ]);
    expect(`${r.stdout}${r.stderr}${JSON.stringify(decisions)}`).not.toContain(TOKEN);
  });

  it("a wrong token: the server refuses, the worker fails its start naming the server, and prints no token", async () => {
    const before = (await requests()).length;
    const wrong = "not-the-token-4a1b";
    const r = await runWorker("remote-wrong", "- tool_calls: [{tool: remote.echo, args: {text: hi}}]\n- final: done", wrong);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/MCP server remote \(http:\/\/127\.0\.0\.1:\d+\/mcp\) did not start/);
    expect((await requests()).slice(before).every((l) => l.startsWith("refused"))).toBe(true);
    expect(`${r.stdout}${r.stderr}`).not.toContain(wrong);
  });
});
