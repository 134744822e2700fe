// The worker runtime's configuration, read from its environment at the edge (main.ts) and
// nowhere else. Drivers (docker, kubernetes) build that environment with agentEnvironment()
// (src/api/agent-env.ts, the contract both sides import).
import type { JsonValue, McpServerSpec, ToolEntry } from "../api/types.js";
import { MCP_SERVER_NAME_PATTERN } from "../api/mcp-schema.js";
import { mcpTokenEnv } from "../api/agent-env.js";
import type { Mount } from "./confinement.js";
import { AGENT_ENV } from "../api/agent-env.js";
import { parseTraceparent, TRACEPARENT_ENV } from "../telemetry/trace-context.js";

/** The worker runtime's whole configuration. */
export interface AgentConfig {
  /** "endpoint": the in-pod MCP endpoint beside a worker gavel did not write (endpoint-mode.ts). */
  role: "worker" | "judge" | "endpoint";
  namespace: string;
  execution: string;
  iteration: number;
  task: string;
  input?: JsonValue;
  feedback?: string;
  tools: ToolEntry[];
  /** The Agent's MCP servers (spec.mcp_servers, ADR 0051); empty when none. */
  mcpServers: McpServerSpec[];
  /** The bearer tokens of url servers, by server name (from the pod's Secret-backed variables). */
  mcpTokens: Record<string, string>;
  mounts: Mount[];
  nats: { url: string; creds?: string; credsFile?: string };
  model:
    | { kind: "scripted"; script?: string; scriptFile?: string }
    | { kind: "openai"; baseUrl: string; model: string; apiKey?: string }
    /** The endpoint runs no model: the agent beside it has its own. */
    | { kind: "none" };
  maxTurns: number;
  /** traceParent: the iteration's span (env TRACEPARENT), sent with every proposal. */
  gate: { totalTimeoutMs: number; attemptTimeoutMs: number; traceParent?: string };
  /** How long this run may take (GAVEL_ITERATION_TIMEOUT_SECONDS) and when it ends by the driver's clock (GAVEL_DEADLINE, epoch ms): they bound every wait for the gate. */
  iterationTimeoutMs?: number;
  deadlineMs?: number;
  limits: { commandTimeoutSeconds: number; outputCapBytes: number };
  /** The in-pod MCP endpoint's port on 127.0.0.1 and the file it creates once it serves (role endpoint). */
  endpoint?: { port: number; readyFile?: string };
}

/** A configuration problem; the message names the variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

type Env = Record<string, string | undefined>;

function required(env: Env, name: string): string {
  const v = env[name];
  if (v === undefined || v === "") throw new ConfigError(`${name} is not set`);
  return v;
}

function json(env: Env, name: string): unknown {
  const v = env[name];
  if (v === undefined || v === "") return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch (err) {
    throw new ConfigError(`${name} is not valid JSON: ${(err as Error).message}`);
  }
}

function positive(env: Env, name: string, dflt: number, integer = false): number {
  const v = env[name];
  if (v === undefined || v === "") return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new ConfigError(`${name} must be a positive ${integer ? "integer" : "number"}, got "${v}"`);
  }
  return n;
}

const E = AGENT_ENV;

/** GAVEL_ROLE: worker (default), judge or endpoint. */
function roleOf(env: Env): AgentConfig["role"] {
  const role = env[E.role] === undefined || env[E.role] === "" ? "worker" : env[E.role];
  if (role !== "worker" && role !== "judge" && role !== "endpoint")
    throw new ConfigError(`${E.role} must be "worker", "judge" or "endpoint", got "${role}"`);
  return role;
}

/** GAVEL_ITERATION: a non-negative integer, default 1. */
function iterationOf(env: Env): number {
  const iteration = env[E.iteration] === undefined || env[E.iteration] === "" ? 1 : Number(env[E.iteration]);
  if (!Number.isInteger(iteration) || iteration < 0) throw new ConfigError(`${E.iteration} must be a non-negative integer`);
  return iteration;
}

/** GAVEL_TOOLS: a JSON list of tool names or {name, ...} entries (an allowlist a list of strings). */
function toolsOf(env: Env): ToolEntry[] {
  const tools = json(env, E.tools) ?? [];
  if (
    !Array.isArray(tools) ||
    !tools.every(
      (t) => typeof t === "string" || (typeof t === "object" && t !== null && typeof (t as { name?: unknown }).name === "string"),
    )
  ) {
    throw new ConfigError(`${E.tools} must be a JSON list of tool names or {name, ...} entries`);
  }
  for (const t of tools as ToolEntry[]) {
    if (
      typeof t !== "string" &&
      t.allowlist !== undefined &&
      (!Array.isArray(t.allowlist) || !t.allowlist.every((a) => typeof a === "string"))
    ) {
      throw new ConfigError(`${E.tools}: allowlist of "${t.name}" must be a list of strings`);
    }
  }
  return tools as ToolEntry[];
}

/** GAVEL_MCP_SERVERS: a JSON list of {name, command | url | image (+ port, path?), bearer_token_secret?, tools?, timeout_seconds?, startup_timeout_seconds?}; errors name the entry and field. */
function mcpServersOf(env: Env): McpServerSpec[] {
  const raw = json(env, E.mcpServers) ?? [];
  if (!Array.isArray(raw)) throw new ConfigError(`${E.mcpServers} must be a JSON list of MCP servers`);
  const names = new Set<string>();
  return raw.map((s: unknown, i) => {
    const at = `${E.mcpServers}[${i}]`;
    if (typeof s !== "object" || s === null || Array.isArray(s)) throw new ConfigError(`${at} must be an object`);
    const o = s as Record<string, unknown>;
    const strings = (v: unknown) => Array.isArray(v) && v.every((w) => typeof w === "string" && w !== "");
    if (typeof o.name !== "string" || !new RegExp(MCP_SERVER_NAME_PATTERN).test(o.name))
      throw new ConfigError(`${at}.name must match ${MCP_SERVER_NAME_PATTERN}`);
    if (names.has(o.name)) throw new ConfigError(`${at}.name: MCP server ${o.name} is declared twice`);
    names.add(o.name);
    checkServerForm(o, at);
    if (o.bearer_token_secret !== undefined && o.url === undefined)
      throw new ConfigError(`${at}.bearer_token_secret (server ${o.name}) is for a url server only`);
    if (o.tools !== undefined && !strings(o.tools)) throw new ConfigError(`${at}.tools (server ${o.name}) must be a list of tool names`);
    for (const k of ["timeout_seconds", "startup_timeout_seconds"] as const) {
      if (o[k] !== undefined && !(Number.isInteger(o[k]) && (o[k] as number) > 0))
        throw new ConfigError(`${at}.${k} (server ${o.name}) must be a positive integer`);
    }
    return o as unknown as McpServerSpec;
  });
}

/** The form of one GAVEL_MCP_SERVERS entry: exactly one of command, url and image (with its port); errors name the entry and field. */
function checkServerForm(o: Record<string, unknown>, at: string): void {
  const strings = (v: unknown) => Array.isArray(v) && v.every((w) => typeof w === "string" && w !== "");
  const name = String(o.name);
  if ([o.command, o.url, o.image].filter((f) => f !== undefined).length !== 1)
    throw new ConfigError(
      `${at} (server ${name}) must have exactly one of command (a stdio server), url (a remote server) and image (a server container in the pod)`,
    );
  if (
    o.image !== undefined &&
    (typeof o.image !== "string" || !(Number.isInteger(o.port) && (o.port as number) > 0 && (o.port as number) < 65536))
  )
    throw new ConfigError(`${at}.port (server ${name}) must be the port the image server serves on`);
  if (o.path !== undefined && (typeof o.path !== "string" || !o.path.startsWith("/")))
    throw new ConfigError(`${at}.path (server ${name}) must be a path starting with /`);
  if (o.command !== undefined && (!strings(o.command) || (o.command as string[]).length === 0))
    throw new ConfigError(`${at}.command (server ${name}) must be a non-empty list of strings`);
  if (o.url !== undefined && (typeof o.url !== "string" || !/^https?:\/\/[^\s]+$/.test(o.url)))
    throw new ConfigError(`${at}.url (server ${name}) must be an http:// or https:// URL`);
}

/**
 * The bearer token of each url server that declares one, by server name: the pod's
 * GAVEL_MCP_TOKEN_<index> (a Secret key the driver put there). Never logged; the variable is
 * kept from child processes as every GAVEL_ one is (commandEnvironment).
 */
function mcpTokensOf(env: Env, servers: readonly McpServerSpec[]): Record<string, string> {
  const tokens: Record<string, string> = {};
  servers.forEach((s, i) => {
    if (s.bearer_token_secret === undefined) return;
    const name = mcpTokenEnv(i);
    const token = env[name];
    if (token === undefined || token === "")
      throw new ConfigError(
        `${E.mcpServers}[${i}].bearer_token_secret (server ${s.name}): ${name} is not set (Secret ${s.bearer_token_secret.name}, key ${s.bearer_token_secret.key})`,
      );
    tokens[s.name] = token;
  });
  return tokens;
}

/** GAVEL_MOUNTS (a JSON list of paths or {path, readOnly}), else GAVEL_WORKSPACE's writable paths. */
function mountsOf(env: Env): Mount[] {
  const workspace = env[E.workspace];
  const rawMounts = json(env, E.mounts) ?? (workspace ? workspace.split(":").filter((p) => p !== "") : []);
  if (!Array.isArray(rawMounts)) throw new ConfigError(`${E.mounts} must be a JSON list`);
  return rawMounts.map((m: unknown, i) => {
    if (typeof m === "string") return { path: m, readOnly: false };
    if (typeof m === "object" && m !== null && typeof (m as { path?: unknown }).path === "string") {
      return { path: (m as { path: string }).path, readOnly: (m as { readOnly?: unknown }).readOnly === true };
    }
    throw new ConfigError(`${E.mounts}[${i}] must be a path or {"path": ..., "readOnly": bool}`);
  });
}

/** GAVEL_MODEL: scripted (default when a script is given) or openai (then GAVEL_LLM_MODEL is required). */
function modelOf(env: Env): AgentConfig["model"] {
  const script = env[E.script];
  const scriptFile = env[E.scriptFile];
  const hasScript = (script !== undefined && script !== "") || (scriptFile !== undefined && scriptFile !== "");
  const kind = env[E.model] ?? (hasScript ? "scripted" : "openai");
  if (kind === "scripted") {
    if (!hasScript) throw new ConfigError(`${E.model}=scripted needs ${E.script} or ${E.scriptFile}`);
    return { kind, ...(script ? { script } : {}), ...(scriptFile ? { scriptFile } : {}) };
  }
  if (kind === "openai") {
    const apiKey = env[E.llmApiKey];
    return {
      kind,
      baseUrl: env[E.llmBaseUrl] || "https://api.openai.com/v1",
      model: required(env, E.llmModel),
      ...(apiKey ? { apiKey } : {}),
    };
  }
  throw new ConfigError(`${E.model} must be "scripted" or "openai", got "${kind}"`);
}

/** The gate's timeouts and the iteration's span (an invalid traceparent is ignored, as W3C trace context says: the gate's span then starts a trace). */
function gateOf(env: Env): AgentConfig["gate"] {
  const traceParent = parseTraceparent(env[TRACEPARENT_ENV]) !== undefined ? env[TRACEPARENT_ENV]?.trim() : undefined;
  return {
    totalTimeoutMs: positive(env, E.gateTimeoutSeconds, 330) * 1000,
    attemptTimeoutMs: positive(env, E.gateAttemptSeconds, 2) * 1000,
    ...(traceParent !== undefined ? { traceParent } : {}),
  };
}

/** GAVEL_DEADLINE: an RFC 3339 time, as epoch ms. */
function deadlineOf(env: Env): number | undefined {
  const v = env[E.deadline];
  if (v === undefined || v === "") return undefined;
  const ms = Date.parse(v);
  if (!/^\d{4}-\d\d-\d\dT/.test(v) || Number.isNaN(ms)) throw new ConfigError(`${E.deadline} must be an RFC 3339 time, got "${v}"`);
  return ms;
}

/** GAVEL_MCP_PORT (an integer 1..65535, required) and GAVEL_MCP_READY_FILE of the endpoint role. */
function endpointOf(env: Env): NonNullable<AgentConfig["endpoint"]> {
  const port = Number(required(env, E.mcpPort));
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new ConfigError(`${E.mcpPort} must be a port number 1..65535, got "${env[E.mcpPort]}"`);
  const readyFile = env[E.mcpReadyFile];
  return { port, ...(readyFile ? { readyFile } : {}) };
}

/** Reads and checks the configuration from an environment; throws ConfigError naming the variable. */
export function readAgentConfig(env: Env): AgentConfig {
  // Identity and the gate first: without them nothing else matters.
  const role = roleOf(env);
  const namespace = required(env, E.namespace);
  const execution = required(env, E.execution);
  // A judge never proposes its calls: its own spec.tools and read-only mounts bound it.
  const natsUrl = role === "judge" ? (env[E.natsUrl] ?? "") : required(env, E.natsUrl);
  const iteration = iterationOf(env);
  const tools = toolsOf(env);
  const mcpServers = mcpServersOf(env);
  const mounts = mountsOf(env);
  const model: AgentConfig["model"] = role === "endpoint" ? { kind: "none" } : modelOf(env);
  const creds = env[E.natsCreds];
  const credsFile = env[E.natsCredsFile];
  const feedback = env[E.feedback];
  // Local mode passes "null" for an Execution without input.
  const input = (json(env, E.input) ?? undefined) as JsonValue | undefined;
  const iterationTimeout = env[E.iterationTimeoutSeconds] ? positive(env, E.iterationTimeoutSeconds, 1) : undefined;
  const deadline = deadlineOf(env);
  return {
    role,
    namespace,
    execution,
    iteration,
    task: env[E.task] ?? "",
    ...(input !== undefined ? { input } : {}),
    ...(feedback ? { feedback } : {}),
    tools,
    mcpServers,
    mcpTokens: mcpTokensOf(env, mcpServers),
    mounts,
    nats: { url: natsUrl, ...(creds ? { creds } : {}), ...(credsFile ? { credsFile } : {}) },
    model,
    maxTurns: positive(env, E.maxTurns, 50, true),
    gate: gateOf(env),
    ...(iterationTimeout !== undefined ? { iterationTimeoutMs: iterationTimeout * 1000 } : {}),
    ...(deadline !== undefined ? { deadlineMs: deadline } : {}),
    limits: {
      commandTimeoutSeconds: positive(env, E.commandTimeoutSeconds, 60),
      outputCapBytes: positive(env, E.outputCapBytes, 64 * 1024, true),
    },
    ...(role === "endpoint" ? { endpoint: endpointOf(env) } : {}),
  };
}

/** The environment commands run with: the worker's, minus gavel's own (credentials, keys, config). */
export function commandEnvironment(env: Env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || k.startsWith("GAVEL_") || /KEY|TOKEN|SECRET|PASSWORD|CREDS/i.test(k)) continue;
    out[k] = v;
  }
  return out;
}
