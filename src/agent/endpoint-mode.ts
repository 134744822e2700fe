// The worker runtime as the in-pod MCP endpoint (GAVEL_ROLE=endpoint, ADR 0061): beside an agent
// gavel did not write, it serves the Agent's built-in tools (spec.tools) and its MCP servers'
// tools on 127.0.0.1 (src/mcp/mcp-endpoint.ts), proposing every call to the gate with the
// worker's own NATS credentials and identity, until it is told to stop (SIGTERM, when the
// agent's container has ended).
import { writeFile } from "node:fs/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import { messageOf } from "../errors.js";
import { ToolCodeHasher } from "../gate/tool-code.js";
import { startMcpEndpoint, type BuiltinToolRunner } from "../mcp/mcp-endpoint.js";
import { McpToolbox } from "../mcp/mcp-toolbox.js";
import { ToolCallClient } from "../transport/tool-call-client.js";
import { BUILTIN_TOOLS, builtinToolFiles, runBuiltin, toolEntry } from "./builtin-tools.js";
import { commandEnvironment, type AgentConfig } from "./config.js";
import type { Confinement } from "./confinement.js";
import { gateBudgetEnd } from "./gate-connection.js";
import { connectGate } from "./gate-dial.js";
import { offeredTools } from "./worker-loop.js";

type Log = (event: Record<string, unknown>) => void;

/** The built-ins of spec.tools, run here as a worker runs them (confined to the mounts, the entry's allowlist). */
function builtinRunner(config: AgentConfig, confinement: Confinement, env: NodeJS.ProcessEnv): BuiltinToolRunner {
  const { offered } = offeredTools(config.tools);
  // The sidecar runs gavel's own tool code: hashed as a worker hashes it, so tool_registry pins it the same way.
  const code = new ToolCodeHasher(builtinToolFiles());
  return {
    tools: offered,
    async hash(name) {
      await code.refresh([name]);
      return code.hashes().get(name);
    },
    run(name, args) {
      const entry = toolEntry(config.tools, name);
      // The gate allowed only a tool in the capability scope; one outside spec.tools never runs here either.
      if (entry === undefined) return Promise.reject(new Error(`tool ${name} is not in spec.tools`));
      return runBuiltin(name, args, { entry, confinement, limits: config.limits, env });
    },
  };
}

/**
 * The gate, dialled in the background: the endpoint serves at once (the agent need not wait for
 * NATS), and a call made before the gate answers waits for it; when it cannot be reached by the
 * deadline every call fails closed (src/mcp/mcp-endpoint.ts returns an isError result).
 */
function lazyGate(
  config: AgentConfig,
  startedAt: number,
  log: Log,
): { propose(p: ToolCallProposal): Promise<ToolCallDecision>; close(): Promise<void> } {
  const deadlineMs = gateBudgetEnd(startedAt, config.iterationTimeoutMs, config.gate.totalTimeoutMs, config.deadlineMs);
  const bounded = config.iterationTimeoutMs !== undefined || config.deadlineMs !== undefined;
  const connected: Promise<NatsConnection> = connectGate(config, deadlineMs, log);
  const client = connected.then((nc) => new ToolCallClient(nc, { ...config.gate, ...(bounded ? { deadlineMs } : {}) }));
  // Seen by the calls that wait on it; logged once here so a failure is visible without a call.
  client.catch((err: unknown) => log({ event: "gate_unreachable", error: messageOf(err) }));
  return {
    propose: async (p) => (await client).propose(p),
    close: async () => {
      // A dial still retrying is not waited for (the process exits after this).
      const nc = await Promise.race([
        connected.catch(() => undefined),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 500).unref()),
      ]);
      await nc?.close().catch(() => undefined);
    },
  };
}

/** Runs the endpoint until SIGTERM or SIGINT; returns the exit code (0 when stopped, 1 when it could not start). */
export async function runEndpoint(
  config: AgentConfig,
  confinement: Confinement,
  env: Record<string, string | undefined>,
  log: Log,
): Promise<number> {
  const startedAt = Date.now();
  const endpointConfig = config.endpoint;
  if (endpointConfig === undefined) throw new Error("runEndpoint needs the endpoint role's configuration");
  const commandEnv = commandEnvironment(env);
  const gate = lazyGate(config, startedAt, log);
  let mcp: McpToolbox | undefined;
  try {
    if (config.mcpServers.length > 0) {
      const serverEnv = Object.fromEntries(Object.entries(commandEnv).filter((e): e is [string, string] => e[1] !== undefined));
      mcp = await McpToolbox.start(config.mcpServers, {
        env: serverEnv,
        cwd: confinement.home,
        outputCapBytes: config.limits.outputCapBytes,
        reserved: Object.keys(BUILTIN_TOOLS),
        log,
      });
    }
    const stopped = new Promise<void>((resolve) => {
      process.once("SIGTERM", resolve);
      process.once("SIGINT", resolve);
    });
    const endpoint = await startMcpEndpoint({
      identity: { namespace: config.namespace, execution: config.execution, iteration: config.iteration },
      gate,
      builtins: builtinRunner(config, confinement, commandEnv),
      ...(mcp !== undefined ? { mcp } : {}),
      port: endpointConfig.port,
      log,
    });
    if (endpointConfig.readyFile !== undefined) await writeFile(endpointConfig.readyFile, `${endpoint.url}\n`);
    await stopped;
    log({ event: "endpoint_stopping" });
    await endpoint.close();
    return 0;
  } catch (err) {
    log({ event: "failed", role: "endpoint", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return 1;
  } finally {
    await mcp?.close();
    await gate.close();
  }
}
