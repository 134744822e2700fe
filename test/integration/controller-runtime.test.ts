// The controller runtime (src/controller/runtime/) on a real kube-apiserver: the informer relists
// after its watch is refused and changes made meanwhile are not lost; a reconcile that fails for
// good is recorded as a Warning Event and not retried while a transient one is; two replicas
// with leader election hand the Lease over and the second one finishes the work.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_VERSION, GROUP, VERSION, type Agent } from "../../src/api/types.js";
import { Controller } from "../../src/controller/runtime/controller.js";
import { customResource, Informer, splitKey } from "../../src/controller/runtime/informer.js";
import { TransientError } from "../../src/errors.js";
import { eventually } from "../harness/cluster.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { capturedLogger } from "../harness/logs.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const agent = (name: string, instruction = "do it") => ({
  apiVersion: API_VERSION,
  kind: "Agent",
  metadata: { name },
  spec: { task: { instruction } },
});

describe("controller runtime on the real kube-apiserver", () => {
  let cp: ControlPlane;
  let api: k8s.CustomObjectsApi;
  let core: k8s.CoreV1Api;
  const stops: (() => Promise<void>)[] = [];

  const create = (ns: string, name: string) =>
    api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "agents", body: agent(name) });
  const agents = (kc: k8s.KubeConfig, ns: string) =>
    new Informer<Agent>({
      kc,
      resource: customResource<Agent>(kc, "agent", "agents"),
      namespaces: [ns],
      watchTimeoutSeconds: 1,
      backoffBaseMs: 100,
      backoffMaxMs: 1_000,
    });

  beforeAll(async () => {
    cp = await startControlPlane();
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    core = cp.kc.makeApiClient(k8s.CoreV1Api);
  });

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await cp?.stop();
  });

  it("relists after the watch is refused: an update and a delete made meanwhile reach the cache", async () => {
    const ns = await cp.createNamespace("rt-relist");
    // A real failure: the informer runs as a service account whose RBAC binding is removed, so
    // its re-watch (after the 1 s server timeout) and its lists are refused until it comes back.
    const rbac = cp.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    const sa = "agent-reader";
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: sa }, rules: [{ apiGroups: [GROUP], resources: ["agents"], verbs: ["get", "list", "watch"] }] },
    });
    const binding = {
      metadata: { name: sa },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: sa },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: ns }],
    };
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: binding });
    const token = await core.createNamespacedServiceAccountToken({
      name: sa,
      namespace: ns,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const cluster = cp.kc.getCurrentCluster();
    if (cluster === null || token.status?.token === undefined) throw new Error("no cluster or token");
    const saKc = new k8s.KubeConfig();
    saKc.loadFromOptions({
      clusters: [cluster],
      users: [{ name: sa, token: token.status.token }],
      contexts: [{ name: sa, cluster: cluster.name, user: sa }],
      currentContext: sa,
    });

    await create(ns, "kept");
    await create(ns, "dropped");
    const informer = agents(saKc, ns);
    const deletes: string[] = [];
    informer.on((event, obj) => {
      if (event === "delete") deletes.push(obj.metadata.name);
    });
    await informer.start();
    stops.push(() => informer.stop());
    // start() resolves with the first list in the cache.
    expect(
      informer
        .list(ns)
        .map((a) => a.metadata.name)
        .sort(),
    ).toEqual(["dropped", "kept"]);

    await rbac.deleteNamespacedRoleBinding({ name: sa, namespace: ns });
    await sleep(2_500);
    await api.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: "agents",
        name: "kept",
        body: [{ op: "replace", path: "/spec/task/instruction", value: "changed during outage" }],
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
    await api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "agents", name: "dropped" });
    await sleep(1_000);
    // Still refused: the cache holds what it had.
    expect(informer.get("kept", ns)?.spec.task?.instruction).toBe("do it");
    expect(informer.get("dropped", ns)).toBeDefined();
    const relistsBefore = informer.relistCount;

    await rbac.createNamespacedRoleBinding({ namespace: ns, body: binding });
    await eventually(
      () => Promise.resolve(informer.get("kept", ns)?.spec.task?.instruction === "changed during outage" ? true : undefined),
      20_000,
      "the update made during the outage",
    );
    expect(informer.get("dropped", ns)).toBeUndefined();
    // The delete was only seen as the object missing from a list: reported as a delete all the same.
    expect(deletes).toEqual(["dropped"]);
    expect(informer.relistCount).toBeGreaterThan(relistsBefore);
  });

  it("relists after 410 Gone: a watch from a resourceVersion the server no longer holds is answered 410, and the informer lists again", async () => {
    const ns = await cp.createNamespace("rt-gone");
    await create(ns, "before");
    // The first list answer claims resourceVersion 1 (as a list served from a stale cache
    // would): the server itself answers the watch from it with 410 Gone (too old resource version).
    const real = customResource<Agent>(cp.kc, "agent", "agents");
    let lists = 0;
    const resource = {
      ...real,
      list: async (n: string | undefined) => {
        const got = await real.list(n);
        return ++lists === 1 ? { ...got, metadata: { ...got.metadata, resourceVersion: "1" } } : got;
      },
    };
    const { logger, lines: logs } = capturedLogger();
    const informer = new Informer<Agent>({ kc: cp.kc, resource, namespaces: [ns], backoffBaseMs: 100, logger });
    await informer.start();
    stops.push(() => informer.stop());
    await eventually(() => Promise.resolve(informer.relistCount >= 1 ? true : undefined), 10_000, "a relist after 410");
    expect(logs.join("\n")).toMatch(/HTTP 410|too old resource version|Expired|Gone/);
    // The watch from the second list's resourceVersion works: a new object reaches the cache.
    await create(ns, "after");
    await eventually(
      () => Promise.resolve(informer.get("after", ns) !== undefined ? true : undefined),
      10_000,
      "the object created after the relist",
    );
    expect(informer.get("before", ns)).toBeDefined();
    expect(lists).toBe(informer.relistCount + 1);
  });

  it("a terminal error is recorded as a Warning Event and not retried; a transient one is retried with backoff", async () => {
    const ns = await cp.createNamespace("rt-terminal");
    const attempts = new Map<string, number>();
    const informer = agents(cp.kc, ns);
    const controller = new Controller<Agent>({
      name: "test",
      kc: cp.kc,
      primary: { informer },
      queue: { baseDelayMs: 50, maxDelayMs: 400 },
      reconcile: async (key) => {
        const { namespace, name } = splitKey(key);
        const n = (attempts.get(name) ?? 0) + 1;
        attempts.set(name, n);
        if (name === "flaky") throw new TransientError(`attempt ${n} failed`);
        // The server refuses this ConfigMap as it is (422 Invalid): retrying cannot help.
        if (name === "refused") await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "Not_A_Valid_Name" } } });
      },
    });
    await controller.start();
    stops.push(() => controller.stop());
    await create(ns, "refused");
    await create(ns, "flaky");

    const event = await eventually(
      async () => {
        const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: "involvedObject.name=refused" });
        return list.items[0];
      },
      15_000,
      "the Warning Event on the refused Agent",
    );
    expect(event).toMatchObject({ type: "Warning", reason: "Invalid", involvedObject: { kind: "Agent", name: "refused", namespace: ns } });
    expect(event.message).toContain("Not_A_Valid_Name");
    await sleep(2_000);
    expect(attempts.get("refused")).toBe(1);
    // 50, 100, 200, 400, 400 ... ms: several attempts in 2 s, not hundreds.
    const flaky = attempts.get("flaky") ?? 0;
    expect(flaky).toBeGreaterThanOrEqual(4);
    expect(flaky).toBeLessThan(15);
    expect(controller.stats.terminal).toBe(1);
    // Nothing is recorded for a transient error.
    expect((await core.listNamespacedEvent({ namespace: ns, fieldSelector: "involvedObject.name=flaky" })).items).toEqual([]);
  });

  it("leader hand-off: only the Lease holder reconciles; when it stops, the other takes over and reconciles what is there", async () => {
    const ns = await cp.createNamespace("rt-leader");
    const byReplica = { a: new Set<string>(), b: new Set<string>() };
    const replica = (id: "a" | "b") =>
      new Controller<Agent>({
        name: "test",
        kc: cp.kc,
        primary: { informer: agents(cp.kc, ns) },
        leaderElection: { namespace: ns, name: "runtime-test", identity: id, leaseDurationSeconds: 5, retryMs: 200 },
        reconcile: (key) => {
          byReplica[id].add(splitKey(key).name);
          return Promise.resolve();
        },
      });
    const a = replica("a");
    await a.start();
    await eventually(() => Promise.resolve(a.isLeader ? true : undefined), 10_000, "a to lead");
    const b = replica("b");
    await b.start();
    stops.push(() => b.stop());
    await create(ns, "first");
    await eventually(() => Promise.resolve(byReplica.a.has("first") ? true : undefined), 10_000, "a to reconcile first");
    await sleep(1_500);
    expect(b.isLeader).toBe(false);
    expect(byReplica.b.size).toBe(0);

    const handedBack = Date.now();
    await a.stop();
    await eventually(() => Promise.resolve(byReplica.b.has("first") ? true : undefined), 10_000, "b to take over");
    const takeover = Date.now() - handedBack;
    await create(ns, "second");
    await eventually(() => Promise.resolve(byReplica.b.has("second") ? true : undefined), 10_000, "b to reconcile second");
    expect(byReplica.a.has("second")).toBe(false);
    const lease = await cp.kc.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ name: "runtime-test", namespace: ns });
    expect(lease.spec?.holderIdentity).toBe("b");
    expect(lease.spec?.leaseTransitions).toBe(1);
    // Handed back on stop: no wait for the 5 s lease to expire.
    expect(takeover).toBeLessThan(5_000);
    console.log(`leader hand-off: b reconciled the first key ${takeover} ms after a stopped`);
  });
});
