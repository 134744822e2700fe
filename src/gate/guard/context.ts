// What the guard knows about the call besides the proposal: the agent's tools and
// capability scope, this iteration's tool history, the live code hashes, the policy.
import type { Agent, ToolObject } from "../../api/types.js";
import type { ViewOptions } from "./argument-views.js";
import type { CompiledPolicy } from "./policy.js";

/** The agent's declared tools by name, and the capability scope of its executions. */
export interface AgentScope {
  tools: ReadonlyMap<string, ToolObject>;
  capabilities: ReadonlySet<string>;
  /** The Agent's MCP servers (spec.mcp_servers): the tools each offers, or undefined for every tool it lists. */
  mcpServers?: ReadonlyMap<string, ReadonlySet<string> | undefined>;
}

/** The scope's entry for a tool: a spec.tools entry, or `{name}` for a `<server>.<tool>` of a declared MCP server that offers it. */
export function declaredTool(scope: AgentScope, name: string): ToolObject | undefined {
  const builtin = scope.tools.get(name);
  if (builtin !== undefined || scope.mcpServers === undefined) return builtin;
  const dot = name.indexOf(".");
  if (dot <= 0) return undefined;
  const server = scope.mcpServers.get(name.slice(0, dot));
  if (!scope.mcpServers.has(name.slice(0, dot))) return undefined;
  return server === undefined || server.has(name.slice(dot + 1)) ? { name } : undefined;
}

/** One earlier call of this iteration that the gate allowed. */
export interface HistoryEntry {
  tool: string;
  /** Its `step` in the iteration (1-based position among all proposals). */
  step: number;
}

/** Everything a check may read; built once per call by the gate or the CLI. */
export interface GuardContext {
  policy: CompiledPolicy;
  scope: AgentScope;
  history: readonly HistoryEntry[];
  /** SHA-256 (hex) of each tool's live code, as the tool-code hasher last computed it. */
  liveHashes?: ReadonlyMap<string, string>;
  views?: ViewOptions;
}

/** Home of gavel's own worker images (they run as root); an Agent with an image of its own declares its home as `HOME` in `spec.runtime.env`. */
export const DEFAULT_WORKER_HOME = "/root";

/**
 * Where `~`, `$HOME` and relative paths point for an Agent's workers: the home it declares
 * (`spec.runtime.env` HOME, a literal value) else its image's (gavel's images run as root),
 * and its first volume's mount path as the working directory (`/workspace` without volumes).
 */
export function workerViews(agent: Pick<Agent, "spec">): ViewOptions {
  const home = agent.spec.runtime?.env?.find((e) => e.name === "HOME" && typeof e.value === "string" && e.value.startsWith("/"))?.value;
  const cwd = agent.spec.volumes?.[0]?.mount_path;
  return { home: home ?? DEFAULT_WORKER_HOME, cwd: cwd !== undefined && cwd.startsWith("/") ? cwd : "/workspace" };
}

/** The scope of an Agent: `spec.tools` (bare names become `{name}`), `security.capabilities` and its MCP servers. */
export function agentScope(agent: Pick<Agent, "spec">): AgentScope {
  const tools = new Map<string, ToolObject>();
  for (const t of agent.spec.tools ?? []) {
    const obj = typeof t === "string" ? { name: t } : t;
    tools.set(obj.name, obj);
  }
  const mcpServers = new Map<string, ReadonlySet<string> | undefined>();
  for (const s of agent.spec.mcp_servers ?? []) mcpServers.set(s.name, s.tools === undefined ? undefined : new Set(s.tools));
  return { tools, capabilities: new Set(agent.spec.security?.capabilities ?? []), ...(mcpServers.size > 0 ? { mcpServers } : {}) };
}
