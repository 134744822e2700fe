import type { Agent } from "node:https";
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { reuseConnections } from "./kube-config.js";

function kubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: "c", server: "https://127.0.0.1:6443", skipTLSVerify: false },
      { name: "d", server: "https://127.0.0.2:6443", skipTLSVerify: false },
    ],
    users: [{ name: "u", token: "t" }],
    contexts: [
      { name: "ctx", cluster: "c", user: "u" },
      { name: "other", cluster: "d", user: "u" },
    ],
    currentContext: "ctx",
  });
  return kc;
}
const agentOf = async (kc: k8s.KubeConfig) => ((await kc.applyToFetchOptions({})) as { agent: Agent }).agent;

describe("reuseConnections: one keep-alive agent per cluster and user", () => {
  it("client-node alone makes a new agent per request; reused, every request gets the same keep-alive one", async () => {
    const plain = kubeConfig();
    expect(await agentOf(plain)).not.toBe(await agentOf(plain));
    const kc = reuseConnections(kubeConfig());
    const first = await agentOf(kc);
    expect(await agentOf(kc)).toBe(first);
    expect(first.options.keepAlive).toBe(true);
    // Another cluster gets its own.
    kc.setCurrentContext("other");
    expect(await agentOf(kc)).not.toBe(first);
  });
});
