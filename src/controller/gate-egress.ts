// How a worker pod whose network is restricted (security.network.mode: none, or an allowlist)
// still reaches the tool-call gate, and nothing else it did not declare: the NATS URL it is
// given and the NetworkPolicy egress rules that let it through (ADR 0021).
//
// NetworkPolicy sees a connection after the Service's address has been translated to a
// pod's, so a rule naming a Service's ClusterIP never matches. For NATS behind a Service
// (`name.namespace.svc[.cluster.local]`, the chart's own NATS) the rule names the Service's
// pods (namespace + selector) on the Service's target port, and the worker gets the
// ClusterIP instead of the name, so it needs no DNS. A NATS at an IP is an ipBlock; a NATS
// at another host name is its resolved addresses plus DNS (the worker resolves the name).
import { isIP } from "node:net";
import type * as k8s from "@kubernetes/client-node";
import { TerminalError, messageOf } from "../errors.js";
import { CHILD_LABELS } from "../children/workloads.js";
import { cidrOf, type HostResolver, LABELS, MANAGED_BY, systemResolver } from "../runtime/kubernetes.js";
import type { WorkloadSpec } from "../runtime/workload.js";

/** Name of the per-namespace NetworkPolicy that lets `network: none` workers reach the gate. */
export const WORKER_GATE_POLICY = "gavel-worker-gate";

/** What a restricted worker pod gets so that it can propose its tool calls. */
export interface GateAccess {
  /** NATS URL for the pod (GAVEL_NATS_URL). */
  url: string;
  /** Egress rules added to the pod's NetworkPolicy. */
  egress: k8s.V1NetworkPolicyEgressRule[];
}

/** Reads a Service (the controller's API client; injectable for tests). */
export type ServiceReader = (name: string, namespace: string) => Promise<k8s.V1Service>;

const DEFAULT_NATS_PORT = 4222;
const DNS_RULE: k8s.V1NetworkPolicyEgressRule = {
  ports: [
    { protocol: "UDP", port: 53 },
    { protocol: "TCP", port: 53 },
  ],
};
const SERVICE_HOST = /^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc(?:\.cluster\.local)?\.?$/;

interface Server {
  scheme: string;
  host: string;
  port: number;
}

function parseServer(raw: string): Server {
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `nats://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new TerminalError(
      "InvalidNatsUrl",
      `the controller's NATS URL for workers (--nats-worker-url, else --nats): "${raw}" is not a URL`,
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return { scheme: url.protocol.replace(/:$/, ""), host, port: url.port === "" ? DEFAULT_NATS_PORT : Number(url.port) };
}

function format(s: Server, host: string): string {
  return `${s.scheme}://${isIP(host) === 6 ? `[${host}]` : host}:${s.port}`;
}

/** The access to one server of the URL. */
async function serverAccess(
  s: Server,
  readService: ServiceReader,
  resolve: HostResolver,
): Promise<{ url: string; egress: k8s.V1NetworkPolicyEgressRule[]; dns: boolean }> {
  if (isIP(s.host) !== 0) {
    return {
      url: format(s, s.host),
      egress: [{ to: [{ ipBlock: { cidr: cidrOf(s.host) } }], ports: [{ protocol: "TCP", port: s.port }] }],
      dns: false,
    };
  }
  const svc = SERVICE_HOST.exec(s.host.toLowerCase());
  if (svc !== null) {
    const [, name = "", namespace = ""] = svc;
    let service: k8s.V1Service;
    try {
      service = await readService(name, namespace);
    } catch (err) {
      throw new TerminalError(
        "GateUnreachable",
        `a worker with a restricted network reaches the gate through Service ${namespace}/${name} (the NATS URL's host), which cannot be read: ${messageOf(err)}`,
        { cause: err },
      );
    }
    const selector = service.spec?.selector ?? {};
    if (Object.keys(selector).length === 0) {
      throw new TerminalError(
        "GateUnreachable",
        `Service ${namespace}/${name} (the NATS URL's host) has no selector, so no NetworkPolicy can name its pods: give the controller --nats-worker-url with the NATS server's address`,
      );
    }
    const port = service.spec?.ports?.find((p) => p.port === s.port);
    if (port === undefined)
      throw new TerminalError("GateUnreachable", `Service ${namespace}/${name} has no port ${s.port} (the NATS URL's port)`);
    const clusterIP = service.spec?.clusterIP;
    const headless = clusterIP === undefined || clusterIP === "" || clusterIP === "None";
    return {
      url: headless ? format(s, s.host) : format(s, clusterIP),
      egress: [
        {
          to: [
            { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } }, podSelector: { matchLabels: selector } },
          ],
          ports: [{ protocol: "TCP", port: port.targetPort ?? port.port }],
        },
      ],
      dns: headless,
    };
  }
  // Another host name: the addresses it has now, and DNS so the worker can resolve it too.
  let ips: string[];
  try {
    ips = await resolve(s.host);
  } catch (err) {
    throw new TerminalError(
      "GateUnreachable",
      `the NATS URL's host "${s.host}" cannot be resolved for a worker's NetworkPolicy: ${messageOf(err)}`,
      { cause: err },
    );
  }
  if (ips.length === 0) throw new TerminalError("GateUnreachable", `the NATS URL's host "${s.host}" has no address`);
  return {
    url: format(s, s.host),
    egress: [{ to: ips.map((ip) => ({ ipBlock: { cidr: cidrOf(ip) } })), ports: [{ protocol: "TCP", port: s.port }] }],
    dns: true,
  };
}

/**
 * The gate access of restricted workers for the controller's NATS URL (one server, or a
 * comma-separated list). Errors are TerminalErrors naming what cannot be reached.
 */
export async function gateAccess(natsUrl: string, readService: ServiceReader, resolve: HostResolver = systemResolver): Promise<GateAccess> {
  const servers = natsUrl
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map(parseServer);
  if (servers.length === 0) throw new TerminalError("GateUnreachable", "no NATS URL for workers: the controller runs without --nats");
  const parts = await Promise.all(servers.map((s) => serverAccess(s, readService, resolve)));
  return {
    url: parts.map((p) => p.url).join(","),
    egress: [...parts.flatMap((p) => p.egress), ...(parts.some((p) => p.dns) ? [DNS_RULE] : [])],
  };
}

/** A worker network (workerNetworkOf) whose egress a NetworkPolicy restricts: `network: none`, or an allowlist. */
export function isRestrictedNetwork(net: Pick<WorkloadSpec, "network" | "egressHosts">): boolean {
  return net.network === "none" || (net.egressHosts ?? []).length > 0;
}

/**
 * The namespace's policy beside the deny-all one: worker pods with `network: none` may open
 * connections to the gate and nowhere else (NetworkPolicies add up; judges and readers,
 * labelled otherwise, stay without any network).
 */
export function workerGatePolicy(access: GateAccess): k8s.V1NetworkPolicy {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: WORKER_GATE_POLICY, labels: { [LABELS.managed]: MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { [LABELS.network]: "none", [CHILD_LABELS.role]: "worker" } },
      policyTypes: ["Egress"],
      egress: access.egress,
    },
  };
}
