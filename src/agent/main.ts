// Entry point of the worker runtime inside a worker container: reads its configuration
// from the environment, connects to the gate over NATS with its own credentials, runs the
// model loop, prints the final answer on stdout. As a judge (GAVEL_ROLE=judge) it reads its
// payload instead and runs without the gate (judge-mode.ts); as the in-pod MCP endpoint
// (GAVEL_ROLE=endpoint) it serves tools to an agent gavel did not write (endpoint-mode.ts). Exit 0 on an answer, 1 on an
// unrecoverable error, 2 on bad configuration or an unreadable payload, 75 when the gate could
// not be reached before the iteration's deadline (gate-connection.ts, src/api/gate-unreachable.ts).
import { readFile } from "node:fs/promises";
import { AGENT_ENV } from "../api/agent-env.js";
import { GATE_UNREACHABLE_EXIT, gateUnreachableFields, type GateUnreachable } from "../api/gate-unreachable.js";
import { ToolCallError } from "../transport/tool-call-client.js";
import { commandEnvironment, ConfigError, readAgentConfig, type AgentConfig } from "./config.js";
import { Confinement } from "./confinement.js";
import { runEndpoint } from "./endpoint-mode.js";
import { GateUnreachableError } from "./gate-connection.js";
import { shownUrl } from "./gate-dial.js";
import { readJudgeInput } from "./judge-input.js";
import { JUDGE_SYSTEM_PROMPT, ownToolsGate } from "./judge-mode.js";
import type { ChatModel } from "./model.js";
import { OpenAiModel } from "./openai-model.js";
import { parseScript, ScriptedModel } from "./scripted-model.js";
import { connectWorker, type WorkerConnections } from "./worker-connections.js";
import { runWorker, type WorkerTask } from "./worker-loop.js";

function log(event: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), component: "gavel-agent", ...event })}\n`);
}

/** The endpoint role runs no model: the agent beside it has its own. */
const ownModelOnly: ChatModel = {
  next: () => Promise.reject(new Error("the MCP endpoint runs no model")),
};

async function buildModel(c: AgentConfig["model"]): Promise<ChatModel> {
  if (c.kind === "none") throw new ConfigError(`${AGENT_ENV.model}: a worker needs a model`);
  if (c.kind === "openai")
    return new OpenAiModel({ baseUrl: c.baseUrl, model: c.model, ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}) });
  const source = c.scriptFile ?? "GAVEL_SCRIPT";
  const text =
    c.script ??
    (await readFile(c.scriptFile as string, "utf8").catch((err: Error) => {
      throw new ConfigError(`GAVEL_SCRIPT_FILE ${c.scriptFile}: ${err.message}`);
    }));
  return new ScriptedModel(parseScript(text, source));
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

/** Runs the worker with the given environment; returns the process exit code. */
export async function main(env: Record<string, string | undefined>): Promise<number> {
  const startedAt = Date.now();
  let config: AgentConfig;
  let model: ChatModel;
  let confinement: Confinement;
  try {
    config = readAgentConfig(env);
    confinement = await Confinement.of(config.mounts);
    model = config.role === "endpoint" ? ownModelOnly : await buildModel(config.model);
  } catch (err) {
    log({ event: "config_error", error: (err as Error).message });
    return 2;
  }
  if (config.role === "endpoint") return runEndpoint(config, confinement, env, log);
  let task: WorkerTask = {
    instruction: config.task,
    ...(config.input !== undefined ? { input: config.input } : {}),
    ...(config.feedback !== undefined ? { feedback: config.feedback } : {}),
  };
  if (config.role === "judge") {
    try {
      task = { instruction: config.task, input: (await readJudgeInput(process.stdin, env)) as WorkerTask["input"] };
    } catch (err) {
      log({ event: "input_error", error: (err as Error).message });
      return 2;
    }
  }
  const parts: WorkerConnections = {};
  try {
    if (config.role === "worker") await connectWorker(parts, config, env, startedAt, confinement, log);
    const { gate = ownToolsGate, toolCode, mcp } = parts;
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
    await parts.mcp?.close();
    await parts.nc?.close().catch(() => undefined);
  }
}

process.exitCode = await main(process.env);
// The endpoint's gate dial may still be retrying when it is stopped: it must not hold the process.
if (process.env[AGENT_ENV.role] === "endpoint") process.exit();
