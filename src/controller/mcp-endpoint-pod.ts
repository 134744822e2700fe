// The in-pod MCP endpoint of a worker gavel did not write (ADR 0061): a native sidecar of the
// worker's pod running gavel's agent image as GAVEL_ROLE=endpoint, on 127.0.0.1 (the pod's
// loopback, which the worker shares), with the worker's volumes at the same paths and its NATS
// credential, so every tool call it serves goes to the gate under the worker's identity. The
// worker finds it in GAVEL_MCP_URL and starts only once it serves (a startup probe).
import { AGENT_ENV } from "../api/agent-env.js";
import { DEFAULT_MCP_ENDPOINT_PORT } from "../api/mcp-schema.js";
import type { Agent } from "../api/types.js";
import { AGENT_ENTRYPOINT } from "../children/images.js";
import type { PodSidecar } from "../runtime/kubernetes.js";
import type { WorkloadSpec } from "../runtime/workload.js";
import { TRACEPARENT_ENV } from "../telemetry/trace-context.js";

/** The sidecar's container name (`kubectl logs -c gavel-mcp-endpoint`). */
export const MCP_ENDPOINT_CONTAINER = "gavel-mcp-endpoint";
/** The file the endpoint creates once it serves, in the pod's /tmp (the startup probe reads it). */
export const MCP_ENDPOINT_READY_FILE = "/tmp/.gavel-mcp-endpoint.ready";

/** The worker's variables the endpoint needs: identity, tools, MCP servers, mounts, the gate, deadlines, limits, trace. */
const PASSED = new Set<string>([
  AGENT_ENV.namespace,
  AGENT_ENV.execution,
  AGENT_ENV.iteration,
  AGENT_ENV.task,
  AGENT_ENV.tools,
  AGENT_ENV.mcpServers,
  AGENT_ENV.mounts,
  AGENT_ENV.natsUrl,
  AGENT_ENV.gateTimeoutSeconds,
  AGENT_ENV.gateAttemptSeconds,
  AGENT_ENV.iterationTimeoutSeconds,
  AGENT_ENV.deadline,
  AGENT_ENV.commandTimeoutSeconds,
  AGENT_ENV.outputCapBytes,
  TRACEPARENT_ENV,
]);

/** Whether the Agent asks for the endpoint (spec.mcp_endpoint.enabled) and a gate runs to decide its calls. */
export function wantsMcpEndpoint(agent: Agent, natsUrl: string): boolean {
  return agent.spec.mcp_endpoint?.enabled === true && natsUrl !== "";
}

/** The endpoint's sidecar for a worker's spec: `image` is gavel's agent image unless the Agent names one built on it. */
export function mcpEndpointSidecar(spec: WorkloadSpec, agent: Agent, image: string): PodSidecar {
  const port = agent.spec.mcp_endpoint?.port ?? DEFAULT_MCP_ENDPOINT_PORT;
  const env: Record<string, string> = { HOME: "/tmp" };
  for (const [k, v] of Object.entries(spec.env ?? {})) if (PASSED.has(k)) env[k] = v;
  return {
    name: MCP_ENDPOINT_CONTAINER,
    image: agent.spec.mcp_endpoint?.image ?? image,
    command: [...AGENT_ENTRYPOINT],
    env: { ...env, [AGENT_ENV.role]: "endpoint", [AGENT_ENV.mcpPort]: String(port), [AGENT_ENV.mcpReadyFile]: MCP_ENDPOINT_READY_FILE },
    // Read-write at the worker's paths: fs.write and the MCP servers act on the worker's files.
    mounts: spec.mounts.map((m) => ({ ...m })),
    tmp: true,
    gateCredentials: true,
    readyCommand: ["test", "-e", MCP_ENDPOINT_READY_FILE],
    readySeconds: 60,
  };
}

/** The worker's spec with the endpoint's URL in GAVEL_MCP_URL, and the sidecar its pod carries (after any other). */
export function withMcpEndpoint(spec: WorkloadSpec, agent: Agent, image: string): { spec: WorkloadSpec; sidecar: PodSidecar } {
  const sidecar = mcpEndpointSidecar(spec, agent, image);
  const url = `http://127.0.0.1:${sidecar.env?.[AGENT_ENV.mcpPort] ?? DEFAULT_MCP_ENDPOINT_PORT}/mcp`;
  return { spec: { ...spec, env: { ...spec.env, [AGENT_ENV.mcpUrl]: url } }, sidecar };
}
