// A worker's pod, assembled in one place (workerPod): its workload (the worker runtime's env
// contract, children/workloads.ts) with its claims read-write, its placement (the copy source
// its tool-call judges' stream copies read, ADR 0041), the gate's egress for a restricted
// network (ADR 0021), its NATS credential, and its MCP containers, each a native sidecar that
// starts before the worker:
// - an Agent's MCP server images (ADR 0066), which serve Streamable HTTP on the pod's loopback,
//   where the worker runtime reaches them as it reaches a url server. Each is the server's image
//   and nothing of gavel's: none of the worker's volumes, variables or NATS credential, a /tmp of
//   its own, the pod's non-root user and hardening (Pod Security restricted);
// - the in-pod MCP endpoint of a worker gavel did not write (ADR 0061), after the servers:
//   gavel's agent image as GAVEL_ROLE=endpoint on 127.0.0.1, with the worker's volumes at the
//   same paths and its NATS credential, so every tool call it serves goes to the gate under the
//   worker's identity. The worker finds it in GAVEL_MCP_URL and starts only once it serves (a
//   startup probe).
import { AGENT_ENV } from "../api/agent-env.js";
import { DEFAULT_MCP_ENDPOINT_PORT } from "../api/mcp-schema.js";
import type { Agent, McpServerSpec } from "../api/types.js";
import { AGENT_ENTRYPOINT, defaultImages } from "../children/images.js";
import { programWorkload, type WorkerRun } from "../children/workloads.js";
import type { PodPlacement, PodSidecar } from "../runtime/kubernetes.js";
import type { WorkloadSpec } from "../runtime/workload.js";
import { TRACEPARENT_ENV } from "../telemetry/trace-context.js";
import type { ExecutionSettings, RunContext } from "./execution-parts.js";
import { workerPlacement } from "./execution-pods.js";
import { workerGatePolicy, type GateAccess } from "./gate-egress.js";

/** What a worker's pod is made of beyond its run and its Execution's context. */
export interface WorkerPodInputs {
  settings: ExecutionSettings;
  /** The gate's address and egress rule, for a worker whose network is restricted (gate-egress.ts). */
  gate?: GateAccess;
  /** The iteration span's W3C traceparent, when the Execution is traced. */
  traceParent?: string;
  /** The Secret of the worker's NATS credential (execution-credentials.ts). */
  credentialSecret?: string;
}

/**
 * Iteration N's worker pod, top to bottom: its MCP server images, its claims and placement (with
 * the copy source), the gate's egress, its workload, the in-pod MCP endpoint, its credential.
 */
export function workerPod(ctx: RunContext, run: WorkerRun, o: WorkerPodInputs): { spec: WorkloadSpec; place: PodPlacement } {
  const servers = mcpServerSidecars(ctx.agent);
  const mounts = ctx.mounts;
  let place = workerPlacement(ctx.owner, ctx.agent, o.settings.readerImage);
  // A restricted worker gets the gate's address and a rule to reach it, and nothing else opens up.
  if (o.gate !== undefined) place = { ...place, gate: { policy: workerGatePolicy(o.gate), egress: o.gate.egress } };
  let spec = programWorkload(ctx.owner, ctx.execution.spec.input, ctx.agent, ctx.program, run, mounts, {
    natsUrl: o.gate?.url ?? o.settings.natsUrl,
    ...(o.traceParent !== undefined ? { traceParent: o.traceParent } : {}),
  });
  // The servers start before the worker and before the endpoint, which serves their tools too.
  const sidecars = [...(place.sidecars ?? []), ...servers];
  if (wantsMcpEndpoint(ctx.agent, spec.env?.[AGENT_ENV.natsUrl] ?? "")) {
    const endpoint = withMcpEndpoint(spec, ctx.agent, defaultImages().worker);
    spec = endpoint.spec;
    sidecars.push(endpoint.sidecar);
  }
  if (sidecars.length > 0) place = { ...place, sidecars };
  if (o.credentialSecret !== undefined) place = { ...place, credentialSecret: o.credentialSecret };
  return { spec, place };
}

/** The container names of the Agent's image servers, in spec order: mcp-<server>, `_` written `-` (a container name is a DNS label). */
export function mcpServerContainerNames(servers: readonly McpServerSpec[]): string[] {
  const names: string[] = [];
  servers.forEach((s, i) => {
    if (s.image === undefined) return;
    const name = `mcp-${s.name.replace(/_/g, "-")}`;
    // a_b and a-b both read mcp-a-b: the later one keeps its index so names stay unique and fixed.
    names.push(names.includes(name) ? `${name}-${i}` : name);
  });
  return names;
}

/** The sidecars of the Agent's image servers: the image's entrypoint with the server's args and literal env. */
export function mcpServerSidecars(agent: Agent): PodSidecar[] {
  const servers = agent.spec.mcp_servers ?? [];
  const names = mcpServerContainerNames(servers);
  return servers
    .filter((s) => s.image !== undefined)
    .map((s, i) => ({
      name: names[i] ?? `mcp-${i}`,
      image: s.image ?? "",
      ...(s.args !== undefined ? { args: [...s.args] } : {}),
      // The root filesystem is read-only: HOME is its own /tmp unless the Agent names one.
      env: { HOME: "/tmp", ...Object.fromEntries((s.env ?? []).map((e) => [e.name, e.value])) },
      mounts: [],
      ownTmp: true,
    }));
}

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
