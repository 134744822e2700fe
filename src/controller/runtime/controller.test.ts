// The controller runtime without a server: an informer that watches no scope is fed objects the
// way its streams would (apply / replaceScope), and the reconcile function decides what happens.
// Checked: keys from changes reach one reconcile at a time, transient errors are retried with
// per-key backoff, terminal errors (typed or an HTTP 422) are recorded once and not retried.
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { TerminalError, TransientError } from "../../errors.js";
import { Controller, terminalNote } from "./controller.js";
import { coreEvent } from "./event-recorder.js";
import { Informer, objectKey, splitKey, type ApiObject } from "./informer.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function kubeConfig(): k8s.KubeConfig {
  // Nothing here connects: the informer watches no scope and onTerminal is given.
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "none", server: "https://127.0.0.1:1" }],
    users: [{ name: "none" }],
    contexts: [{ name: "none", cluster: "none", user: "none" }],
    currentContext: "none",
  });
  return kc;
}

function obj(namespace: string, name: string, rv = "1"): ApiObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name, uid: `uid-${name}`, resourceVersion: rv } };
}

/** An informer over no scope: start() lists nothing, objects come through apply/replaceScope. */
function informer(kc: k8s.KubeConfig): Informer<ApiObject> {
  return new Informer<ApiObject>({
    kc,
    namespaces: [],
    resource: { kind: "thing", path: () => "/none", list: () => Promise.reject(new Error("never listed")) },
  });
}

async function until(what: string, ok: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe("Controller", () => {
  it("reconciles the keys of changed objects, one at a time per key; a relist's vanished objects are reconciled too", async () => {
    const kc = kubeConfig();
    const things = informer(kc);
    const seen: string[] = [];
    const running = new Set<string>();
    let overlap = false;
    const c = new Controller<ApiObject>({
      name: "test",
      kc,
      primary: { informer: things },
      workers: 4,
      reconcile: async (key) => {
        if (running.has(key)) overlap = true;
        running.add(key);
        seen.push(key);
        await sleep(20);
        running.delete(key);
      },
      onTerminal: () => Promise.resolve(),
    });
    await c.start();
    things.apply("ADDED", obj("ns", "a"));
    things.apply("MODIFIED", obj("ns", "a", "2"));
    things.apply("MODIFIED", obj("ns", "a", "3"));
    things.apply("ADDED", obj("ns", "b"));
    await until("both keys", () => seen.includes("ns/a") && seen.includes("ns/b"));
    // A relist that no longer holds b: b is reconciled (and finds it gone in the cache).
    seen.length = 0;
    things.replaceScope(undefined, [obj("ns", "a", "3")], false);
    await until("b after the relist", () => seen.includes("ns/b"));
    expect(things.get("b", "ns")).toBeUndefined();
    expect(things.relistCount).toBe(1);
    await c.stop();
    expect(overlap).toBe(false);
  });

  it("retries a transient error with growing backoff and stops on a terminal one, recording it once", async () => {
    const kc = kubeConfig();
    const things = informer(kc);
    const attempts = new Map<string, number[]>();
    const recorded: { key: string; reason: string; message: string }[] = [];
    const c = new Controller<ApiObject>({
      name: "test",
      kc,
      primary: { informer: things },
      queue: { baseDelayMs: 20, maxDelayMs: 1_000 },
      reconcile: (key) => {
        attempts.set(key, [...(attempts.get(key) ?? []), Date.now()]);
        const n = attempts.get(key)?.length ?? 0;
        if (key === "ns/flaky" && n < 4) return Promise.reject(new TransientError("server busy"));
        if (key === "ns/invalid") return Promise.reject(new TerminalError("InvalidSpec", "spec.x: must be a number"));
        // An API answer the server would give again: 422 is classified terminal.
        if (key === "ns/refused")
          return Promise.reject(
            Object.assign(new Error("HTTP-Code: 422"), {
              code: 422,
              body: JSON.stringify({ kind: "Status", code: 422, reason: "Invalid", message: "status.x: Invalid value" }),
            }),
          );
        return Promise.resolve();
      },
      onTerminal: (key, err) => {
        recorded.push({ key, reason: err.reason, message: err.message });
        return Promise.resolve();
      },
    });
    await c.start();
    for (const name of ["flaky", "invalid", "refused"]) things.apply("ADDED", obj("ns", name));
    await until("flaky to succeed", () => (attempts.get("ns/flaky")?.length ?? 0) === 4);
    await sleep(300);
    // Transient: retried after 20, 40, 80 ms, then success forgets the failures.
    const t = attempts.get("ns/flaky") ?? [];
    const gaps = t.slice(1).map((at, i) => at - (t[i] ?? 0));
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[1]).toBeGreaterThanOrEqual(35);
    expect(gaps[2]).toBeGreaterThanOrEqual(75);
    expect(c.queue.failuresOf("ns/flaky")).toBe(0);
    // Terminal: one attempt each, recorded with reason and message, no failure counted for backoff.
    expect(attempts.get("ns/invalid")).toHaveLength(1);
    expect(attempts.get("ns/refused")).toHaveLength(1);
    expect(c.queue.failuresOf("ns/invalid")).toBe(0);
    expect(recorded).toEqual(
      expect.arrayContaining([
        { key: "ns/invalid", reason: "InvalidSpec", message: "spec.x: must be a number" },
        { key: "ns/refused", reason: "Invalid", message: "HTTP 422 Invalid: status.x: Invalid value" },
      ]),
    );
    expect(c.stats).toEqual({ reconciles: 6, errors: 5, conflicts: 0, terminal: 2 });
    // The same counters under controller-runtime's names.
    const text = c.metrics.registry.render();
    for (const line of [
      `controller_runtime_reconcile_total{controller="${c.metrics.labels.controller}",result="error"} 5`,
      `controller_runtime_reconcile_total{controller="${c.metrics.labels.controller}",result="success"} 1`,
      `controller_runtime_reconcile_errors_total{controller="${c.metrics.labels.controller}"} 5`,
      `controller_runtime_terminal_reconcile_errors_total{controller="${c.metrics.labels.controller}"} 2`,
      `controller_runtime_reconcile_time_seconds_count{controller="${c.metrics.labels.controller}"} 6`,
      `workqueue_retries_total{controller="${c.metrics.labels.controller}",name="${c.metrics.labels.controller}"} 3`,
    ])
      expect(text).toContain(`${line}\n`);
    // A change to the object is looked at again (the terminal key is not blacklisted).
    things.apply("MODIFIED", obj("ns", "invalid", "2"));
    await until("invalid again", () => attempts.get("ns/invalid")?.length === 2);
    await c.stop();
  });

  it("requeues every primary key on resync", async () => {
    const kc = kubeConfig();
    const things = informer(kc);
    const counts = new Map<string, number>();
    const c = new Controller<ApiObject>({
      name: "test",
      kc,
      primary: { informer: things },
      resyncMs: 50,
      reconcile: (key) => {
        counts.set(key, (counts.get(key) ?? 0) + 1);
        return Promise.resolve();
      },
    });
    things.apply("ADDED", obj("ns", "a"));
    await c.start();
    await until("three looks at a", () => (counts.get("ns/a") ?? 0) >= 3);
    await c.stop();
  });

  it("maps a secondary kind's changes to primary keys", async () => {
    const kc = kubeConfig();
    const parents = informer(kc);
    const children = informer(kc);
    const seen: string[] = [];
    const c = new Controller<ApiObject>({
      name: "test",
      kc,
      primary: { informer: parents },
      watches: [{ informer: children, keys: (o) => [`${o.metadata?.namespace ?? ""}/${(o.metadata?.name ?? "").split("-")[0] ?? ""}`] }],
      reconcile: (key) => {
        seen.push(key);
        return Promise.resolve();
      },
    });
    await c.start();
    children.apply("ADDED", obj("ns", "p1-child"));
    children.apply("DELETED", obj("ns", "p2-child"));
    await until("both parents", () => seen.includes("ns/p1") && seen.includes("ns/p2"));
    await c.stop();
  });
});

describe("terminalNote", () => {
  it("is a Warning on the object with the error's reason and message, named after the object, reason and message", () => {
    const now = new Date("2026-11-25T14:00:00Z");
    const o = { apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { namespace: "team", name: "run", uid: "u1" } };
    const e = coreEvent(
      o,
      terminalNote(o, new TerminalError("UnresolvableHost", 'security.network.allowlist[0]: host "x.invalid" cannot be resolved')),
      "gavel-execution-controller",
      now,
    );
    expect(e).toMatchObject({
      type: "Warning",
      reason: "UnresolvableHost",
      message: 'security.network.allowlist[0]: host "x.invalid" cannot be resolved',
      involvedObject: { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "run", namespace: "team", uid: "u1" },
      source: { component: "gavel-execution-controller" },
      count: 1,
    });
    expect(e.metadata?.name).toMatch(/^run\.terminal-[0-9a-f]{16}$/);
    // The same error again has the same name (a second create is a 409); another message does not.
    expect(
      coreEvent(
        o,
        terminalNote(o, new TerminalError("UnresolvableHost", 'security.network.allowlist[0]: host "x.invalid" cannot be resolved')),
        "gavel-execution-controller",
        now,
      ).metadata?.name,
    ).toBe(e.metadata?.name);
    expect(
      coreEvent(o, terminalNote(o, new TerminalError("UnresolvableHost", "another host")), "gavel-execution-controller", now).metadata
        ?.name,
    ).not.toBe(e.metadata?.name);
    expect(coreEvent(o, terminalNote(o, new TerminalError("R", "x".repeat(2000))), "gavel-execution-controller", now).message).toHaveLength(
      1024,
    );
  });
});

describe("keys", () => {
  it("are namespace/name; nameless objects have none", () => {
    expect(objectKey({ metadata: { name: "a", namespace: "n" } })).toBe("n/a");
    expect(objectKey({ metadata: { name: "a" } })).toBe("/a");
    expect(objectKey({ metadata: {} })).toBeUndefined();
    expect(splitKey("n/a")).toEqual({ namespace: "n", name: "a" });
    expect(splitKey("/a")).toEqual({ namespace: "", name: "a" });
  });
});
