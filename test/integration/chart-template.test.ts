// What `helm template` renders for values the installed chart's tests (chart.test.ts) do not
// take: an existing NATS, the chart's own NATS, leader election off, metrics, admission policy
// off, a release not named gavel. No server: helm renders, the tests read the objects.
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { run, runOk } from "../harness/exec.js";
import { HELM } from "../harness/paths.js";
import { CHART, NS, type K8sObject } from "./chart-fixture.js";
import { EXPECTED_RULES, flatten, type PolicyRule } from "./chart-rbac.js";

describe("helm template: the branches default values do not take", () => {
  const render = async (...sets: string[]): Promise<K8sObject[]> => {
    const out = await runOk(HELM, ["template", "gavel", CHART, "--namespace", NS, ...sets.flatMap((s) => ["--set", s])]);
    return parseAllDocuments(out)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => d !== null);
  };
  interface PodTemplate {
    spec: {
      replicas: number;
      strategy: { type: string };
      template: {
        spec: {
          volumes: { name: string; secret?: { secretName: string } }[];
          containers: {
            args: string[];
            env: { name: string; value?: string }[];
            volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
          }[];
        };
      };
    };
  }
  const deploymentOf = (docs: K8sObject[]) => docs.find((d) => d.kind === "Deployment") as unknown as PodTemplate;

  it("an existing NATS: the credentials Secret is mounted read-only, GAVEL_NATS_CREDS and GAVEL_NATS_KEYS point into it", async () => {
    const docs = await render(
      "nats.enabled=false",
      "nats.credentialsSecret=gavel-nats",
      "nats.url=tls://nats.example:4222",
      "nodeOptions=",
    );
    expect(docs.filter((d) => d.metadata.name.includes("nats"))).toEqual([]);
    const dep = deploymentOf(docs);
    const pod = dep.spec.template.spec;
    expect(pod.volumes).toContainEqual(
      expect.objectContaining({ name: "nats-credentials", secret: expect.objectContaining({ secretName: "gavel-nats" }) as unknown }),
    );
    const c = pod.containers[0];
    expect(c?.volumeMounts).toContainEqual({ name: "nats-credentials", mountPath: "/etc/gavel/nats", readOnly: true });
    expect(c?.env).toContainEqual({ name: "GAVEL_NATS_CREDS", value: "/etc/gavel/nats/nats.creds" });
    expect(c?.env).toContainEqual({ name: "GAVEL_NATS_URL", value: "tls://nats.example:4222" });
    expect(c?.env).toContainEqual({ name: "GAVEL_NATS_KEYS", value: "/etc/gavel/nats" });
    // nodeOptions empty: no NODE_OPTIONS at all (the default's young generation is asserted below).
    expect(c?.env.map((e) => e.name)).not.toContain("NODE_OPTIONS");
    // The Lease holder is the pod, not its host: replicas on a shared host network differ.
    expect(c?.env).toContainEqual({ name: "GAVEL_POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } });
  });

  it("the chart's own NATS by default: a StatefulSet whose bootstrap makes the key Secrets the controller mounts; none without NATS", async () => {
    const docs = await render();
    const sts = docs.find((d) => d.kind === "StatefulSet") as unknown as {
      spec: {
        template: {
          spec: { automountServiceAccountToken: boolean; initContainers: { args: string[] }[]; containers: { image: string }[] };
        };
        volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[];
      };
    };
    expect(sts.spec.template.spec.automountServiceAccountToken).toBe(false);
    expect(sts.spec.template.spec.initContainers[0]?.args.slice(0, 6)).toEqual([
      "nats",
      "bootstrap",
      "--namespace",
      NS,
      "--operator-secret",
      "gavel-nats-operator",
    ]);
    expect(sts.spec.template.spec.containers[0]?.image).toMatch(/^gavel\/nats:/);
    expect(sts.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("1Gi");
    const c = deploymentOf(docs).spec.template.spec;
    expect(c.containers[0]?.env).toContainEqual({ name: "GAVEL_NATS_URL", value: `nats://gavel-nats.${NS}.svc:4222` });
    // ADR 0039: V8's young generation is not left to the 512Mi limit's 1 MB semi-spaces.
    expect(c.containers[0]?.env).toContainEqual({ name: "NODE_OPTIONS", value: "--max-semi-space-size=16" });
    expect(c.volumes).toContainEqual({ name: "nats-credentials", secret: { secretName: "gavel-nats-credentials" } });
    const role = docs.find((d) => d.kind === "ClusterRole") as unknown as { rules: PolicyRule[] };
    expect(flatten(role.rules)).toEqual({ ...EXPECTED_RULES, "/secrets": ["create"] });
    // Restricted workers reach NATS through its pods (ADR 0021): the controller reads that one Service.
    const natsRole = docs.find((d) => d.kind === "Role" && d.metadata.name === "gavel-controller-nats") as unknown as {
      rules: PolicyRule[];
    };
    expect(natsRole.rules).toEqual([{ apiGroups: [""], resources: ["services"], resourceNames: ["gavel-nats"], verbs: ["get"] }]);
    const natsBinding = docs.find((d) => d.kind === "RoleBinding" && d.metadata.name === "gavel-controller-nats") as unknown as {
      subjects: { name: string }[];
    };
    expect(natsBinding.subjects.map((s) => s.name)).toEqual(["gavel"]);

    const none = await render("nats.enabled=false");
    const plain = deploymentOf(none).spec.template.spec;
    expect(plain.containers[0]?.env.map((e) => e.name)).not.toContain("GAVEL_NATS_URL");
    expect(plain.volumes.map((v) => v.name)).not.toContain("nats-credentials");
    expect(none.filter((d) => d.metadata.name.includes("nats"))).toEqual([]);
    const r = await run(HELM, ["template", "gavel", CHART, "--set", "nats.url=nats://elsewhere:4222"]);
    expect(r.stderr).toContain("nats.url: leave it empty while nats.enabled is true");
  });

  it("leader election off: no --leader-elect, Recreate, and more than one replica is refused by name", async () => {
    const dep = deploymentOf(await render("leaderElection.enabled=false"));
    expect(dep.spec.strategy.type).toBe("Recreate");
    expect(dep.spec.template.spec.containers[0]?.args).toEqual([
      "controller",
      "--health-probe-bind-address=:8081",
      "--metrics-bind-address=:8080",
    ]);
    const r = await run(HELM, ["template", "gavel", CHART, "--set", "leaderElection.enabled=false", "--set", "replicas=2"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("replicas: more than one controller needs leaderElection.enabled=true");
    expect(deploymentOf(await render("replicas=3")).spec.replicas).toBe(3);
  });

  it("metrics: a Service to the metrics port by default, a ServiceMonitor when asked, neither (nor the flag) with metrics.enabled=false", async () => {
    const on = await render();
    const svc = on.find((d) => d.kind === "Service" && d.metadata.name === "gavel-controller-metrics") as unknown as {
      spec: { selector: Record<string, string>; ports: unknown[]; publishNotReadyAddresses: boolean };
    };
    expect(svc.spec.publishNotReadyAddresses).toBe(true);
    expect(svc.spec.selector).toEqual({
      "app.kubernetes.io/name": "gavel",
      "app.kubernetes.io/instance": "gavel",
      "app.kubernetes.io/component": "controller",
    });
    expect(svc.spec.ports).toEqual([{ name: "metrics", port: 8080, targetPort: "metrics", protocol: "TCP" }]);
    expect(on.map((d) => d.kind)).not.toContain("ServiceMonitor");
    const sm = (
      await render("metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom", "metrics.port=9090")
    ).find((d) => d.kind === "ServiceMonitor") as unknown as K8sObject & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: unknown[] };
    };
    expect(sm.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(sm.metadata.labels?.release).toBe("prom");
    expect(sm.spec.selector.matchLabels).toEqual(svc.spec.selector);
    expect(sm.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s", scrapeTimeout: "10s" }]);
    const off = await render("metrics.enabled=false");
    expect(off.filter((d) => d.metadata.name === "gavel-controller-metrics")).toEqual([]);
    const c = deploymentOf(off).spec.template.spec.containers[0];
    expect(c?.args).toEqual(["controller", "--health-probe-bind-address=:8081", "--leader-elect"]);
  });

  it("admissionPolicy.enabled=false leaves the policies (Agents, controller-exec) out and nothing else; the ToolApprovals' stays (ADR 0067)", async () => {
    const on = await render();
    const off = await render("admissionPolicy.enabled=false");
    const kinds = (docs: K8sObject[]) => docs.map((d) => d.kind);
    expect(kinds(on)).toEqual(expect.arrayContaining(["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]));
    expect(off.filter((d) => d.kind.startsWith("ValidatingAdmission")).map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      "ValidatingAdmissionPolicy/gavel-toolapprovals",
      "ValidatingAdmissionPolicyBinding/gavel-toolapprovals",
    ]);
    expect(off.length).toBe(on.length - 4);
  });

  it("watchNamespaceSelector: --namespace-selector, and a ClusterRole that only lists and watches Namespaces; never with watchNamespaces", async () => {
    const docs = await render("watchNamespaceSelector=!gavel.dev/lane");
    expect(deploymentOf(docs).spec.template.spec.containers[0]?.args).toEqual(
      expect.arrayContaining(["--namespace-selector", "!gavel.dev/lane"]),
    );
    const role = docs.find((d) => d.kind === "ClusterRole" && d.metadata.name === "gavel-namespaces") as unknown as { rules: PolicyRule[] };
    expect(role.rules).toEqual([{ apiGroups: [""], resources: ["namespaces"], verbs: ["list", "watch"] }]);
    const binding = docs.find((d) => d.kind === "ClusterRoleBinding" && d.metadata.name === "gavel-namespaces");
    expect(binding).toMatchObject({ roleRef: { name: "gavel-namespaces" }, subjects: [{ name: "gavel", namespace: NS }] });
    // Without it nothing reads Namespaces, and the controller gets no selector.
    const plain = await render();
    expect(plain.filter((d) => d.metadata.name === "gavel-namespaces")).toEqual([]);
    expect(deploymentOf(plain).spec.template.spec.containers[0]?.args).not.toContain("--namespace-selector");
    const both = await run(HELM, [
      "template",
      "gavel",
      CHART,
      "--namespace",
      NS,
      "--set",
      "watchNamespaceSelector=a=b",
      "--set",
      "watchNamespaces={x}",
    ]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('watchNamespaceSelector: "a=b" needs watchNamespaces []');
  });

  it("a release not named gavel prefixes every name, so it never collides with another's RBAC", async () => {
    const out = await runOk(HELM, ["template", "team", CHART, "--namespace", "ops"]);
    const names = parseAllDocuments(out)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => d !== null && !d.kind.startsWith("ValidatingAdmission"))
      .map((d) => d.metadata.name);
    expect(names.length).toBeGreaterThan(5);
    for (const n of names) expect(n.startsWith("team-gavel"), n).toBe(true);
  });
});
