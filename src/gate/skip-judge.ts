// Whether the tool_validation judges are skipped for a tool. skip_judge is the operators'
// bypass (tool-call-judging.txt): the GuardPolicies' `skip_judge`, gavel's built-in table, then
// the GuardPolicies' MCP-server capability declarations (ADR 0051). An Agent's
// own `skip_judge` can only ask for more judging: `false` judges a tool the operators skip,
// `true` changes nothing. The guard always runs.
import type { McpToolDescriptor } from "../api/protocol.js";
import { declaredTool, type AgentScope } from "./guard/context.js";
import type { CompiledPolicy } from "./guard/policy.js";
import { mcpSkipJudge } from "./mcp-tools.js";

/** Built-in tools: the read-only ones skip the judges by default, the mutating ones never do. */
export const BUILTIN_SKIP_JUDGE: Readonly<Record<string, boolean>> = {
  "fs.read": true,
  "fs.list": true,
  "fs.write": false,
  "cmd.run": false,
};

type SkipPolicy = Pick<CompiledPolicy, "skipJudge"> & Partial<Pick<CompiledPolicy, "mcpServers">>;

/**
 * What the operators decided for a tool: the GuardPolicies' value, else the built-in table,
 * else their MCP-server declaration (a trusted server's annotations included); unknown tools are judged.
 */
export function operatorSkipJudge(tool: string, policy: SkipPolicy, mcp?: McpToolDescriptor): boolean {
  return policy.skipJudge.get(tool) ?? BUILTIN_SKIP_JUDGE[tool] ?? mcpSkipJudge(policy.mcpServers, tool, mcp) ?? false;
}

/** True when the judges are bypassed for this tool (never the guard). */
export function skipJudge(tool: string, scope: AgentScope, policy: SkipPolicy, mcp?: McpToolDescriptor): boolean {
  return operatorSkipJudge(tool, policy, mcp) && declaredTool(scope, tool)?.skip_judge !== false;
}
