// The GuardPolicySource's reconcile rules without a server: objects are fed in as a watch would
// (observe / replaceScope) and the store, outcomes and status are checked.
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { API_VERSION, type GuardPolicy, type GuardPolicySpec } from "../api/types.js";
import { PolicyStore } from "../gate/guard/policy-store.js";
import { desiredStatus, GuardPolicySource, specCounts } from "./guard-policy-source.js";

const CTL = "gavel-system";

function policy(namespace: string, name: string, spec: GuardPolicySpec, generation = 1, uid = `${namespace}-${name}`): GuardPolicy {
  return { apiVersion: API_VERSION, kind: "GuardPolicy", metadata: { namespace, name, generation, uid }, spec };
}

function setup(): { store: PolicyStore; source: GuardPolicySource } {
  const store = new PolicyStore(CTL);
  // No start() and no status writes: nothing ever connects to this address.
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "none", server: "https://127.0.0.1:1" }],
    users: [{ name: "none" }],
    contexts: [{ name: "none", cluster: "none", user: "none" }],
    currentContext: "none",
  });
  const source = new GuardPolicySource({ kc, store, controllerNamespace: CTL, writeStatus: false });
  return { store, source };
}

const revoke = (tool: string, reason: string): GuardPolicySpec => ({ revoked_tools: [{ tool, reason }] });
const lookahead: GuardPolicySpec = { adaptive_rules: [{ name: "la", match_field: "tool", pattern: "(?=x)", action: "deny", reason: "r" }] };

describe("GuardPolicySource reconcile", () => {
  it("applies adds, updates and deletes to the store", () => {
    const { store, source } = setup();
    source.observe("ADDED", policy("team", "p", revoke("shell", "a")));
    expect(store.get("team").revoked.get("shell")).toBe("a");
    source.observe("MODIFIED", policy("team", "p", revoke("shell", "b"), 2));
    expect(store.get("team").revoked.get("shell")).toBe("b");
    source.observe("DELETED", policy("team", "p", revoke("shell", "b"), 2));
    expect(store.get("team").revoked.size).toBe(0);
    expect(source.outcome("team", "p")).toBeUndefined();
  });

  it("keeps the last good version when an update does not compile, and records why", () => {
    const { store, source } = setup();
    source.observe("ADDED", policy("team", "p", revoke("shell", "good")));
    const version = store.version;
    source.observe("MODIFIED", policy("team", "p", { ...revoke("shell", "bad"), ...lookahead }, 2));
    expect(store.version).toBe(version);
    expect(store.get("team").revoked.get("shell")).toBe("good");
    const outcome = source.outcome("team", "p");
    expect(outcome).toMatchObject({ ready: false, generation: 2 });
    expect(outcome?.message).toContain("GuardPolicy team/p: adaptive_rules[0] (la)");
  });

  it("does not recompile for a status-only change of the same generation", () => {
    const { store, source } = setup();
    source.observe("ADDED", policy("team", "p", revoke("shell", "a")));
    const version = store.version;
    source.observe("MODIFIED", { ...policy("team", "p", revoke("shell", "a")), status: { observedGeneration: 1 } });
    expect(store.version).toBe(version);
  });

  it("drops the old rules of a deleted and recreated object even if the new one is bad", () => {
    const { store, source } = setup();
    source.observe("ADDED", policy("team", "p", revoke("shell", "old"), 1, "uid-1"));
    // The deletion was missed (watch gap); the relist shows a new object under the same name.
    source.replaceScope(undefined, [policy("team", "p", lookahead, 1, "uid-2")], false);
    expect(store.get("team").revoked.has("shell")).toBe(false);
    expect(source.outcome("team", "p")).toMatchObject({ ready: false, uid: "uid-2" });
    expect(source.relistCount).toBe(1);
  });

  it("a relist removes objects that disappeared and merges the cluster default", () => {
    const { store, source } = setup();
    source.replaceScope(undefined, [policy("team", "p", revoke("shell", "team")), policy("team", "q", revoke("fetch", "team"))], true);
    expect(store.get("team").sources).toEqual(["p", "q"]);
    source.replaceScope(undefined, [policy("team", "p", revoke("shell", "team")), policy(CTL, "default", revoke("read_file", "cluster"))], false);
    expect(store.get("team").sources).toEqual(["default", "p"]);
    expect(store.get("team").revoked.get("read_file")).toBe("cluster");
    expect(store.get("elsewhere").revoked.get("read_file")).toBe("cluster");
    expect(store.get("team").revoked.has("fetch")).toBe(false);
  });

  it("a namespace-scoped relist leaves other namespaces alone", () => {
    const { store, source } = setup();
    source.observe("ADDED", policy("a", "p", revoke("shell", "a")));
    source.observe("ADDED", policy("b", "p", revoke("shell", "b")));
    source.replaceScope("a", [], false);
    expect(store.get("a").revoked.size).toBe(0);
    expect(store.get("b").revoked.get("shell")).toBe("b");
  });

  it("a bad cluster default is refused without blocking namespace policies", () => {
    const { store, source } = setup();
    source.observe("ADDED", policy(CTL, "default", lookahead));
    source.observe("ADDED", policy("team", "p", revoke("shell", "team")));
    expect(source.outcome(CTL, "default")?.ready).toBe(false);
    expect(store.get("team").sources).toEqual(["p"]);
  });
});

describe("desiredStatus", () => {
  it("writes Ready with observedGeneration and counts, moving lastTransitionTime only on a change", () => {
    const obj = policy("team", "p", { revoked_tools: [{ tool: "a", reason: "r" }, { tool: "b", reason: "r" }], required_capabilities: { a: "net" } }, 3);
    const t1 = new Date("2026-01-01T00:00:00Z");
    const s1 = desiredStatus(obj, { uid: "u", generation: 3, ready: true, message: "" }, t1);
    expect(s1).toMatchObject({ observedGeneration: 3, counts: { revoked_tools: 2, required_capabilities: 1 } });
    expect(s1.conditions).toEqual([
      { type: "Ready", status: "True", reason: "Compiled", message: "policy compiled and in force", lastTransitionTime: t1.toISOString(), observedGeneration: 3 },
    ]);
    const later = new Date("2026-01-02T00:00:00Z");
    const same = desiredStatus({ ...obj, status: s1 }, { uid: "u", generation: 4, ready: true, message: "" }, later);
    expect(same.conditions?.[0]?.lastTransitionTime).toBe(t1.toISOString());
    const failed = desiredStatus({ ...obj, status: s1 }, { uid: "u", generation: 4, ready: false, message: "GuardPolicy team/p: bad" }, later);
    expect(failed.conditions?.[0]).toMatchObject({ status: "False", reason: "CompileError", lastTransitionTime: later.toISOString() });
    expect(failed.conditions?.[0]?.message).toContain("GuardPolicy team/p: bad");
  });

  it("counts only non-empty lists", () => {
    expect(specCounts({ revoked_tools: [], adaptive_rules: [{ name: "n", match_field: "tool", pattern: "x", action: "flag", reason: "r" }] })).toEqual({ adaptive_rules: 1 });
  });
});
