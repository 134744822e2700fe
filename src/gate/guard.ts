// What the rest of gavel uses of the deterministic guard (src/gate/guard/): a policy compiled from
// GuardPolicies and the store that hot-reloads them, the guard's run over one call, and the
// argument views, checks and effect reading that `gavel guard check --explain` shows. Its shell
// reader, pattern tables and threat classes stay inside.
export { callViews, type ViewOptions } from "./guard/argument-views.js";
export { findingAction, isShellTool } from "./guard/checks.js";
export { agentScope, workerViews, type AgentScope, type HistoryEntry } from "./guard/context.js";
export { readCall } from "./guard/effects/read-call.js";
export { runGuard } from "./guard/guard.js";
export { PolicyError } from "./guard/pattern-set.js";
export { compilePolicy, precompileBuiltinPatterns, type CompiledPolicy, type NamedPolicy } from "./guard/policy.js";
export { PolicyStore } from "./guard/policy-store.js";
