// The GuardPolicy compile rules without a server: objects are fed in as the informer's cache
// would hold them (one key reconciled per change; a relist reconciles every key) and the
// store and outcomes are checked.
import { describe, expect, it } from "vitest";
import { API_VERSION, type GuardPolicy, type GuardPolicySpec } from "../api/types.js";
import { PolicyStore } from "../gate/guard/policy-store.js";
import { desiredStatus, GuardPolicyCompiler, specCounts } from "./guard-policy-source.js";

const CTL = "gavel-system";

function policy(namespace: string, name: string, spec: GuardPolicySpec, generation = 1, uid = `${namespace}-${name}`): GuardPolicy {
  return { apiVersion: API_VERSION, kind: "GuardPolicy", metadata: { namespace, name, generation, uid }, spec };
}

const keyOf = (o: GuardPolicy) => `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;

/** A compiler over an in-memory cache: put/remove change one object and reconcile its key; relist replaces a scope. */
function setup() {
  const store = new PolicyStore(CTL);
  const compiler = new GuardPolicyCompiler(store);
  const cache = new Map<string, GuardPolicy>();
  const reconcile = (k: string) => compiler.reconcile(k, cache.get(k), (key) => cache.has(key));
  return {
    store,
    compiler,
    put: (o: GuardPolicy) => {
      cache.set(keyOf(o), o);
      reconcile(keyOf(o));
    },
    remove: (o: GuardPolicy) => {
      cache.delete(keyOf(o));
      reconcile(keyOf(o));
    },
    /** What a relist of `namespace` (all when undefined) does: vanished keys and then listed keys are reconciled. */
    relist: (namespace: string | undefined, items: GuardPolicy[]) => {
      const gone = [...cache.entries()].filter(([, o]) => namespace === undefined || o.metadata.namespace === namespace).map(([k]) => k);
      for (const k of gone) cache.delete(k);
      for (const o of items) cache.set(keyOf(o), o);
      for (const k of gone) if (!cache.has(k)) reconcile(k);
      for (const o of items) reconcile(keyOf(o));
    },
  };
}

const revoke = (tool: string, reason: string): GuardPolicySpec => ({ revoked_tools: [{ tool, reason }] });
const uncompilable: GuardPolicySpec = {
  adaptive_rules: [{ name: "la", match_field: "tool", pattern: "(x)\\1", action: "deny", reason: "r" }],
};

describe("GuardPolicyCompiler", () => {
  it("applies adds, updates and deletes to the store", () => {
    const { store, compiler, put, remove } = setup();
    put(policy("team", "p", revoke("shell", "a")));
    expect(store.get("team").revoked.get("shell")?.reason).toBe("a");
    put(policy("team", "p", revoke("shell", "b"), 2));
    expect(store.get("team").revoked.get("shell")?.reason).toBe("b");
    remove(policy("team", "p", revoke("shell", "b"), 2));
    expect(store.get("team").revoked.size).toBe(0);
    expect(compiler.outcome("team", "p")).toBeUndefined();
  });

  it("keeps the last good version when an update does not compile, and records why", () => {
    const { store, compiler, put } = setup();
    put(policy("team", "p", revoke("shell", "good")));
    const version = store.version;
    put(policy("team", "p", { ...revoke("shell", "bad"), ...uncompilable }, 2));
    expect(store.version).toBe(version);
    expect(store.get("team").revoked.get("shell")?.reason).toBe("good");
    const outcome = compiler.outcome("team", "p");
    expect(outcome).toMatchObject({ ready: false, generation: 2 });
    expect(outcome?.message).toContain("GuardPolicy team/p: adaptive_rules[0] (la)");
  });

  it("does not recompile for a status-only change of the same generation", () => {
    const { store, put } = setup();
    put(policy("team", "p", revoke("shell", "a")));
    const version = store.version;
    put({ ...policy("team", "p", revoke("shell", "a")), status: { observedGeneration: 1 } });
    expect(store.version).toBe(version);
  });

  it("drops the old rules of a deleted and recreated object even if the new one is bad", () => {
    const { store, compiler, put, relist } = setup();
    put(policy("team", "p", revoke("shell", "old"), 1, "uid-1"));
    // The deletion was missed (watch gap); the relist shows a new object under the same name.
    relist(undefined, [policy("team", "p", uncompilable, 1, "uid-2")]);
    expect(store.get("team").revoked.has("shell")).toBe(false);
    expect(compiler.outcome("team", "p")).toMatchObject({ ready: false, uid: "uid-2" });
  });

  it("a relist removes objects that disappeared and merges the cluster default", () => {
    const { store, relist } = setup();
    relist(undefined, [policy("team", "p", revoke("shell", "team")), policy("team", "q", revoke("fetch", "team"))]);
    expect(store.get("team").sources).toEqual(["p", "q"]);
    relist(undefined, [policy("team", "p", revoke("shell", "team")), policy(CTL, "default", revoke("read_file", "cluster"))]);
    expect(store.get("team").sources).toEqual(["default", "p"]);
    expect(store.get("team").revoked.get("read_file")?.reason).toBe("cluster");
    expect(store.get("elsewhere").revoked.get("read_file")?.reason).toBe("cluster");
    expect(store.get("team").revoked.has("fetch")).toBe(false);
  });

  it("a removed policy is out of the set before the next key compiles, whichever key comes first", () => {
    const { store, compiler } = setup();
    const cache = new Map<string, GuardPolicy>();
    const a = policy("team", "a", revoke("shell", "a"));
    cache.set(keyOf(a), a);
    compiler.reconcile(keyOf(a), a, (k) => cache.has(k));
    // a vanishes and b arrives; b's key is reconciled before a's (queue order is not promised).
    cache.delete(keyOf(a));
    const b = policy("team", "b", revoke("fetch", "b"));
    cache.set(keyOf(b), b);
    compiler.reconcile(keyOf(b), b, (k) => cache.has(k));
    expect(store.get("team").sources).toEqual(["b"]);
    expect(store.get("team").revoked.has("shell")).toBe(false);
  });

  it("a namespace-scoped relist leaves other namespaces alone", () => {
    const { store, put, relist } = setup();
    put(policy("a", "p", revoke("shell", "a")));
    put(policy("b", "p", revoke("shell", "b")));
    relist("a", []);
    expect(store.get("a").revoked.size).toBe(0);
    expect(store.get("b").revoked.get("shell")?.reason).toBe("b");
  });

  it("a bad cluster default is refused without blocking namespace policies", () => {
    const { store, compiler, put } = setup();
    put(policy(CTL, "default", uncompilable));
    put(policy("team", "p", revoke("shell", "team")));
    expect(compiler.outcome(CTL, "default")?.ready).toBe(false);
    expect(store.get("team").sources).toEqual(["p"]);
  });
});

describe("desiredStatus", () => {
  it("writes Ready with observedGeneration and counts, moving lastTransitionTime only on a change", () => {
    const obj = policy(
      "team",
      "p",
      {
        revoked_tools: [
          { tool: "a", reason: "r" },
          { tool: "b", reason: "r" },
        ],
        required_capabilities: { a: "net" },
      },
      3,
    );
    const t1 = new Date("2026-01-01T00:00:00Z");
    const s1 = desiredStatus(obj, { uid: "u", generation: 3, ready: true, message: "" }, t1);
    expect(s1).toMatchObject({ observedGeneration: 3, counts: { revoked_tools: 2, required_capabilities: 1 } });
    expect(s1.conditions).toEqual([
      {
        type: "Ready",
        status: "True",
        reason: "Compiled",
        message: "policy compiled and in force",
        lastTransitionTime: t1.toISOString(),
        observedGeneration: 3,
      },
    ]);
    const later = new Date("2026-01-02T00:00:00Z");
    const same = desiredStatus({ ...obj, status: s1 }, { uid: "u", generation: 4, ready: true, message: "" }, later);
    expect(same.conditions?.[0]?.lastTransitionTime).toBe(t1.toISOString());
    const failed = desiredStatus(
      { ...obj, status: s1 },
      { uid: "u", generation: 4, ready: false, message: "GuardPolicy team/p: bad" },
      later,
    );
    expect(failed.conditions?.[0]).toMatchObject({ status: "False", reason: "CompileError", lastTransitionTime: later.toISOString() });
    expect(failed.conditions?.[0]?.message).toContain("GuardPolicy team/p: bad");
  });

  it("counts only non-empty lists", () => {
    expect(
      specCounts({ revoked_tools: [], adaptive_rules: [{ name: "n", match_field: "tool", pattern: "x", action: "flag", reason: "r" }] }),
    ).toEqual({ adaptive_rules: 1 });
  });
});
