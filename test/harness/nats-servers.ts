// The chart's NATS servers seen from a test: how many are Ready, and their faults. A single
// server restarted (its pod deleted: SIGTERM, JetStream flushed, a new pod on the same volume
// at a new address), or one server of a JetStream cluster SIGKILLed from the node (the kubelet
// restarts its container in place; the others keep a majority). What the soak's NATS faults
// (docs/soak.md) and nats-outages use.
import * as k8s from "@kubernetes/client-node";
import { eventually, type Cluster } from "./cluster.js";
import { runOk } from "./exec.js";
import { NATS_SELECTOR, NATS_STATEFULSET, RELEASE_NAMESPACE } from "./gavel-chart.js";
import { HARNESS_DIR } from "./paths.js";
import { join } from "node:path";

const ready = (p: k8s.V1Pod): boolean => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/** The chart's NATS StatefulSet's servers. */
export class NatsServers {
  private readonly core: k8s.CoreV1Api;

  constructor(private readonly cluster: Cluster) {
    this.core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  }

  /** The NATS pods not being deleted, by name. */
  async pods(): Promise<k8s.V1Pod[]> {
    const list = await this.core.listNamespacedPod({ namespace: RELEASE_NAMESPACE, labelSelector: NATS_SELECTOR });
    return list.items
      .filter((p) => p.metadata?.deletionTimestamp === undefined)
      .sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
  }

  /** Waits until the StatefulSet's every server runs and is Ready. */
  async ready(timeoutMs = 180_000): Promise<k8s.V1Pod[]> {
    const apps = this.cluster.kc.makeApiClient(k8s.AppsV1Api);
    const want = (await apps.readNamespacedStatefulSet({ name: NATS_STATEFULSET, namespace: RELEASE_NAMESPACE })).spec?.replicas ?? 1;
    return eventually(
      async () => {
        const pods = await this.pods();
        return pods.length === want && pods.every(ready) ? pods : undefined;
      },
      timeoutMs,
      `${want} Ready NATS server(s)`,
    );
  }

  /** Deletes `pod` (gracefully: the server flushes and closes its clients) and waits until its replacement and every other server are Ready; returns its name. */
  async restart(pod = `${NATS_STATEFULSET}-0`): Promise<string> {
    const t0 = Date.now();
    await this.cluster.kubectlOk(["delete", "pod", "-n", RELEASE_NAMESPACE, pod, "--wait=false"]);
    // The old pod is gone before the new one can be Ready: wait for its replacement.
    await eventually(
      async () => {
        const p = await this.core.readNamespacedPod({ name: pod, namespace: RELEASE_NAMESPACE }).catch(() => undefined);
        return p === undefined || (p.metadata?.creationTimestamp?.getTime() ?? 0) >= t0 - 1000 ? true : undefined;
      },
      60_000,
      `${pod} replaced`,
    );
    await this.ready();
    return pod;
  }

  /**
   * SIGKILLs the nats-server process of one server, chosen by `random` among the running ones
   * (no SIGTERM: nothing flushed, no client told), and waits until its container runs again
   * and every server is Ready; returns the pod's name.
   */
  async kill(random: () => number): Promise<string> {
    const pods = (await this.ready()).filter((p) => this.container(p)?.state?.running !== undefined);
    const pod = pods[Math.min(pods.length - 1, Math.floor(random() * pods.length))];
    const containerId = this.container(pod)?.containerID?.replace(/^containerd:\/\//, "");
    const name = pod?.metadata?.name ?? "";
    if (containerId === undefined) throw new Error(`no running nats container in ${name}`);
    await runOk(join(HARNESS_DIR, "cluster.sh"), ["kill", containerId]);
    await eventually(
      async () => {
        const p = await this.core.readNamespacedPod({ name, namespace: RELEASE_NAMESPACE }).catch(() => undefined);
        const c = p === undefined ? undefined : this.container(p);
        return c?.state?.running !== undefined && c.containerID?.endsWith(containerId) !== true ? true : undefined;
      },
      120_000,
      `a new nats container in ${name} after the kill`,
    );
    await this.ready();
    return name;
  }

  private container(pod: k8s.V1Pod | undefined): k8s.V1ContainerStatus | undefined {
    return pod?.status?.containerStatuses?.find((c) => c.name === "nats");
  }
}
