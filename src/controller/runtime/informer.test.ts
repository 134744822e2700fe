// What an informer's cache keeps: the transform applies to listed and watched objects alike,
// before any handler sees them; by default only managedFields go.
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { Informer, type ApiObject } from "./informer.js";

type Thing = ApiObject & { metadata: { managedFields?: unknown[]; labels?: Record<string, string> }; data?: string };

function informer(transform?: (o: Thing) => Thing): Informer<Thing> {
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
  });
}

const thing = (name: string): Thing => ({
  metadata: { name, namespace: "ns", resourceVersion: "1", labels: { a: "b" }, managedFields: [{ manager: "kubectl" }] },
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
