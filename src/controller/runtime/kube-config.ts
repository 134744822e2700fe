// The one way gavel loads a kubeconfig: kubectl's order (a file, else $KUBECONFIG,
// ~/.kube/config, in-cluster), with connections to the API server kept and reused.
//
// @kubernetes/client-node 1.x makes a new https.Agent for every request (upstream
// kubernetes-client/javascript#2893, fixed in 2.0 by caching one per cluster and user), so
// each call paid a TCP connect and a full TLS handshake on the event loop: the gate's bench
// profile had 13 % of the controller's busy time in new TLS connections, and a tool call
// waits behind any handshake that runs. Here one keep-alive agent per cluster and user serves
// every request and watch.
import type { Agent as HttpAgent } from "node:http";
import type { AgentOptions } from "node:https";
import * as k8s from "@kubernetes/client-node";

type CreateAgent = (cluster: k8s.Cluster | null, options: AgentOptions) => HttpAgent;

/** Makes `kc` reuse one keep-alive agent per cluster and user (proxies keep client-node's own). */
export function reuseConnections(kc: k8s.KubeConfig): k8s.KubeConfig {
  // createAgent is private in client-node's typings; its signature is stable across 1.x.
  const target = kc as unknown as { createAgent: CreateAgent };
  const create = target.createAgent.bind(kc);
  const agents = new Map<string, HttpAgent>();
  target.createAgent = (cluster, options) => {
    if (cluster?.proxyUrl !== undefined && cluster.proxyUrl !== "") return create(cluster, options);
    const key = JSON.stringify([cluster?.name ?? "", cluster?.server ?? "", kc.getCurrentUser()?.name ?? ""]);
    let agent = agents.get(key);
    if (agent === undefined) {
      agent = create(cluster, { ...options, keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
  return kc;
}

/** Loads a kubeconfig as kubectl does: `file` if given, else $KUBECONFIG, ~/.kube/config or in-cluster. */
export function loadKubeConfig(file?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (file !== undefined && file !== "") kc.loadFromFile(file);
  else kc.loadFromDefault();
  return reuseConnections(kc);
}
