// GuardPolicy hot reload on a real kube-apiserver: objects created, changed and deleted through the
// API change what the real guard decides, without a restart; a policy that does not compile keeps
// the previous version in force and says why in its status.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardDecision } from "../../src/api/protocol.js";
import { API_VERSION, GROUP, VERSION, type GuardPolicy, type GuardPolicySpec, type JsonObject } from "../../src/api/types.js";
import { GuardPolicySource } from "../../src/controller/guard-policy-source.js";
import { runGuard } from "../../src/gate/guard/guard.js";
import { PolicyStore } from "../../src/gate/guard/policy-store.js";
import { eventually } from "../harness/cluster.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";

const plural = "guardpolicies";
const TOOLS = ["shell", "fetch", "read_file"];
const revoke0 = (): GuardPolicySpec => ({ revoked_tools: [{ tool: "shell", reason: "r0" }] });

describe("GuardPolicy hot reload", () => {
  let cp: ControlPlane;
  let api: k8s.CustomObjectsApi;
  let controllerNs: string;
  let ns: string;
  let otherNs: string;
  let store: PolicyStore;
  let source: GuardPolicySource;

  /** The real guard over one call in `namespace`, with the store's current policy. */
  const decide = (namespace: string, tool: string, args: JsonObject = { cmd: "echo hi" }): GuardDecision =>
    runGuard(
      { tool, args, step: 1 },
      {
        policy: store.get(namespace),
        scope: { tools: new Map(TOOLS.map((name) => [name, { name }])), capabilities: new Set() },
        history: [],
      },
    );

  /** Waits until the guard's decision in `namespace` satisfies `ok`. */
  const until = (what: string, namespace: string, tool: string, args: JsonObject | undefined, ok: (d: GuardDecision) => boolean) =>
    eventually(() => Promise.resolve(ok(decide(namespace, tool, args)) ? true : undefined), 15_000, what);

  const create = (namespace: string, name: string, spec: GuardPolicySpec) =>
    api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      body: { apiVersion: API_VERSION, kind: "GuardPolicy", metadata: { name }, spec },
    });
  // A JSON patch of the whole spec: no resourceVersion, so the source's own status writes never conflict.
  const replaceSpec = async (namespace: string, name: string, spec: GuardPolicySpec) =>
    (await api.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace, plural, name, body: [{ op: "replace", path: "/spec", value: spec }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    )) as GuardPolicy;
  const get = async (namespace: string, name: string) =>
    (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name })) as GuardPolicy;
  const remove = (namespace: string, name: string) =>
    api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name });

  beforeAll(async () => {
    cp = await startControlPlane();
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    controllerNs = await cp.createNamespace("gavel-ctl");
    ns = await cp.createNamespace("team");
    otherNs = await cp.createNamespace("other");
    store = new PolicyStore(controllerNs);
    // A short server-side watch timeout makes the watch resume many times during the test,
    // so every change below also exercises reconnecting without dropping an update.
    source = new GuardPolicySource({ kc: cp.kc, store, controllerNamespace: controllerNs, watchTimeoutSeconds: 2 });
    await source.start();
  });

  afterAll(async () => {
    await source?.stop();
    await cp?.stop();
  });

  it("applies a revocation, then an update, and reports Ready=True with observedGeneration", async () => {
    expect(decide(ns, "shell").approved).toBe(true);
    await create(ns, "team-policy", { revoked_tools: [{ tool: "shell", reason: "CVE-2026-0001" }] });
    await until("shell revoked", ns, "shell", undefined, (d) => !d.approved && d.reason === "tool_revoked: CVE-2026-0001");
    // Other namespaces are untouched by a namespace's own policy.
    expect(decide(otherNs, "shell").approved).toBe(true);
    const ready = await eventually(
      async () => {
        const o = await get(ns, "team-policy");
        const c = o.status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "True" && o.status?.observedGeneration === o.metadata.generation ? o : undefined;
      },
      15_000,
      "Ready=True on team-policy",
    );
    expect(ready.status?.counts).toEqual({ revoked_tools: 1 });

    const updated = await replaceSpec(ns, "team-policy", {
      adaptive_rules: [
        { name: "no-internal-host", match_field: "args", pattern: "intranet\\.corp\\.example", action: "deny", reason: "internal host" },
      ],
    });
    expect(updated.metadata.generation).toBe(2);
    await until("revocation lifted", ns, "shell", undefined, (d) => d.approved);
    const denied = decide(ns, "shell", { cmd: "wget https://intranet.corp.example/wiki" });
    expect(denied).toMatchObject({ approved: false, check: "adaptive_rule", reason: "adaptive_rule: no-internal-host" });
    await eventually(
      async () => {
        const o = await get(ns, "team-policy");
        return o.status?.observedGeneration === 2 && o.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")
          ? true
          : undefined;
      },
      15_000,
      "observedGeneration 2",
    );
  });

  it("keeps the previous version in force when an update does not compile, and says why in the status", async () => {
    const before = store.version;
    await replaceSpec(ns, "team-policy", {
      adaptive_rules: [
        { name: "no-internal-host", match_field: "args", pattern: "intranet\\.corp\\.example", action: "deny", reason: "internal host" },
        { name: "backreference-rule", match_field: "tool", pattern: "^(sh)\\1", action: "deny", reason: "no backreferences" },
      ],
      revoked_tools: [{ tool: "read_file", reason: "should not apply: the update is refused" }],
    });
    const cond = await eventually(
      async () => {
        const o = await get(ns, "team-policy");
        const c = o.status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "False" && o.status?.observedGeneration === 3 ? c : undefined;
      },
      15_000,
      "Ready=False on the bad update",
    );
    expect(cond.reason).toBe("CompileError");
    expect(cond.message).toContain("backreference-rule");
    expect(cond.message).toContain(`GuardPolicy ${ns}/team-policy`);
    expect(source.outcome(ns, "team-policy")).toMatchObject({ ready: false, generation: 3 });
    // The old version (generation 2) still decides: the internal-host rule denies, read_file is not revoked.
    expect(store.version).toBe(before);
    expect(decide(ns, "shell", { cmd: "wget https://intranet.corp.example/wiki" }).approved).toBe(false);
    expect(decide(ns, "read_file", { path: "notes.txt" }).approved).toBe(true);

    // Fixing it is picked up like any other change.
    await replaceSpec(ns, "team-policy", {
      adaptive_rules: [
        { name: "no-internal-host", match_field: "args", pattern: "intranet\\.corp\\.example", action: "deny", reason: "internal host" },
      ],
      revoked_tools: [{ tool: "read_file", reason: "now it applies" }],
    });
    await until(
      "read_file revoked after the fix",
      ns,
      "read_file",
      { path: "notes.txt" },
      (d) => d.reason === "tool_revoked: now it applies",
    );
    await eventually(
      async () => {
        const c = (await get(ns, "team-policy")).status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "True" ? true : undefined;
      },
      15_000,
      "Ready=True after the fix",
    );
  });

  it("merges the cluster default from the controller namespace with a namespace's own policy", async () => {
    await create(controllerNs, "default", {
      revoked_tools: [{ tool: "fetch", reason: "egress frozen" }],
      adaptive_rules: [{ name: "no-etc-shadow", match_field: "args", pattern: "/etc/shadow", action: "deny", reason: "secrets" }],
    });
    // A namespace with its own policy gets both: the default's revocation and its own rules.
    await until(
      "default revocation in team ns",
      ns,
      "fetch",
      { url: "https://example.com" },
      (d) => d.reason === "tool_revoked: egress frozen",
    );
    expect(decide(ns, "shell", { cmd: "wget https://intranet.corp.example/wiki" }).reason).toBe("adaptive_rule: no-internal-host");
    expect(decide(ns, "read_file", { path: "notes.txt" }).reason).toBe("tool_revoked: now it applies");
    expect(decide(ns, "shell", { cmd: "grep root /etc/shadow" }).approved).toBe(false);
    expect(store.get(ns).sources).toEqual(["default", "team-policy"]);
    // A namespace without policies gets the default alone.
    expect(decide(otherNs, "fetch", { url: "https://example.com" }).reason).toBe("tool_revoked: egress frozen");
    expect(decide(otherNs, "shell", { cmd: "wget https://intranet.corp.example/wiki" }).approved).toBe(true);
    // A policy named default outside the controller namespace is an ordinary namespace policy.
    await create(otherNs, "default", { revoked_tools: [{ tool: "shell", reason: "other only" }] });
    await until("other ns own default", otherNs, "shell", undefined, (d) => d.reason === "tool_revoked: other only");
    expect(decide(ns, "shell").approved).toBe(true);
    await remove(otherNs, "default");
    await until("other ns back to cluster default", otherNs, "shell", undefined, (d) => d.approved);
  });

  it("goes back to the defaults when policies are deleted", async () => {
    await remove(ns, "team-policy");
    await until("team policy gone", ns, "read_file", { path: "notes.txt" }, (d) => d.approved);
    expect(decide(ns, "shell", { cmd: "wget https://intranet.corp.example/wiki" }).approved).toBe(true);
    // The cluster default still applies.
    expect(decide(ns, "fetch", { url: "https://example.com" }).approved).toBe(false);
    await remove(controllerNs, "default");
    await until("cluster default gone", ns, "fetch", { url: "https://example.com" }, (d) => d.approved);
    // Built-in destructive patterns are part of the defaults and never go away.
    expect(decide(ns, "shell", { cmd: "rm -rf /" })).toMatchObject({ approved: false, check: "destructive_pattern" });
  });

  it("rejects a new bad policy on its own: other policies keep working", async () => {
    await create(ns, "good", { revoked_tools: [{ tool: "fetch", reason: "good policy" }] });
    await create(ns, "bad", { adaptive_rules: [{ name: "backref", match_field: "args", pattern: "(a)\\1", action: "deny", reason: "x" }] });
    await until("good policy applies", ns, "fetch", { url: "https://example.com" }, (d) => d.reason === "tool_revoked: good policy");
    const c = await eventually(
      async () => (await get(ns, "bad")).status?.conditions?.find((x) => x.type === "Ready" && x.status === "False"),
      15_000,
      "bad Ready=False",
    );
    expect(c.message).toContain("backref");
    expect(store.get(ns).sources).toEqual(["good"]);
    // Deleting the rejected policy and recreating it fixed makes it apply.
    await remove(ns, "bad");
    await create(ns, "bad", { adaptive_rules: [{ name: "backref", match_field: "args", pattern: "(a)a", action: "deny", reason: "x" }] });
    await until("fixed policy applies", ns, "shell", { cmd: "aa" }, (d) => d.reason === "adaptive_rule: backref");
    await remove(ns, "good");
    await remove(ns, "bad");
    await until("all gone", ns, "fetch", { url: "https://example.com" }, (d) => d.approved);
  });

  it("does not drop updates across watch reconnects (burst of changes)", async () => {
    await create(ns, "burst", { revoked_tools: [{ tool: "shell", reason: "v0" }] });
    for (let i = 1; i <= 15; i++) {
      await replaceSpec(ns, "burst", { revoked_tools: [{ tool: "shell", reason: `v${i}` }] });
      if (i % 5 === 0) await new Promise((r) => setTimeout(r, 2_500)); // spans a watch timeout
    }
    await until("last burst version", ns, "shell", undefined, (d) => d.reason === "tool_revoked: v15");
    await remove(ns, "burst");
    await until("burst gone", ns, "shell", undefined, (d) => d.approved);
  });

  it("reload latency: API write issued → guard decision changed", async () => {
    await create(ns, "timed", revoke0());
    await until("timed policy", ns, "shell", undefined, (d) => d.reason === "tool_revoked: r0");
    const ms: number[] = [];
    for (let i = 1; i <= 10; i++) {
      // From issuing the write: the watch event often lands before the write's own response.
      const t0 = performance.now();
      await replaceSpec(ns, "timed", { revoked_tools: [{ tool: "shell", reason: `r${i}` }] });
      while (decide(ns, "shell").reason !== `tool_revoked: r${i}`) {
        if (performance.now() - t0 > 10_000) throw new Error(`update ${i} not applied within 10 s`);
        await new Promise((r) => setTimeout(r, 1));
      }
      ms.push(performance.now() - t0);
    }
    ms.sort((a, b) => a - b);
    console.log(`GuardPolicy reload latency over 10 updates: median ${ms[5]?.toFixed(1)} ms, max ${ms[9]?.toFixed(1)} ms`);
    await remove(ns, "timed");
    await until("timed gone", ns, "shell", undefined, (d) => d.approved);
  });

  it("a second source started later lists the current state (restart)", async () => {
    await create(ns, "late", { revoked_tools: [{ tool: "read_file", reason: "listed at start" }] });
    await until("first source sees it", ns, "read_file", { path: "x" }, (d) => !d.approved);
    const store2 = new PolicyStore(controllerNs);
    const source2 = new GuardPolicySource({
      kc: cp.kc,
      store: store2,
      controllerNamespace: controllerNs,
      namespaces: [ns],
      writeStatus: false,
    });
    await source2.start();
    try {
      // start() resolves after the initial list is in the store: no waiting needed.
      expect(store2.get(ns).revoked.get("read_file")?.reason).toBe("listed at start");
    } finally {
      await source2.stop();
      await remove(ns, "late");
    }
  });

  it("relists after watch errors: changes made while access was lost are not dropped", async () => {
    // A real failure: the source runs as a service account whose RBAC binding is removed, so its
    // re-watch and lists are refused (403) until the binding comes back.
    const rbac = cp.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    const core = cp.kc.makeApiClient(k8s.CoreV1Api);
    const sa = "policy-reader";
    await core.createNamespacedServiceAccount({ namespace: controllerNs, body: { metadata: { name: sa } } });
    const role = `${controllerNs}-guardpolicy-reader`;
    await rbac.createClusterRole({
      body: {
        metadata: { name: role },
        rules: [
          { apiGroups: [GROUP], resources: ["guardpolicies"], verbs: ["get", "list", "watch"] },
          { apiGroups: [GROUP], resources: ["guardpolicies/status"], verbs: ["patch"] },
        ],
      },
    });
    const binding = {
      metadata: { name: role },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: controllerNs }],
    };
    await rbac.createClusterRoleBinding({ body: binding });
    const token = await core.createNamespacedServiceAccountToken({
      name: sa,
      namespace: controllerNs,
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

    await create(ns, "kept", { revoked_tools: [{ tool: "shell", reason: "before outage" }] });
    await create(ns, "dropped", { revoked_tools: [{ tool: "fetch", reason: "deleted during outage" }] });
    const store2 = new PolicyStore(controllerNs);
    const source2 = new GuardPolicySource({
      kc: saKc,
      store: store2,
      controllerNamespace: controllerNs,
      namespaces: [ns],
      watchTimeoutSeconds: 1,
    });
    await source2.start();
    try {
      expect(store2.get(ns).revoked.get("shell")?.reason).toBe("before outage");
      await rbac.deleteClusterRoleBinding({ name: role });
      // Let the open watch time out and the re-watch be refused, then change things meanwhile.
      await new Promise((r) => setTimeout(r, 3_000));
      await replaceSpec(ns, "kept", { revoked_tools: [{ tool: "shell", reason: "changed during outage" }] });
      await remove(ns, "dropped");
      await new Promise((r) => setTimeout(r, 1_000));
      expect(store2.get(ns).revoked.get("shell")?.reason).toBe("before outage");
      await rbac.createClusterRoleBinding({ body: binding });
      await eventually(
        () => Promise.resolve(store2.get(ns).revoked.get("shell")?.reason === "changed during outage" ? true : undefined),
        20_000,
        "update after outage",
      );
      expect(store2.get(ns).revoked.has("fetch")).toBe(false);
      expect(source2.relistCount).toBeGreaterThan(0);
    } finally {
      await source2.stop();
      await remove(ns, "kept");
      await rbac.deleteClusterRoleBinding({ name: role }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: role });
    }
  });
});
