// Entry point of the worker runtime inside a worker container: reads its configuration
// from the environment, connects to the gate over NATS with its own credentials, runs the
// model loop, prints the final answer on stdout. As a judge (GAVEL_ROLE=judge) it reads its
// payload instead and runs without the gate (judge-mode.ts). Exit 0 on an answer, 1 on an
// unrecoverable error, 2 on bad configuration or an unreadable payload, 75 when the gate could
// not be reached before the iteration's deadline (gate-connection.ts, src/api/gate-unreachable.ts).
import { readFile } from "node:fs/promises";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { GATE_UNREACHABLE_EXIT, gateUnreachableFields, type GateUnreachable } from "../api/gate-unreachable.js";
import { ToolCodeHasher } from "../gate/tool-code.js";
import { startRelay, unixSocketPath } from "../transport/socket-relay.js";
import { inboxPrefix } from "../transport/subjects.js";
import { ToolCallClient, ToolCallError } from "../transport/tool-call-client.js";
import { McpToolbox } from "../mcp/mcp-toolbox.js";
import { BUILTIN_TOOLS, builtinToolFiles } from "./builtin-tools.js";
import { commandEnvironment, ConfigError, readAgentConfig, type AgentConfig } from "./config.js";
import { Confinement } from "./confinement.js";
import { connectWithBackoff, gateBudgetEnd, GateUnreachableError, logConnectionChanges } from "./gate-connection.js";
import { readJudgeInput } from "./judge-input.js";
import { JUDGE_SYSTEM_PROMPT, ownToolsGate } from "./judge-mode.js";
import type { ChatModel } from "./model.js";
import { OpenAiModel } from "./openai-model.js";
import { parseScript, ScriptedModel } from "./scripted-model.js";
import { runWorker, type GateClient, type WorkerTask } from "./worker-loop.js";

function log(event: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), component: "gavel-agent", ...event })}\n`);
}

async function buildModel(c: AgentConfig["model"]): Promise<ChatModel> {
  if (c.kind === "openai") return new OpenAiModel({ baseUrl: c.baseUrl, model: c.model, ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}) });
  const source = c.scriptFile ?? "GAVEL_SCRIPT";
  const text = c.script ?? (await readFile(c.scriptFile as string, "utf8").catch((err: Error) => {
    throw new ConfigError(`GAVEL_SCRIPT_FILE ${c.scriptFile}: ${err.message}`);
  }));
  return new ScriptedModel(parseScript(text, source));
}

/** The server's URL without any user:password in it, for logs and outcomes. */
function shownUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//");
}

/** Connects to the gate's NATS, retrying a refused connection until `deadlineMs` (GateUnreachableError then). */
async function connectGate(c: AgentConfig, deadlineMs: number): Promise<NatsConnection> {
  const creds = c.nats.creds ?? (c.nats.credsFile !== undefined ? await readFile(c.nats.credsFile, "utf8") : undefined);
  const servers = await natsServers(c.nats.url);
  const url = shownUrl(c.nats.url);
  const nc = await connectWithBackoff(
    (timeout) =>
      connect({
        servers,
        name: `gavel-agent ${c.namespace}/${c.execution}`,
        // The worker may only subscribe below its own inbox prefix.
        inboxPrefix: inboxPrefix(c.namespace, c.execution),
        timeout,
        // A NATS restart (its pod rescheduled) can take longer than the client's default ten
        // reconnect attempts: keep trying; the gate client's deadline bounds the wait.
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1000,
        ...(creds !== undefined ? { authenticator: credsAuthenticator(new TextEncoder().encode(creds)) } : {}),
      }),
    { url, deadlineMs, log },
  );
  logConnectionChanges(nc, url, log);
  return nc;
}

/** Why a worker's run ended waiting on the gate, when it did (exit 75); a refusal of its own credentials is not that. */
function unreachableOf(err: unknown): GateUnreachable | undefined {
  if (err instanceof GateUnreachableError) return err.unreachable;
  // A call the worker had no time left to wait for (a slow model spent the budget) did not find the gate unreachable.
  if (err instanceof ToolCallError && err.code === "deadline_exceeded" && err.serverRefused === undefined && (err.waitedMs ?? 0) >= 1000) {
    return { seconds: Math.round((err.waitedMs ?? 0) / 1000), detail: err.message };
  }
  return undefined;
}

/**
 * The server to dial. A `unix://PATH` URL (local mode, a worker without network) is the gate's
 * socket mounted into the container: the NATS client speaks TCP only, so a loopback port is
 * relayed to it for the life of the process.
 */
async function natsServers(url: string): Promise<string> {
  const path = unixSocketPath(url);
  if (path === undefined) return url;
  const relay = await startRelay({ host: "127.0.0.1", port: 0 }, { path }, { unref: true });
  const at = relay.endpoint as { host: string; port: number };
  return `nats://${at.host}:${at.port}`;
}

/** Runs the worker with the given environment; returns the process exit code. */
export async function main(env: Record<string, string | undefined>): Promise<number> {
  const startedAt = Date.now();
  let config: AgentConfig;
  let model: ChatModel;
  let confinement: Confinement;
  try {
    config = readAgentConfig(env);
    model = await buildModel(config.model);
    confinement = await Confinement.of(config.mounts);
  } catch (err) {
    log({ event: "config_error", error: (err as Error).message });
    return 2;
  }
  let task: WorkerTask = { instruction: config.task, ...(config.input !== undefined ? { input: config.input } : {}), ...(config.feedback !== undefined ? { feedback: config.feedback } : {}) };
  if (config.role === "judge") {
    try {
      task = { instruction: config.task, input: (await readJudgeInput(process.stdin, env)) as WorkerTask["input"] };
    } catch (err) {
      log({ event: "input_error", error: (err as Error).message });
      return 2;
    }
  }
  let nc: NatsConnection | undefined;
  let mcp: McpToolbox | undefined;
  try {
    let gate: GateClient = ownToolsGate;
    let toolCode: ToolCodeHasher | undefined;
    if (config.role === "worker") {
      // Every wait for the gate (the first connect, each proposal) ends before the iteration's.
      const deadlineMs = gateBudgetEnd(startedAt, config.iterationTimeoutMs, config.gate.totalTimeoutMs, config.deadlineMs);
      const bounded = config.iterationTimeoutMs !== undefined || config.deadlineMs !== undefined;
      nc = await connectGate(config, deadlineMs);
      gate = new ToolCallClient(nc, { ...config.gate, ...(bounded ? { deadlineMs } : {}) });
      toolCode = new ToolCodeHasher(builtinToolFiles());
      await toolCode.refresh();
      // The Agent's MCP servers (ADR 0051): a server that does not start fails the run, naming it.
      if (config.mcpServers.length > 0) {
        const serverEnv = Object.fromEntries(Object.entries(commandEnvironment(env)).filter((e): e is [string, string] => e[1] !== undefined));
        mcp = await McpToolbox.start(config.mcpServers, { env: serverEnv, tokens: config.mcpTokens, cwd: confinement.home, outputCapBytes: config.limits.outputCapBytes, reserved: Object.keys(BUILTIN_TOOLS), log });
      }
    }
    log({
      event: "start",
      role: config.role,
      namespace: config.namespace,
      execution: config.execution,
      iteration: config.iteration,
      model: config.model.kind,
      ...(toolCode !== undefined ? { toolHashes: Object.fromEntries(toolCode.hashes()) } : {}),
    });
    const outcome = await runWorker({
      identity: { namespace: config.namespace, execution: config.execution, iteration: config.iteration },
      task,
      tools: config.tools,
      confinement,
      model,
      gate,
      limits: config.limits,
      commandEnv: commandEnvironment(env),
      maxTurns: config.maxTurns,
      ...(config.role === "judge" ? { systemPrompt: JUDGE_SYSTEM_PROMPT } : {}),
      ...(toolCode !== undefined ? { toolCode } : {}),
      ...(mcp !== undefined ? { mcp } : {}),
      log,
    });
    process.stdout.write(outcome.answer.endsWith("\n") ? outcome.answer : `${outcome.answer}\n`);
    log({ event: "done", turns: outcome.turns, calls: outcome.calls.length, denied: outcome.calls.filter((c) => !c.allowed).length });
    return 0;
  } catch (err) {
    const unreachable = unreachableOf(err);
    if (unreachable !== undefined) {
      log({ ...gateUnreachableFields(unreachable), nats: shownUrl(config.nats.url), exitCode: GATE_UNREACHABLE_EXIT });
      return GATE_UNREACHABLE_EXIT;
    }
    log({ event: "failed", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return 1;
  } finally {
    await mcp?.close();
    await nc?.close().catch(() => undefined);
  }
}

process.exitCode = await main(process.env);
