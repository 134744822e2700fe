// The Secret-backed variables of an Agent's remote MCP servers (ADR 0059): for each url server
// with a bearer_token_secret, GAVEL_MCP_TOKEN_<index> as a secretKeyRef, so the kubelet puts the
// token in the worker's container and gavel never reads or stores it.
import { mcpTokenEnv } from "../api/agent-env.js";
import type { Agent, EnvVar } from "../api/types.js";

/** The worker's env entries that take its MCP servers' bearer tokens from their Secret keys. */
export function mcpTokenEnvOf(agent: Agent): EnvVar[] {
  return (agent.spec.mcp_servers ?? []).flatMap((s, i) =>
    s.bearer_token_secret === undefined
      ? []
      : [{ name: mcpTokenEnv(i), valueFrom: { secretKeyRef: { name: s.bearer_token_secret.name, key: s.bearer_token_secret.key } } }],
  );
}
