// What `helm template` renders for the chart's NATS as a JetStream cluster (nats.cluster.replicas,
// values-production.yaml) next to the single server of the defaults, and the values it refuses
// by name. No server: helm renders, the tests read the objects (the e2e nats-cluster runs them).
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { run, runOk } from "../harness/exec.js";
import { HELM } from "../harness/paths.js";
import { CHART, NS, type K8sObject } from "./chart-fixture.js";

interface Container {
  name: string;
  args: string[];
  env?: { name: string; value?: string }[];
  ports?: { name: string; containerPort: number }[];
  securityContext: Record<string, unknown>;
}
interface NatsStatefulSet {
  spec: {
    replicas: number;
    podManagementPolicy?: string;
    template: {
      spec: {
        securityContext: Record<string, unknown>;
        initContainers: Container[];
        containers: Container[];
        affinity?: { podAntiAffinity?: unknown };
      };
    };
  };
}

const render = async (...args: string[]): Promise<K8sObject[]> =>
  parseAllDocuments(await runOk(HELM, ["template", "gavel", CHART, "--namespace", NS, ...args]))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((d): d is K8sObject => d !== null);
const find = <T>(docs: K8sObject[], kind: string, name: string): T =>
  docs.find((d) => d.kind === kind && d.metadata.name === name) as unknown as T;
const natsConf = (docs: K8sObject[]) => find<{ data: { "nats.conf": string } }>(docs, "ConfigMap", "gavel-nats-config").data["nats.conf"];
const controllerEnv = (docs: K8sObject[]) =>
  find<{ spec: { template: { spec: { containers: Container[] } } } }>(docs, "Deployment", "gavel-controller").spec.template.spec
    .containers[0]?.env ?? [];

describe("helm template: the chart's NATS as one server or a JetStream cluster", () => {
  it("values-production.yaml: three servers routed through the headless Service, Pod Security restricted, every stream on all three, each write synced", async () => {
    const docs = await render("-f", join(CHART, "values-production.yaml"));
    const sts = find<NatsStatefulSet>(docs, "StatefulSet", "gavel-nats");
    expect(sts.spec.replicas).toBe(3);
    expect(sts.spec.podManagementPolicy).toBe("Parallel");
    const pod = sts.spec.template.spec;
    const [bootstrap] = pod.initContainers;
    const routes = Array.from({ length: 3 }, (_, i) => `nats://gavel-nats-${i}.gavel-nats-headless.${NS}.svc:6222`);
    expect(bootstrap?.args.slice(-8)).toEqual([
      "--cluster-config",
      "/etc/nats/auth/cluster.conf",
      ...routes.flatMap((r) => ["--route", r]),
    ]);
    expect(pod.containers[0]?.ports).toContainEqual({ name: "cluster", containerPort: 6222 });
    // Pod Security restricted: non-root, RuntimeDefault seccomp, no escalation, no capabilities.
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    for (const c of [...pod.initContainers, ...pod.containers])
      expect(c.securityContext, c.name).toMatchObject({
        allowPrivilegeEscalation: false,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
      });
    expect(pod.affinity?.podAntiAffinity).toBeDefined();
    const headless = find<{ spec: { ports: { name: string; port: number }[]; publishNotReadyAddresses: boolean } }>(
      docs,
      "Service",
      "gavel-nats-headless",
    );
    expect(headless.spec.ports).toContainEqual(expect.objectContaining({ name: "cluster", port: 6222 }));
    expect(headless.spec.publishNotReadyAddresses).toBe(true);
    const conf = natsConf(docs);
    expect(conf).toContain("sync_interval: always");
    expect(conf).toMatch(/cluster \{\n\s+name: gavel-nats\n\s+listen: 0\.0\.0\.0:6222\n\s+include \.\.\/auth\/cluster\.conf\n\s*\}/);
    expect(find<{ spec: { maxUnavailable: number } }>(docs, "PodDisruptionBudget", "gavel-nats").spec.maxUnavailable).toBe(1);
    expect(controllerEnv(docs)).toContainEqual({ name: "GAVEL_NATS_STREAM_REPLICAS", value: "3" });
  });

  it("the defaults: one server, no routes, no budget, single-replica streams, the server's own sync interval", async () => {
    const docs = await render();
    const sts = find<NatsStatefulSet>(docs, "StatefulSet", "gavel-nats");
    expect(sts.spec.replicas).toBe(1);
    expect(sts.spec.podManagementPolicy).toBeUndefined();
    expect(sts.spec.template.spec.initContainers[0]?.args).not.toContain("--cluster-config");
    expect(sts.spec.template.spec.containers[0]?.ports?.map((p) => p.name)).toEqual(["client", "monitor"]);
    expect(natsConf(docs)).not.toMatch(/cluster|sync_interval/);
    expect(docs.filter((d) => d.kind === "PodDisruptionBudget")).toEqual([]);
    expect(controllerEnv(docs)).toContainEqual({ name: "GAVEL_NATS_STREAM_REPLICAS", value: "1" });
    // Five servers: streams on three of them unless told otherwise.
    expect(controllerEnv(await render("--set", "nats.cluster.replicas=5"))).toContainEqual({
      name: "GAVEL_NATS_STREAM_REPLICAS",
      value: "3",
    });
  });

  it("an existing NATS: stream replicas only when set; refused values are named", async () => {
    const existing = ["--set", "nats.enabled=false", "--set", "nats.url=nats://nats.example:4222"];
    expect(controllerEnv(await render(...existing)).map((e) => e.name)).not.toContain("GAVEL_NATS_STREAM_REPLICAS");
    expect(controllerEnv(await render(...existing, "--set", "nats.streamReplicas=3"))).toContainEqual({
      name: "GAVEL_NATS_STREAM_REPLICAS",
      value: "3",
    });
    const refused = async (...sets: string[]) =>
      (await run(HELM, ["template", "gavel", CHART, ...sets.flatMap((s) => ["--set", s])])).stderr;
    expect(await refused("nats.cluster.replicas=2")).toContain("nats.cluster.replicas: 2 servers cannot lose one");
    expect(await refused("nats.streamReplicas=3")).toContain(
      "nats.streamReplicas: 3 replicas need as many NATS servers, and nats.cluster.replicas is 1",
    );
    expect(await refused("nats.jetstream.syncInterval=sometimes")).toContain("syncInterval");
  });
});
