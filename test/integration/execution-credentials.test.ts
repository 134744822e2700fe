// Per-Execution NATS credentials against a real kube-apiserver and a real nats-server in
// operator mode: `gavel nats bootstrap` makes the key Secrets once and the server's trust
// config; the controller's module mints an Execution's worker user into a Secret the
// Execution owns, the worker can propose as that Execution only, and the credential is
// refused once the Execution ends, and once it is deleted while no controller ran.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { executionCredentials, type ExecutionCredentials } from "../../src/controller/execution-credentials.js";
import { readMintingKeys, type MintingKeys } from "../../src/controller/nats-secrets.js";
import { runLimits } from "../../src/engine/durations.js";
import { agentPlan } from "../../src/engine/outer-loop.js";
import { inboxPrefix, toolCallSubject, TOOL_CALL_WILDCARD } from "../../src/transport/subjects.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { run } from "../harness/exec.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "dist", "src", "cli", "main.js");
const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "w" },
  spec: { runtime: { image: "gavel/agent:dev" }, tools: ["cmd.run"] },
};

describe("per-Execution NATS credentials (real kube-apiserver, real nats-server in operator mode)", () => {
  let cp: ControlPlane;
  let ns: string;
  let dir: string;
  let server: NatsServer;
  let core: k8s.CoreV1Api;
  let api: k8s.CustomObjectsApi;
  let keys: MintingKeys;
  let controllerCreds: Buffer;
  let gate: NatsConnection;
  const owned: ExecutionCredentials[] = [];
  const conns: NatsConnection[] = [];

  const bootstrap = () =>
    run("node", [
      GAVEL,
      "nats",
      "bootstrap",
      "--kubeconfig",
      cp.kubeconfigPath,
      "-n",
      ns,
      "--operator-secret",
      "gavel-nats-operator",
      "--credentials-secret",
      "gavel-nats-credentials",
      "--auth-config",
      join(dir, "auth", "auth.conf"),
      "--resolver-dir",
      join(dir, "jwt"),
    ]);

  async function createExecution(name: string): Promise<Execution> {
    const body: Execution = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name, namespace: ns },
      spec: { agentRef: { name: "w" }, timeoutSeconds: 3600 },
    };
    return (await api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: "executions",
      body,
    })) as Execution;
  }
  function controller(): ExecutionCredentials {
    const c = executionCredentials({ kc: cp.kc, keys, servers: server.url, controllerCreds, sweepMs: 0 });
    owned.push(c);
    return c;
  }
  /** Connects as the worker whose credential is in the Execution's Secret. */
  async function asWorker(execution: string): Promise<NatsConnection> {
    const secrets = await core.listNamespacedSecret({ namespace: ns, labelSelector: `gavel.dev/execution=${execution}` });
    const secret = secrets.items[0];
    const creds = Buffer.from(secret?.data?.["nats.creds"] ?? "", "base64");
    if (!creds.toString().includes("BEGIN NATS USER JWT"))
      throw new Error(`the Secret of ${execution} holds no .creds: ${JSON.stringify(secret)}`);
    const nc = await connect({
      servers: server.url,
      reconnect: false,
      inboxPrefix: inboxPrefix(ns, execution),
      authenticator: credsAuthenticator(creds),
    });
    conns.push(nc);
    return nc;
  }

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace("creds");
    dir = await mkdtemp(join(tmpdir(), "gavel-nats-keys-"));
    core = cp.kc.makeApiClient(k8s.CoreV1Api);
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
  });
  afterAll(async () => {
    for (const c of owned) await c.stop().catch(() => undefined);
    for (const c of conns) await c.close().catch(() => undefined);
    await gate?.close();
    await server?.stop();
    await cp?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("gavel nats bootstrap creates the key Secrets once and writes the server's trust config", async () => {
    const first = await bootstrap();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`created Secret(s) ${ns}/gavel-nats-operator, ${ns}/gavel-nats-credentials`);
    const op = await core.readNamespacedSecret({ name: "gavel-nats-operator", namespace: ns });
    const again = await bootstrap();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("exist: keys kept");
    expect((await core.readNamespacedSecret({ name: "gavel-nats-operator", namespace: ns })).data).toEqual(op.data);

    server = await startNats({ extraConfig: await readFile(join(dir, "auth", "auth.conf"), "utf8") });
    // The controller's mount of the credentials Secret.
    const cred = await core.readNamespacedSecret({ name: "gavel-nats-credentials", namespace: ns });
    const mount = join(dir, "mount");
    await mkdir(mount);
    for (const [k, v] of Object.entries(cred.data ?? {})) await writeFile(join(mount, k), Buffer.from(v, "base64"));
    const read = await readMintingKeys(mount);
    if (read?.revocation === undefined) throw new Error("the credentials Secret has no revocation keys");
    keys = read;
    controllerCreds = await readFile(join(mount, "nats.creds"));
    gate = await connect({ servers: server.url, authenticator: credsAuthenticator(controllerCreds) });
    const sub = gate.subscribe(TOOL_CALL_WILDCARD, { queue: "gate" });
    void (async () => {
      for await (const m of sub) m.respond(`decision for ${m.subject}`);
    })();
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it("mints an Execution's worker user into a Secret it owns; the worker proposes as itself only; the end of the Execution revokes it", async () => {
    const ex = await createExecution("run-a");
    const creds = controller();
    const secretName = await creds.ensure(ex, agentPlan(agent, new Map(), runLimits(ex, agent)), Date.now());
    console.log(`credential ready (minted, recorded, Secret created) in ${creds.stats.lastMintMs} ms`);
    expect(secretName).toBe(`run-a-nats-${(ex.metadata.uid ?? "").slice(0, 8)}`);
    const secret = await core.readNamespacedSecret({ name: secretName, namespace: ns });
    expect(secret.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Execution", name: "run-a", uid: ex.metadata.uid, controller: true }),
    ]);
    // A second ensure (a retried reconcile) keeps the same Secret and user.
    expect(await creds.ensure(ex, agentPlan(agent, new Map(), runLimits(ex, agent)), Date.now())).toBe(secretName);
    expect((await core.readNamespacedSecret({ name: secretName, namespace: ns })).data).toEqual(secret.data);

    const nc = await asWorker("run-a");
    expect((await nc.request(toolCallSubject(ns, "run-a"), "{}", { timeout: 2000 })).string()).toBe(
      `decision for ${toolCallSubject(ns, "run-a")}`,
    );
    await expect(nc.request(toolCallSubject(ns, "run-other"), "{}", { timeout: 1000 })).rejects.toThrow();

    const closed = nc.closed();
    const t0 = performance.now();
    await creds.release(ns, "run-a", ex.metadata.uid);
    await closed;
    console.log(`revocation at the end of an Execution: connection closed ${(performance.now() - t0).toFixed(1)} ms after release()`);
    await expect(asWorker("run-a")).rejects.toThrow(/revoked|Authorization/i);
  });

  it("a credential whose Execution was deleted while no controller ran is revoked by the next controller's sweep", async () => {
    const ex = await createExecution("run-b");
    const before = controller();
    await before.ensure(ex, agentPlan(agent, new Map(), runLimits(ex, agent)), Date.now());
    const nc = await asWorker("run-b");
    await before.stop();
    await api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name: "run-b" });
    // The ledger in JetStream tells the next controller which users may still work.
    const after = controller();
    const closed = nc.closed();
    await after.sweep();
    await closed;
    await expect(asWorker("run-b")).rejects.toThrow(/revoked|Authorization/i);
    // A running Execution's credential is left alone by the sweep.
    const live = await createExecution("run-c");
    await after.ensure(live, agentPlan(agent, new Map(), runLimits(live, agent)), Date.now());
    await after.sweep();
    const c = await asWorker("run-c");
    expect((await c.request(toolCallSubject(ns, "run-c"), "{}", { timeout: 2000 })).string()).toContain("run-c");
  });
});
