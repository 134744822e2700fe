// The environment contract between gavel's drivers (local mode, the controller) and the
// worker runtime (src/agent): the variables a worker container is started with. The worker
// runtime reads them (src/agent/config.ts readAgentConfig); drivers build them here, so
// neither side imports the other's modules.
import type { JsonValue, McpServerSpec, ToolEntry } from "./types.js";

/** Every environment variable the worker runtime reads (src/agent/config.ts). */
export const AGENT_ENV = {
  namespace: "GAVEL_NAMESPACE",
  /** "worker" (default) or "judge": a judge runs one-shot on its payload, without the gate (src/agent/judge-mode.ts). */
  role: "GAVEL_ROLE",
  /** A judge's payload as files in a directory, read in name order (src/agent/judge-input.ts). */
  inputDir: "GAVEL_INPUT_DIR",
  execution: "GAVEL_EXECUTION",
  iteration: "GAVEL_ITERATION",
  task: "GAVEL_TASK",
  /** JSON of the Execution's spec.input. */
  input: "GAVEL_INPUT",
  feedback: "GAVEL_FEEDBACK",
  /** JSON of the Agent's spec.tools. */
  tools: "GAVEL_TOOLS",
  /** JSON of the Agent's spec.mcp_servers (ADR 0051); a url server's bearer token is in GAVEL_MCP_TOKEN_<index> (mcpTokenEnv). */
  mcpServers: "GAVEL_MCP_SERVERS",
  /** JSON list of mounts: "/workspace" or {"path": "/data", "readOnly": true}. */
  mounts: "GAVEL_MOUNTS",
  /** Colon-separated writable mount paths (what local mode sets); used when GAVEL_MOUNTS is not. */
  workspace: "GAVEL_WORKSPACE",
  natsUrl: "GAVEL_NATS_URL",
  /** The worker's NATS .creds text, or a path to it in GAVEL_NATS_CREDS_FILE. */
  natsCreds: "GAVEL_NATS_CREDS",
  natsCredsFile: "GAVEL_NATS_CREDS_FILE",
  /** "scripted" or "openai"; default scripted when a script is given, else openai. */
  model: "GAVEL_MODEL",
  script: "GAVEL_SCRIPT",
  scriptFile: "GAVEL_SCRIPT_FILE",
  llmBaseUrl: "GAVEL_LLM_BASE_URL",
  llmModel: "GAVEL_LLM_MODEL",
  llmApiKey: "GAVEL_LLM_API_KEY",
  maxTurns: "GAVEL_MAX_TURNS",
  /** Total seconds to wait for one decision (default 330) and per send (default 2). */
  gateTimeoutSeconds: "GAVEL_GATE_TIMEOUT_SECONDS",
  gateAttemptSeconds: "GAVEL_GATE_ATTEMPT_SECONDS",
  /**
   * Seconds the worker's run may take (the iteration's deadline, what the driver kills it at):
   * the worker waits for an unreachable gate until shortly before it, then exits 75
   * (src/api/gate-unreachable.ts). Unset: one call's GAVEL_GATE_TIMEOUT_SECONDS bounds the wait.
   */
  iterationTimeoutSeconds: "GAVEL_ITERATION_TIMEOUT_SECONDS",
  /**
   * When the run ends by the driver's clock (RFC 3339): when it created the workload plus the
   * timeout, never later than the kill, which counts from the pod's or container's own start.
   */
  deadline: "GAVEL_DEADLINE",
  /**
   * The in-pod MCP endpoint (ADR 0061): its port on 127.0.0.1 and the file it creates once it
   * serves (what the sidecar's startup probe waits for), in the endpoint's environment; its
   * URL in the environment of the agent beside it.
   */
  mcpPort: "GAVEL_MCP_PORT",
  mcpReadyFile: "GAVEL_MCP_READY_FILE",
  mcpUrl: "GAVEL_MCP_URL",
  commandTimeoutSeconds: "GAVEL_CMD_TIMEOUT_SECONDS",
  outputCapBytes: "GAVEL_OUTPUT_CAP_BYTES",
} as const;

/** A volume the worker may touch, at its mount path (GAVEL_MOUNTS entries). */
export interface AgentMount {
  path: string;
  readOnly: boolean;
}

/** The environment a driver gives a worker container: the inverse of readAgentConfig. */
export function agentEnvironment(c: {
  namespace: string;
  execution: string;
  iteration: number;
  task?: string;
  input?: JsonValue;
  feedback?: string;
  tools?: ToolEntry[];
  mcpServers?: McpServerSpec[];
  mounts?: AgentMount[];
  natsUrl: string;
  natsCreds?: string;
  iterationTimeoutSeconds?: number;
  deadline?: string;
}): Record<string, string> {
  return {
    [AGENT_ENV.namespace]: c.namespace,
    [AGENT_ENV.execution]: c.execution,
    [AGENT_ENV.iteration]: String(c.iteration),
    [AGENT_ENV.task]: c.task ?? "",
    ...(c.input !== undefined ? { [AGENT_ENV.input]: JSON.stringify(c.input) } : {}),
    ...(c.feedback !== undefined ? { [AGENT_ENV.feedback]: c.feedback } : {}),
    [AGENT_ENV.tools]: JSON.stringify(c.tools ?? []),
    ...(c.mcpServers !== undefined && c.mcpServers.length > 0 ? { [AGENT_ENV.mcpServers]: JSON.stringify(c.mcpServers) } : {}),
    [AGENT_ENV.mounts]: JSON.stringify(c.mounts ?? []),
    [AGENT_ENV.natsUrl]: c.natsUrl,
    ...(c.natsCreds !== undefined ? { [AGENT_ENV.natsCreds]: c.natsCreds } : {}),
    ...(c.iterationTimeoutSeconds !== undefined ? { [AGENT_ENV.iterationTimeoutSeconds]: String(c.iterationTimeoutSeconds) } : {}),
    ...(c.deadline !== undefined ? { [AGENT_ENV.deadline]: c.deadline } : {}),
  };
}

/** The variable holding the bearer token of spec.mcp_servers[index] (a url server's, from its Secret key). */
export function mcpTokenEnv(index: number): string {
  return `GAVEL_MCP_TOKEN_${index}`;
}
