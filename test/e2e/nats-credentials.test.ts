// NATS as `helm install` sets it up on the single-node cluster (test/harness/gavel-chart.ts):
// the chart's StatefulSet runs nats-server in operator mode on a bound volume, its bootstrap
// made the key Secrets, the controller pod connects with its credential; each Execution's
// worker pod gets its own credential, which the server confines to that Execution and
// refuses once the Execution is deleted.
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeJwt, parseCreds } from "../../src/transport/credentials.js";
import { EVENT_STREAM, inboxPrefix, toolCallSubject } from "../../src/transport/subjects.js";
import { DECISION_STREAM } from "../../src/gate/tool-call.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { executionsIn, workerCredentials, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";

const agentYaml = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: sleeper
spec:
  runtime:
    image: gavel/example-k8s-worker:dev
    pull_policy: Never
  task:
    instruction: Sleep, then write sum.js.
  security:
    resources:
      timeout: "300s"
  volumes:
    - name: workspace
      mount_path: /workspace
      size: 16Mi
  execution:
    mode: one-shot
    validation:
      - type: exit_code
        expected: 0
`;
const executionYaml = (name: string) => `
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: ${name}
spec:
  agentRef:
    name: sleeper
  input: {"sleep_seconds": 280}
  timeoutSeconds: 600
`;

/** Permission errors the server sends this connection. */
function permissionErrors(nc: NatsConnection): string[] {
  const out: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") out.push(s.error.message);
  })();
  return out;
}

describe("NATS on the cluster: the chart's server and per-Execution credentials", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ex: Executions;
  let natsUrl: string;
  let gavelCreds: Buffer;
  const conns: NatsConnection[] = [];

  const secretData = async (namespace: string, name: string, key: string): Promise<Buffer> => {
    const s = await core.readNamespacedSecret({ name, namespace });
    const v = s.data?.[key];
    if (v === undefined) throw new Error(`Secret ${namespace}/${name} has no key ${key}`);
    return Buffer.from(v, "base64");
  };
  const dial = async (creds: Buffer | undefined, opts: { inboxPrefix?: string } = {}): Promise<NatsConnection> => {
    const nc = await connect({
      servers: natsUrl,
      reconnect: false,
      ...(creds !== undefined ? { authenticator: credsAuthenticator(creds) } : {}),
      ...opts,
    });
    conns.push(nc);
    return nc;
  };

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const ns = await cluster.createNamespace("e2e-nats");
    ex = executionsIn(cluster, ns, () => new ChartController(cluster).log());
    // The NATS pod's own address (the host is the pod bridge's gateway).
    const pod = await eventually(
      async () => {
        const p = await core.readNamespacedPod({ name: "gavel-nats-0", namespace: RELEASE_NAMESPACE });
        return p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? p : undefined;
      },
      120_000,
      "pod gavel-nats-0 Ready",
    );
    natsUrl = `nats://${pod.status?.podIP ?? ""}:4222`;
    gavelCreds = await secretData(RELEASE_NAMESPACE, "gavel-nats-credentials", "nats.creds");
  });
  afterAll(async () => {
    for (const c of conns) await c.close().catch(() => undefined);
    if (ex !== undefined) await cluster.deleteNamespace(ex.namespace);
  });

  it("the chart's NATS runs JetStream on its bound volume, in operator mode: no credential, no connection", async () => {
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: "data-gavel-nats-0", namespace: RELEASE_NAMESPACE });
    expect(claim.status?.phase).toBe("Bound");
    await expect(dial(undefined)).rejects.toThrow(/Authorization/i);
    const gavel = await dial(gavelCreds);
    const info = await gavel.request("$JS.API.INFO", "", { timeout: 5000 });
    expect(info.json<{ type: string }>().type).toBe("io.nats.jetstream.api.v1.account_info_response");
  });

  it("the controller connects with its credential and mints one for each worker pod, which proposes as its Execution only: a decision, another Execution's subjects and the event stream are refused, and it is refused once its Execution is deleted", async () => {
    await ex.apply(agentYaml);
    const t0 = Date.now();
    await ex.apply(executionYaml("guarded-a") + "---" + executionYaml("guarded-b"));
    const creds = await eventually(
      () => workerCredentials(core, ex.namespace, "guarded-a").catch(() => undefined),
      60_000,
      "the worker credential Secret of guarded-a",
    );
    console.log(`credential ready ${Date.now() - t0} ms after kubectl apply of the Execution`);
    // The controller's own connection, as the server reports it: authenticated as gavel's user.
    const controllerUser = decodeJwt(parseCreds(gavelCreds.toString()).jwt).sub;
    const monitor = natsUrl.replace(/^nats:/, "http:").replace(/:4222$/, ":8222");
    const [controllerPod] = await new ChartController(cluster).ready();
    const controllerIp = controllerPod?.status?.podIP;
    await eventually(
      async () => {
        const connz = (await (await fetch(`${monitor}/connz?auth=true`)).json()) as {
          connections?: { authorized_user?: string; ip?: string }[];
        };
        return (connz.connections ?? []).some((c) => c.authorized_user === controllerUser && c.ip === controllerIp) ? true : undefined;
      },
      60_000,
      `the controller pod (${controllerIp ?? "?"}) connected as gavel's user`,
    );

    // Mounted read-only into the Execution's worker pod, which runs.
    const pod = await eventually(
      async () => {
        const [name] = await ex.podsOf("guarded-a");
        if (name === undefined) return undefined;
        const p = await core.readNamespacedPod({ name, namespace: ex.namespace });
        return p.status?.phase === "Running" ? p : undefined;
      },
      120_000,
      "guarded-a's worker pod Running",
    );
    const secretName = `guarded-a-nats-${(pod.metadata?.ownerReferences?.[0]?.uid ?? "").slice(0, 8)}`;
    expect(pod.spec?.volumes).toContainEqual(
      expect.objectContaining({ name: "nats-credentials", secret: expect.objectContaining({ secretName }) as unknown }),
    );
    expect(pod.spec?.containers[0]?.env).toContainEqual({ name: "GAVEL_NATS_CREDS_FILE", value: "/var/run/gavel/nats/nats.creds" });
    const owner = (await core.readNamespacedSecret({ name: secretName, namespace: ex.namespace })).metadata?.ownerReferences?.[0];
    expect(owner).toMatchObject({ kind: "Execution", name: "guarded-a", controller: true });

    const nc = await dial(creds, { inboxPrefix: inboxPrefix(ex.namespace, "guarded-a") });
    const errors = permissionErrors(nc);
    nc.publish(toolCallSubject(ex.namespace, "guarded-a"), "{}");
    nc.publish(`gavel.decisions.${ex.namespace}.guarded-a.${owner?.uid ?? ""}.forged`, "{}");
    nc.publish(`${inboxPrefix(ex.namespace, "guarded-b")}.forged`, "{}");
    nc.subscribe(toolCallSubject(ex.namespace, "guarded-b"));
    nc.subscribe(`${inboxPrefix(ex.namespace, "guarded-b")}.>`);
    nc.subscribe("gavel.events.>");
    nc.publish(`$JS.API.CONSUMER.CREATE.${EVENT_STREAM}`, "{}");
    // Reading a stored message without a consumer: the event stream's and the decision store's.
    nc.publish(`$JS.API.DIRECT.GET.${EVENT_STREAM}`, "{}");
    nc.publish(`$JS.API.STREAM.MSG.GET.${EVENT_STREAM}`, JSON.stringify({ seq: 1 }));
    nc.publish(`$JS.API.DIRECT.GET.${DECISION_STREAM}`, "{}");
    await nc.flush();
    await eventually(() => Promise.resolve(errors.length >= 9 ? true : undefined), 10_000, "nine permission violations");
    const text = errors.join("\n");
    expect(text).toContain(`Permissions Violation for Publish to "gavel.decisions.${ex.namespace}.guarded-a.${owner?.uid ?? ""}.forged"`);
    expect(text).toContain(`Permissions Violation for Publish to "_INBOX_gavel.${ex.namespace}.guarded-b.forged"`);
    expect(text).toContain(`Permissions Violation for Subscription to "${toolCallSubject(ex.namespace, "guarded-b")}"`);
    expect(text).toContain(`Permissions Violation for Subscription to "_INBOX_gavel.${ex.namespace}.guarded-b.>"`);
    expect(text).toContain('Permissions Violation for Subscription to "gavel.events.>"');
    expect(text).toContain(`Permissions Violation for Publish to "$JS.API.CONSUMER.CREATE.${EVENT_STREAM}"`);
    expect(text).toContain(`Permissions Violation for Publish to "$JS.API.DIRECT.GET.${EVENT_STREAM}"`);
    expect(text).toContain(`Permissions Violation for Publish to "$JS.API.STREAM.MSG.GET.${EVENT_STREAM}"`);
    expect(text).toContain(`Permissions Violation for Publish to "$JS.API.DIRECT.GET.${DECISION_STREAM}"`);
    // Its own proposal subject is the one thing it may publish.
    expect(text).not.toContain(`Publish to "${toolCallSubject(ex.namespace, "guarded-a")}"`);

    const closed = nc.closed();
    const t1 = Date.now();
    const del = await cluster.kubectl(["delete", "execution", "guarded-a", "-n", ex.namespace, "--wait=false"]);
    expect(del.code, del.stderr).toBe(0);
    await closed;
    console.log(`revocation: the worker's connection closed ${Date.now() - t1} ms after kubectl delete of its Execution`);
    await expect(dial(creds, { inboxPrefix: inboxPrefix(ex.namespace, "guarded-a") })).rejects.toThrow(/revoked|Authorization/i);
    // The other Execution's credential still works.
    const other = await dial((await workerCredentials(core, ex.namespace, "guarded-b")) as Buffer, {
      inboxPrefix: inboxPrefix(ex.namespace, "guarded-b"),
    });
    expect(other.isClosed()).toBe(false);
  });
});
