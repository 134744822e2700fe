// What a worker (not a judge) connects to before its loop: the gate over NATS, each wait
// bounded by the iteration's deadline; the hasher of its built-in tools' code (check 2); and the
// Agent's MCP servers (ADR 0051). Each part is kept as soon as it exists, so the caller closes
// what was opened even when a later part fails.
import type { NatsConnection } from "@nats-io/transport-node";
import { ToolCodeHasher } from "../gate/tool-code.js";
import { McpToolbox } from "../mcp/mcp-toolbox.js";
import { ToolCallClient } from "../transport/tool-call-client.js";
import { BUILTIN_TOOLS, builtinToolFiles } from "./builtin-tools.js";
import { commandEnvironment, type AgentConfig } from "./config.js";
import type { Confinement } from "./confinement.js";
import { gateBudgetEnd } from "./gate-connection.js";
import { connectGate } from "./gate-dial.js";
import type { GateClient } from "./worker-loop.js";

/** A worker's connections, filled in as they are made. */
export interface WorkerConnections {
  nc?: NatsConnection;
  gate?: GateClient;
  toolCode?: ToolCodeHasher;
  mcp?: McpToolbox;
}

/** Connects a worker to its gate, hashes its tools' code and starts its MCP servers, into `into`. */
export async function connectWorker(
  into: WorkerConnections,
  config: AgentConfig,
  env: Record<string, string | undefined>,
  startedAt: number,
  confinement: Confinement,
  log: (event: Record<string, unknown>) => void,
): Promise<void> {
  // Every wait for the gate (the first connect, each proposal) ends before the iteration's.
  const deadlineMs = gateBudgetEnd(startedAt, config.iterationTimeoutMs, config.gate.totalTimeoutMs, config.deadlineMs);
  const bounded = config.iterationTimeoutMs !== undefined || config.deadlineMs !== undefined;
  into.nc = await connectGate(config, deadlineMs, log);
  into.gate = new ToolCallClient(into.nc, { ...config.gate, ...(bounded ? { deadlineMs } : {}) });
  into.toolCode = new ToolCodeHasher(builtinToolFiles());
  await into.toolCode.refresh();
  // The Agent's MCP servers (ADR 0051): a server that does not start fails the run, naming it.
  if (config.mcpServers.length > 0) {
    const serverEnv = Object.fromEntries(Object.entries(commandEnvironment(env)).filter((e): e is [string, string] => e[1] !== undefined));
    into.mcp = await McpToolbox.start(config.mcpServers, {
      env: serverEnv,
      tokens: config.mcpTokens,
      cwd: confinement.home,
      outputCapBytes: config.limits.outputCapBytes,
      reserved: Object.keys(BUILTIN_TOOLS),
      log,
    });
  }
}
