// Allowlists as NetworkPolicy ipBlocks, and the policy of one pod.
import { describe, expect, it } from "vitest";
import { egressCidrs } from "./egress-hosts.js";
import { egressHostsOf, egressPolicy, podManifest } from "./pod-spec.js";

const resolver = (table: Record<string, string[]>) => (host: string) =>
  table[host] !== undefined ? Promise.resolve(table[host]) : Promise.reject(new Error("ENOTFOUND"));

describe("egress allowlists", () => {
  it("keeps IPs and CIDRs, resolves names (scheme and port dropped), names the host it cannot resolve", async () => {
    const r = resolver({ "api.openai.com": ["162.159.140.245", "2606:4700::1"], "target.ns.svc.cluster.local": ["10.88.0.7"] });
    expect(await egressCidrs(["10.1.2.3", "10.0.0.0/8", "https://api.openai.com:443/v1", "target.ns.svc.cluster.local"], r)).toEqual([
      "10.1.2.3/32",
      "10.0.0.0/8",
      "162.159.140.245/32",
      "2606:4700::1/128",
      "10.88.0.7/32",
    ]);
    await expect(egressCidrs(["ok.example", "nowhere.invalid"], resolver({ "ok.example": ["1.2.3.4"] }))).rejects.toThrow(
      /security\.network\.allowlist\[1\]: host "nowhere\.invalid" cannot be resolved/,
    );
  });

  it("a pod with an allowlist carries it, and its policy allows only those addresses and DNS", () => {
    const pod = podManifest({
      spec: { name: "j", image: "i", mounts: [], network: "allow", egressHosts: ["a.example"], timeoutSeconds: 5 },
      name: "gavel-j-ex",
      instance: "ex",
      user: { uid: 65534, gid: 65534 },
      ownerReferences: [{ apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "p", uid: "u", controller: true }],
    });
    expect(egressHostsOf(pod)).toEqual(["a.example"]);
    const policy = egressPolicy(pod, ["1.2.3.4/32"]);
    expect(policy.metadata?.ownerReferences?.[0]?.name).toBe("p");
    expect(policy.spec).toEqual({
      podSelector: { matchLabels: { "gavel.dev/workload": "gavel-j-ex" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [],
      egress: [
        { to: [{ ipBlock: { cidr: "1.2.3.4/32" } }] },
        {
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
      ],
    });
    const open = podManifest({
      spec: { name: "w", image: "i", mounts: [], network: "allow", timeoutSeconds: 5 },
      name: "w",
      instance: "ex",
      user: { uid: 1, gid: 1 },
    });
    expect(egressHostsOf(open)).toBeUndefined();
  });
});
