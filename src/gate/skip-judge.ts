// Whether the tool_validation judges are skipped for a tool. skip_judge is the operators'
// bypass (tool-call-judging.txt): gavel's built-in table, then the GuardPolicies' `skip_judge`
// (MCP capability declarations would join here), the later overriding the table. An Agent's
// own `skip_judge` can only ask for more judging: `false` judges a tool the operators skip,
// `true` changes nothing. The guard always runs.
import type { AgentScope } from "./guard/context.js";
import type { CompiledPolicy } from "./guard/policy.js";

/** Built-in tools: the read-only ones skip the judges by default, the mutating ones never do. */
export const BUILTIN_SKIP_JUDGE: Readonly<Record<string, boolean>> = {
  "fs.read": true,
  "fs.list": true,
  "fs.write": false,
  "cmd.run": false,
};

/** What the operators decided for a tool: the GuardPolicies' value, else the built-in table; unknown tools are judged. */
export function operatorSkipJudge(tool: string, policy: Pick<CompiledPolicy, "skipJudge">): boolean {
  return policy.skipJudge.get(tool) ?? BUILTIN_SKIP_JUDGE[tool] ?? false;
}

/** True when the judges are bypassed for this tool (never the guard). */
export function skipJudge(tool: string, scope: AgentScope, policy: Pick<CompiledPolicy, "skipJudge">): boolean {
  return operatorSkipJudge(tool, policy) && scope.tools.get(tool)?.skip_judge !== false;
}
