// An Agent's MCP server images in the worker's pod (ADR 0066): each a native sidecar that starts
// before the worker (and before the in-pod MCP endpoint) and serves Streamable HTTP on the pod's
// loopback, where the worker runtime reaches it as it reaches a url server. It is the server's
// image and nothing of gavel's: none of the worker's volumes, variables or NATS credential, a
// /tmp of its own, the pod's non-root user and hardening (Pod Security restricted).
import type { Agent, McpServerSpec } from "../api/types.js";
import type { PodPlacement, PodSidecar } from "../runtime/kubernetes.js";

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

/**
 * The worker's placement with its image servers' sidecars after the ones it has (the copy
 * source), so each server starts before the worker and before an MCP endpoint added later.
 */
export function withMcpServerSidecars(place: PodPlacement, agent: Agent): PodPlacement {
  const sidecars = mcpServerSidecars(agent);
  return sidecars.length === 0 ? place : { ...place, sidecars: [...(place.sidecars ?? []), ...sidecars] };
}
