// Whether the tool_validation judges are skipped for a tool: gavel's built-in table first,
// then the Agent's own `skip_judge` for that tool, which wins when set. The guard always runs.
import type { AgentScope } from "./guard/context.js";

/** Built-in tools: the read-only ones skip the judges by default, the mutating ones never do. */
export const BUILTIN_SKIP_JUDGE: Readonly<Record<string, boolean>> = {
  "fs.read": true,
  "fs.list": true,
  "fs.write": false,
  "cmd.run": false,
};

/** True when the judges are bypassed for this tool (never the guard). */
export function skipJudge(tool: string, scope: AgentScope): boolean {
  const explicit = scope.tools.get(tool)?.skip_judge;
  if (explicit !== undefined) return explicit;
  return BUILTIN_SKIP_JUDGE[tool] ?? false;
}
