// What the effect tests share: a cmd.run call decided by the guard with no GuardPolicy, for an
// Agent whose only tool is cmd.run, in a worker whose home is /home/agent and cwd /workspace.
import { agentScope } from "../context.js";
import { runGuard } from "../guard.js";
import { compilePolicy } from "../policy.js";

const scope = agentScope({ spec: { tools: ["cmd.run"] } });
const policy = compilePolicy([]);

/** The guard's decision on `command` as step 1 of a cmd.run worker. */
export const decide = (command: string) =>
  runGuard(
    { tool: "cmd.run", args: { command }, step: 1 },
    { policy, scope, history: [], views: { home: "/home/agent", cwd: "/workspace" } },
  );

/** The decision's reason, or "allowed". */
export const reasonOf = (command: string): string => decide(command).reason ?? "allowed";
