import type * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { TerminalError } from "../errors.js";
import { gateAccess, isRestrictedNetwork, workerGatePolicy } from "./gate-egress.js";
import type { Agent } from "../api/types.js";
import { workerNetworkOf } from "../children/workloads.js";

const natsService: k8s.V1Service = {
  metadata: { name: "gavel-nats", namespace: "gavel-system" },
  spec: {
    clusterIP: "10.0.0.77",
    selector: { "app.kubernetes.io/instance": "gavel", "app.kubernetes.io/component": "nats" },
    ports: [{ name: "client", port: 4222, targetPort: "client" }],
  },
};

function services(...list: k8s.V1Service[]) {
  const seen: string[] = [];
  const read = (name: string, namespace: string): Promise<k8s.V1Service> => {
    seen.push(`${namespace}/${name}`);
    const found = list.find((s) => s.metadata?.name === name && s.metadata.namespace === namespace);
    return found !== undefined ? Promise.resolve(found) : Promise.reject(new Error(`services "${name}" not found`));
  };
  return { read, seen };
}
const noDns = (host: string): Promise<string[]> => Promise.reject(new Error(`unexpected lookup of ${host}`));

describe("gateAccess: how a restricted worker reaches the gate", () => {
  it("the chart's NATS Service: its pods by namespace and selector on the target port, and the ClusterIP instead of the name", async () => {
    const svc = services(natsService);
    const access = await gateAccess("nats://gavel-nats.gavel-system.svc:4222", svc.read, noDns);
    expect(svc.seen).toEqual(["gavel-system/gavel-nats"]);
    expect(access.url).toBe("nats://10.0.0.77:4222");
    expect(access.egress).toEqual([
      {
        to: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "gavel-system" } },
            podSelector: { matchLabels: { "app.kubernetes.io/instance": "gavel", "app.kubernetes.io/component": "nats" } },
          },
        ],
        ports: [{ protocol: "TCP", port: "client" }],
      },
    ]);
  });

  it("the long Service name and the default port name the same Service; no DNS rule is needed", async () => {
    const access = await gateAccess("nats://gavel-nats.gavel-system.svc.cluster.local", services(natsService).read, noDns);
    expect(access.url).toBe("nats://10.0.0.77:4222");
    expect(access.egress.some((r) => r.ports?.some((p) => p.port === 53))).toBe(false);
  });

  it("a headless Service keeps its name, and the worker may ask DNS", async () => {
    const headless = { ...natsService, spec: { ...natsService.spec, clusterIP: "None" } };
    const access = await gateAccess("nats://gavel-nats.gavel-system.svc:4222", services(headless).read, noDns);
    expect(access.url).toBe("nats://gavel-nats.gavel-system.svc:4222");
    expect(access.egress.at(-1)).toEqual({
      ports: [
        { protocol: "UDP", port: 53 },
        { protocol: "TCP", port: 53 },
      ],
    });
  });

  it("an IP is an ipBlock on its port; a host name its addresses plus DNS; a list covers every server", async () => {
    const access = await gateAccess("nats://10.1.2.3:4333, tls://nats.example:7422", services().read, (host) =>
      Promise.resolve(host === "nats.example" ? ["192.0.2.9", "2001:db8::9"] : []),
    );
    expect(access.url).toBe("nats://10.1.2.3:4333,tls://nats.example:7422");
    expect(access.egress).toEqual([
      { to: [{ ipBlock: { cidr: "10.1.2.3/32" } }], ports: [{ protocol: "TCP", port: 4333 }] },
      { to: [{ ipBlock: { cidr: "192.0.2.9/32" } }, { ipBlock: { cidr: "2001:db8::9/128" } }], ports: [{ protocol: "TCP", port: 7422 }] },
      {
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
    ]);
  });

  it("what cannot be reached is a TerminalError that names it", async () => {
    const cases: [string, ReturnType<typeof services>, RegExp][] = [
      [
        "nats://gavel-nats.other.svc:4222",
        services(natsService),
        /Service other\/gavel-nats \(the NATS URL's host\), which cannot be read: services "gavel-nats" not found/,
      ],
      [
        "nats://manual.gavel-system.svc:4222",
        services({ metadata: { name: "manual", namespace: "gavel-system" }, spec: { clusterIP: "10.0.0.8", ports: [{ port: 4222 }] } }),
        /has no selector.*--nats-worker-url/,
      ],
      ["nats://gavel-nats.gavel-system.svc:5222", services(natsService), /has no port 5222/],
      ["", services(), /no NATS URL for workers/],
    ];
    for (const [url, svc, message] of cases) {
      const err = await gateAccess(url, svc.read, noDns).catch((e: unknown) => e);
      expect(err, url).toBeInstanceOf(TerminalError);
      expect((err as Error).message, url).toMatch(message);
    }
    await expect(gateAccess("nats://nowhere.invalid:4222", services().read, () => Promise.reject(new Error("ENOTFOUND")))).rejects.toThrow(
      /"nowhere\.invalid" cannot be resolved for a worker's NetworkPolicy: ENOTFOUND/,
    );
  });
});

describe("which pods get the way to the gate", () => {
  const agent = (network: NonNullable<NonNullable<Agent["spec"]["security"]>["network"]>): Agent => ({
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "a" },
    spec: { runtime: { language: "python", version: "3.11" }, task: { instruction: "t" }, security: { network } },
  });
  it("workers with network none or an allowlist; never unrestricted workers", () => {
    expect(isRestrictedNetwork(workerNetworkOf(agent({ mode: "none" })))).toBe(true);
    expect(isRestrictedNetwork(workerNetworkOf(agent({ mode: "allow", allowlist: ["api.example"] })))).toBe(true);
    expect(isRestrictedNetwork(workerNetworkOf(agent({ mode: "allow" })))).toBe(false);
    expect(isRestrictedNetwork(workerNetworkOf(agent({ mode: "allow", allowlist: [" "] })))).toBe(false);
  });

  it("the namespace policy selects only network-none workers and only adds egress", async () => {
    const policy = workerGatePolicy(await gateAccess("nats://10.1.2.3:4222", services().read, noDns));
    expect(policy.spec?.podSelector).toEqual({ matchLabels: { "gavel.dev/network": "none", "gavel.dev/role": "worker" } });
    expect(policy.spec?.policyTypes).toEqual(["Egress"]);
    expect(policy.spec?.egress).toEqual([{ to: [{ ipBlock: { cidr: "10.1.2.3/32" } }], ports: [{ protocol: "TCP", port: 4222 }] }]);
  });
});
