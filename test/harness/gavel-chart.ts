// gavel as the e2e tier runs it: the working tree's chart installed on the single-node
// cluster with the images `make images` built (once per e2e run, test/e2e/global-setup.ts),
// its controller a pod like on a user's cluster. Tests read its log, crash it, and change its
// values for a while through the handle below.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { eventually, type Cluster } from "./cluster.js";
import { run, runOk } from "./exec.js";
import { E2E_OTLP_ENDPOINT_ENV } from "./jaeger.js";
import { HARNESS_DIR, HELM, REPO_DIR } from "./paths.js";
import { E2E_APPROVAL_WEBHOOK_ENV, E2E_APPROVAL_WEBHOOK_SECRET } from "./webhook-receiver.js";

export const RELEASE = "gavel";
export const RELEASE_NAMESPACE = "gavel-system";
export const CONTROLLER_DEPLOYMENT = "gavel-controller";
const CHART = join(REPO_DIR, "charts", "gavel");
const SELECTOR = "app.kubernetes.io/instance=gavel,app.kubernetes.io/component=controller";
export const NATS_STATEFULSET = "gavel-nats";
/** The chart's NATS server pods. */
export const NATS_SELECTOR = "app.kubernetes.io/instance=gavel,app.kubernetes.io/component=nats";

async function version(): Promise<string> {
  return (JSON.parse(await readFile(join(REPO_DIR, "package.json"), "utf8")) as { version: string }).version;
}

/**
 * The values every e2e install sets before the caller's: the controller image's ID as a pod
 * annotation, so that an image rebuilt under the same tag rolls the pod (the kubelet would
 * otherwise keep running the old one), and the e2e run's Jaeger as the trace collector when
 * the global setup started one, and its webhook receiver as approvals.webhookUrl (signing with its Secret); and ui.enabled, the web view's opt-in (it only adds read-only
 * pages on the probe port), so that its e2e test runs in the shared lane with no rollout of its
 * own. Everything else is the chart's default, as for a user, its own NATS included.
 */
async function fixtureValues(): Promise<string[]> {
  const id = (await runOk("docker", ["image", "inspect", "-f", "{{.Id}}", `gavel/controller:${await version()}`])).trim();
  const otlp = process.env[E2E_OTLP_ENDPOINT_ENV];
  const hook = process.env[E2E_APPROVAL_WEBHOOK_ENV];
  return [
    "--set-string",
    `podAnnotations.gavel\\.dev/image=${id.replace(/^sha256:/, "").slice(0, 16)}`,
    "--set",
    "ui.enabled=true",
    ...(otlp !== undefined && otlp !== "" ? ["--set-string", `tracing.otlpEndpoint=${otlp}`] : []),
    ...(hook !== undefined && hook !== ""
      ? ["--set-string", `approvals.webhookUrl=${hook}/hook`, "--set-string", `approvals.webhookSecret.name=${E2E_APPROVAL_WEBHOOK_SECRET}`]
      : []),
  ];
}

/**
 * `helm upgrade --install` of the working tree's chart, waiting for the controller to be
 * Ready. The CRDs are applied first: Helm installs a chart's crds/ on the first install only
 * (docs/install.md, Upgrade), and the test cluster lives across runs.
 */
export async function installChart(cluster: Cluster, values: string[] = []): Promise<void> {
  const wiped = await natsServersChange(cluster, values);
  const crds = join(CHART, "crds");
  const applied = await cluster.kubectl(["apply", "--server-side", "--force-conflicts", "-f", crds]);
  if (applied.code !== 0) throw new Error(`kubectl apply ${crds}: ${applied.stderr}`);
  const established = await cluster.kubectl(["wait", "--for", "condition=established", "--timeout=60s", "-f", crds]);
  if (established.code !== 0) throw new Error(`CRDs not established: ${established.stderr}`);
  const helm = await run(
    HELM,
    [
      "upgrade",
      "--install",
      RELEASE,
      CHART,
      "--namespace",
      RELEASE_NAMESPACE,
      "--create-namespace",
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--wait",
      "--timeout",
      "180s",
      ...(await fixtureValues()),
      ...values,
    ],
    { timeoutMs: 240_000 },
  );
  if (helm.code !== 0) {
    const pods = await cluster.kubectl(["get", "pods", "-n", RELEASE_NAMESPACE, "-o", "wide"]);
    const logs = await cluster.kubectl(["logs", "-n", RELEASE_NAMESPACE, `deployment/${CONTROLLER_DEPLOYMENT}`, "--tail=30"]);
    const nats = await cluster.kubectl(["logs", "-n", RELEASE_NAMESPACE, `statefulset/${RELEASE}-nats`, "--all-containers", "--tail=30"]);
    throw new Error(
      `helm upgrade --install ${RELEASE}: ${helm.stderr}\n${pods.stdout}\n${logs.stdout}${logs.stderr}\n${nats.stdout}${nats.stderr}`,
    );
  }
  if (wiped) {
    // The controller held the old servers' streams and ledger: a new one starts on the new NATS.
    await cluster.kubectlOk(["rollout", "restart", "-n", RELEASE_NAMESPACE, `deployment/${CONTROLLER_DEPLOYMENT}`]);
    await cluster.kubectlOk(["rollout", "status", "-n", RELEASE_NAMESPACE, `deployment/${CONTROLLER_DEPLOYMENT}`, "--timeout=180s"]);
  }
}

/** The NATS servers an install with `values` runs (`nats.cluster.replicas`, the chart's default 1). */
export function natsServersOf(values: string[]): number {
  const set = values.map((v) => /^nats\.cluster\.replicas=(\d+)$/.exec(v)?.[1]).filter((v) => v !== undefined);
  return Number(set.at(-1) ?? 1);
}

/**
 * Before an install whose NATS server count differs from the running one's: deletes the NATS
 * StatefulSet and its volumes (one server and a cluster differ in podManagementPolicy, which a
 * StatefulSet cannot change, and a single server's streams do not move into a cluster:
 * docs/nats.md). The key Secrets stay. Returns whether it deleted them. So the soak's 3-server
 * install and its way back, or the e2e set-up after a run that could not go back, start clean.
 */
async function natsServersChange(cluster: Cluster, values: string[]): Promise<boolean> {
  const apps = cluster.kc.makeApiClient(k8s.AppsV1Api);
  const sts = await apps.readNamespacedStatefulSet({ name: NATS_STATEFULSET, namespace: RELEASE_NAMESPACE }).catch(() => undefined);
  if (sts === undefined || (sts.spec?.replicas ?? 1) === natsServersOf(values)) return false;
  await cluster.kubectlOk(["delete", "statefulset", "-n", RELEASE_NAMESPACE, NATS_STATEFULSET, "--wait=true", "--timeout=120s"]);
  await cluster.kubectlOk(["delete", "pods", "-n", RELEASE_NAMESPACE, "-l", NATS_SELECTOR, "--wait=true", "--timeout=120s"]);
  const claims = (await cluster.kubectlOk(["get", "pvc", "-n", RELEASE_NAMESPACE, "-o", "name"]))
    .split("\n")
    .filter((c) => c.startsWith(`persistentvolumeclaim/data-${NATS_STATEFULSET}-`));
  if (claims.length > 0) await cluster.kubectlOk(["delete", "-n", RELEASE_NAMESPACE, "--wait=true", "--timeout=120s", ...claims]);
  return true;
}

/** The chart-installed controller, seen from a test. */
export class ChartController {
  private readonly core: k8s.CoreV1Api;

  constructor(private readonly cluster: Cluster) {
    this.core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  }

  /** The controller pods that are not being deleted, oldest first. */
  async pods(): Promise<k8s.V1Pod[]> {
    const list = await this.core.listNamespacedPod({ namespace: RELEASE_NAMESPACE, labelSelector: SELECTOR });
    return list.items
      .filter((p) => p.metadata?.deletionTimestamp === undefined)
      .sort((a, b) => (a.metadata?.creationTimestamp?.getTime() ?? 0) - (b.metadata?.creationTimestamp?.getTime() ?? 0));
  }

  /** Waits until `replicas` controller containers run and are Ready; returns their pods. */
  async ready(replicas = 1, timeoutMs = 120_000): Promise<k8s.V1Pod[]> {
    return eventually(
      async () => {
        const pods = await this.pods();
        const ok = pods.filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
        return ok.length === replicas && pods.length === replicas ? ok : undefined;
      },
      timeoutMs,
      `${replicas} Ready controller pod(s)`,
    );
  }

  /** The log of every current controller pod, the previous container's first (after a crash). */
  async log(): Promise<string> {
    let out = "";
    for (const pod of await this.pods()) {
      const name = pod.metadata?.name ?? "";
      const restarted = (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) > 0;
      for (const previous of restarted ? [true, false] : [false]) {
        const r = await this.cluster.kubectl(["logs", "-n", RELEASE_NAMESPACE, name, ...(previous ? ["--previous"] : [])]);
        out += `--- ${name}${previous ? " (previous container)" : ""}\n${r.stdout}${r.stderr}`;
      }
    }
    return out;
  }

  /**
   * Crashes the controller: SIGKILL to its process from the node (no SIGTERM, so no Lease is
   * handed back and nothing is flushed). The kubelet restarts the container in the same pod,
   * under the same Lease identity: at once after its first crash, 10 s after its second, then
   * 20 s, 40 s... (its restart back-off). From the third crash of one pod on, the killed pod is
   * also deleted and the ReplicaSet's new pod takes the Lease once it expires (15 s), which is
   * sooner. Resolves when a new controller container runs.
   */
  async kill(): Promise<void> {
    // Running is enough: a controller that is not ready (NATS down) can crash too.
    const pod = await eventually(
      async () => {
        const running = (await this.pods()).filter((p) => p.status?.containerStatuses?.[0]?.state?.running !== undefined);
        return running.length === 1 ? running[0] : undefined;
      },
      120_000,
      "one running controller container",
    );
    const status = pod.status?.containerStatuses?.[0];
    const containerId = status?.containerID?.replace(/^containerd:\/\//, "");
    if (containerId === undefined) throw new Error("no running controller container to kill");
    await runOk(join(HARNESS_DIR, "cluster.sh"), ["kill", containerId]);
    const name = pod.metadata?.name ?? "";
    if ((status?.restartCount ?? 0) > 1) {
      const del = await this.cluster.kubectl(["delete", "pod", "-n", RELEASE_NAMESPACE, name, "--grace-period=0", "--force"]);
      if (del.code !== 0) throw new Error(`kubectl delete pod ${name}: ${del.stderr}`);
    }
    await eventually(
      async () => {
        const pods = await this.pods();
        return pods.some(
          (p) =>
            p.status?.containerStatuses?.[0]?.state?.running !== undefined &&
            p.status.containerStatuses[0].containerID?.endsWith(containerId) !== true,
        )
          ? true
          : undefined;
      },
      120_000,
      "a new controller container after the kill",
    );
  }

  /** Changes the release's values (the fixture's plus `values`) and waits for the rollout. */
  async configure(values: string[] = []): Promise<void> {
    await installChart(this.cluster, values);
  }
}
