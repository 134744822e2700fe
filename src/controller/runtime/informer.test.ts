// What an informer's cache keeps: the transform applies to listed and watched objects alike,
// before any handler sees them; by default only managedFields go.
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { Informer, type ApiObject } from "./informer.js";
import { alsoAdmitting, type NamespaceFilter } from "./namespace-scope.js";

type Thing = ApiObject & { metadata: { managedFields?: unknown[]; labels?: Record<string, string> }; data?: string };

function informer(transform?: (o: Thing) => Thing, scope?: NamespaceFilter): Informer<Thing> {
  // Nothing connects: no scope is watched, objects come through apply/replaceScope as a stream's would.
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "none", server: "https://127.0.0.1:1" }],
    users: [{ name: "none" }],
    contexts: [{ name: "none", cluster: "none", user: "none" }],
    currentContext: "none",
  });
  return new Informer<Thing>({
    kc,
    namespaces: [],
    resource: { kind: "thing", path: () => "/none", list: () => Promise.reject(new Error("never listed")) },
    ...(transform !== undefined ? { transform } : {}),
    ...(scope !== undefined ? { scope } : {}),
  });
}

const thing = (name: string, namespace = "ns"): Thing => ({
  metadata: { name, namespace, resourceVersion: "1", labels: { a: "b" }, managedFields: [{ manager: "kubectl" }] },
  data: "x".repeat(100),
});

describe("Informer cache", () => {
  it("keeps objects without managedFields by default, listed or watched, and handlers see what it keeps", () => {
    const things = informer();
    const seen: Thing[] = [];
    things.on((_e, o) => seen.push(o));
    things.replaceScope("ns", [thing("listed")], true);
    things.apply("ADDED", thing("watched"));
    for (const name of ["listed", "watched"]) {
      expect(things.get(name, "ns")?.metadata).toEqual({ name, namespace: "ns", resourceVersion: "1", labels: { a: "b" } });
      expect(things.get(name, "ns")?.data).toHaveLength(100);
    }
    expect(seen.map((o) => o.metadata.managedFields)).toEqual([undefined, undefined]);
  });

  it("applies a given transform instead", () => {
    const things = informer((o) => ({ metadata: o.metadata }));
    things.replaceScope("ns", [thing("listed")], true);
    things.apply("MODIFIED", thing("watched"));
    expect(things.list("ns").map((o) => o.data)).toEqual([undefined, undefined]);
  });
});

/** A scope whose namespaces the test sets, telling its handlers as NamespaceScope does. */
class FakeScope implements NamespaceFilter {
  readonly names = new Set<string>();
  synced = true;
  private readonly handlers: ((ns: string, admitted: boolean) => void)[] = [];
  admits(ns: string): boolean {
    return this.names.has(ns);
  }
  onChange(h: (ns: string, admitted: boolean) => void): void {
    this.handlers.push(h);
  }
  set(ns: string, admitted: boolean): void {
    if (admitted) this.names.add(ns);
    else this.names.delete(ns);
    for (const h of this.handlers) h(ns, admitted);
  }
}

describe("Informer with a namespace scope (--namespace-selector)", () => {
  it("keeps only objects of admitted namespaces; the others enter with an add when their namespace does, and leave with a delete", () => {
    const scope = new FakeScope();
    scope.set("mine", true);
    const things = informer(undefined, scope);
    const seen: string[] = [];
    things.on((e, o) => seen.push(`${e} ${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`));
    things.replaceScope(undefined, [thing("a", "mine"), thing("b", "other")], true);
    things.apply("ADDED", thing("c", "other"));
    things.apply("ADDED", thing("d", "late"));
    things.apply("DELETED", thing("c", "other"));
    expect(things.list().map((o) => o.metadata.name)).toEqual(["a"]);
    expect(seen).toEqual(["add mine/a"]);
    // A namespace watched only after its objects (the Namespace event came second): they enter now.
    scope.set("late", true);
    expect(things.get("d", "late")).toBeDefined();
    // A namespace relabelled out of the selector: its objects leave the cache.
    scope.set("mine", false);
    expect(things.list().map((o) => o.metadata.name)).toEqual(["d"]);
    expect(seen).toEqual(["add mine/a", "add late/d", "delete mine/a"]);
    // A relist keeps the set-aside ones apart too, and drops those gone from the server.
    things.replaceScope(undefined, [thing("a", "mine"), thing("d", "late")], false);
    scope.set("other", true);
    expect(
      things
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(["d"]);
    scope.set("mine", true);
    expect(
      things
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(["a", "d"]);
  });

  it("is not synced until the scope is; alsoAdmitting adds the controller's namespace whatever its labels", () => {
    const scope = new FakeScope();
    scope.synced = false;
    const policies = alsoAdmitting(scope, "gavel-system");
    expect(policies.admits("gavel-system")).toBe(true);
    expect(policies.admits("team-a")).toBe(false);
    const things = informer(undefined, policies);
    things.replaceScope(undefined, [thing("default", "gavel-system"), thing("p", "team-a")], true);
    expect(things.list().map((o) => o.metadata.name)).toEqual(["default"]);
    expect(things.synced).toBe(false);
    scope.synced = true;
    expect(things.synced).toBe(true);
    scope.set("team-a", true);
    expect(things.get("p", "team-a")).toBeDefined();
  });
});
