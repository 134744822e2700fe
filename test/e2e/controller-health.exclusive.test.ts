// The chart-installed controller's probes on the single-node cluster: its pod is Ready by its
// own readinessProbe (/readyz: caches synced, API server answering, the gate serving over
// NATS); with the chart's NATS scaled to 0 it turns NotReady, /readyz naming nats, without
// being restarted (the livenessProbe asks /healthz only), and Ready again once NATS is back.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { ChartController, RELEASE, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";

const NATS = `${RELEASE}-nats`;

describe("the controller pod's probes (chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let controller: ChartController;
  let natsDown = false;

  const ready = (pod: k8s.V1Pod) => pod.status?.conditions?.find((c) => c.type === "Ready")?.status;
  /** The pod's /readyz?verbose through the API server's pod proxy, whatever its status code. */
  const readyz = async (pod: k8s.V1Pod): Promise<string> => {
    const port = pod.spec?.containers[0]?.ports?.find((p) => p.name === "health")?.containerPort;
    const r = await cluster.kubectl([
      "get",
      "--raw",
      `/api/v1/namespaces/${RELEASE_NAMESPACE}/pods/${pod.metadata?.name ?? ""}:${port ?? 0}/proxy/readyz?verbose`,
    ]);
    // kubectl prints a 500's body in its error.
    return r.stdout + r.stderr;
  };
  const scaleNats = async (replicas: number) => {
    const r = await cluster.kubectl(["scale", "statefulset", NATS, "-n", RELEASE_NAMESPACE, `--replicas=${replicas}`]);
    if (r.code !== 0) throw new Error(`kubectl scale ${NATS}: ${r.stderr}`);
  };
  const natsReady = () =>
    eventually(
      async () => {
        const p = await core.readNamespacedPod({ name: `${NATS}-0`, namespace: RELEASE_NAMESPACE }).catch(() => undefined);
        return p !== undefined && p.metadata?.deletionTimestamp === undefined && ready(p) === "True" ? p : undefined;
      },
      180_000,
      `pod ${NATS}-0 Ready`,
    );

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    controller = new ChartController(cluster);
  }, 300_000);

  afterAll(async () => {
    if (natsDown) {
      await scaleNats(1);
      await natsReady();
      await controller.ready();
    }
  }, 300_000);

  it("the controller pod is Ready by its readinessProbe: /readyz passes every check", async () => {
    const [pod] = await controller.ready();
    if (pod === undefined) throw new Error("no controller pod");
    const c = pod.spec?.containers[0];
    expect(c?.readinessProbe?.httpGet).toMatchObject({ path: "/readyz", port: "health" });
    expect(c?.livenessProbe?.httpGet).toMatchObject({ path: "/healthz", port: "health" });
    expect(await readyz(pod)).toBe("[+]shutdown ok\n[+]informers ok\n[+]apiserver ok\n[+]nats ok\nreadyz check passed\n");
  }, 180_000);

  it("NATS scaled to 0: the pod turns NotReady with /readyz naming nats, is not restarted, and is Ready again once NATS is back", async () => {
    const [before] = await controller.ready();
    if (before === undefined) throw new Error("no controller pod");
    const restarts = before.status?.containerStatuses?.[0]?.restartCount ?? 0;
    const t0 = Date.now();
    natsDown = true;
    await scaleNats(0);
    const notReady = await eventually(
      async () => {
        const [p] = await controller.pods();
        return p !== undefined && ready(p) === "False" ? p : undefined;
      },
      120_000,
      "the controller pod NotReady without NATS",
    );
    const tNotReady = Date.now() - t0;
    const body = await readyz(notReady);
    expect(body).toMatch(/\[-\]nats failed: the tool-call gate (lost NATS|cannot reach NATS) at nats:\/\/gavel-nats/);
    expect(body).toContain("[+]informers ok");
    expect(body).toContain("[+]apiserver ok");

    const t1 = Date.now();
    await scaleNats(1);
    await natsReady();
    const [after] = await controller.ready(1, 180_000);
    natsDown = false;
    console.log(
      `controller NotReady ${tNotReady} ms after NATS was scaled to 0; Ready again ${Date.now() - t1} ms after it was scaled back to 1`,
    );
    // The same container throughout: readiness follows NATS, liveness never fired.
    expect(after?.metadata?.name).toBe(before.metadata?.name);
    expect(after?.status?.containerStatuses?.[0]?.restartCount ?? 0).toBe(restarts);
  }, 420_000);
});
