// A supervised list + watch of one resource kind with a cache (client-go's reflector and
// indexer, in small): lists, watches from the list's resourceVersion, and after a watch error
// (an ERROR event such as 410 Gone, a refused or broken connection) lists again with backoff.
import * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION } from "../../api/types.js";
import { Backoff, sleep } from "../../backoff.js";
import { messageOf } from "../../errors.js";
import { type Logger } from "../../telemetry/logger.js";
import { type NamespaceFilter } from "./namespace-scope.js";

/** What the runtime reads of any API object (client-node's and gavel's own types both fit). */
export interface ApiObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** A list answer: the items and the resourceVersion to watch from. */
export interface ResourceList<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

/** Where a kind lives in the API: its watch path and how to list it, per namespace or all (undefined). */
export interface Resource<T extends ApiObject> {
  /** Name for logs: agent, execution, pod, guardpolicy. */
  kind: string;
  path(namespace: string | undefined): string;
  list(namespace: string | undefined): Promise<ResourceList<T>>;
  labelSelector?: string;
}

/** A gavel custom resource (group 100monkeys.ai) by its plural; only those carrying `labelSelector` when given. */
export function customResource<T extends ApiObject>(kc: k8s.KubeConfig, kind: string, plural: string, labelSelector?: string): Resource<T> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  return {
    kind,
    ...(labelSelector !== undefined ? { labelSelector } : {}),
    path: (ns) => (ns === undefined ? `/apis/${GROUP}/${VERSION}/${plural}` : `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${plural}`),
    list: async (ns) => {
      const params = { group: GROUP, version: VERSION, plural, ...(labelSelector !== undefined ? { labelSelector } : {}) };
      const got: unknown =
        ns === undefined ? await api.listClusterCustomObject(params) : await api.listNamespacedCustomObject({ ...params, namespace: ns });
      return got as ResourceList<T>;
    },
  };
}

/** Pods carrying a label selector. */
export function podResource(kc: k8s.KubeConfig, labelSelector: string): Resource<k8s.V1Pod> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    kind: "pod",
    labelSelector,
    path: (ns) => (ns === undefined ? "/api/v1/pods" : `/api/v1/namespaces/${ns}/pods`),
    list: (ns) =>
      ns === undefined ? core.listPodForAllNamespaces({ labelSelector }) : core.listNamespacedPod({ namespace: ns, labelSelector }),
  };
}

/** What changed in the cache. A relist reports every listed object (update) and every vanished one (delete). */
export type InformerEvent = "add" | "update" | "delete";

/** Options of an Informer. */
export interface InformerOptions<T extends ApiObject> {
  kc: k8s.KubeConfig;
  resource: Resource<T>;
  /** Namespaces to watch, one list + watch each; all namespaces when undefined. */
  namespaces?: readonly string[];
  /**
   * Only objects of the namespaces this admits are in the cache (--namespace-selector); the
   * others are held aside and enter, with an add, when their namespace enters the scope.
   */
  scope?: NamespaceFilter;
  /** Server-side watch timeout: the watch then resumes from the last resourceVersion without a list. Default 300. */
  watchTimeoutSeconds?: number;
  /** Pause before the first relist after a failure, in ms (default 200); doubles per consecutive failure. */
  backoffBaseMs?: number;
  /** Upper bound of that pause, in ms (default 5 000). */
  backoffMaxMs?: number;
  /**
   * What of an object the cache keeps (client-go's TransformFunc), applied before handlers see it.
   * Default withoutManagedFields: no controller reads them, and they are about a third of an object.
   */
  transform?: (obj: T) => T;
  logger?: Logger;
}

/** An object without metadata.managedFields (the API server keeps them; a status PUT without them leaves them as they are). */
export function withoutManagedFields<T extends ApiObject>(obj: T): T {
  const meta = obj.metadata as (T["metadata"] & { managedFields?: unknown }) | undefined;
  if (meta?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...rest } = meta;
  return { ...obj, metadata: rest };
}

/** The cache key of an object: namespace/name (namespace empty for cluster-scoped objects). */
export function objectKey(obj: { metadata?: { name?: string; namespace?: string } }): string | undefined {
  const name = obj.metadata?.name;
  if (typeof name !== "string" || name === "") return undefined;
  return `${obj.metadata?.namespace ?? ""}/${name}`;
}

/** namespace and name of a key made by objectKey. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** One kind's objects, kept equal to the server's by list + watch; handlers hear every change. */
export class Informer<T extends ApiObject> {
  private readonly cache = new Map<string, T>();
  /** Objects of namespaces the scope does not admit (yet), by key. */
  private readonly aside = new Map<string, T>();
  private readonly handlers: ((event: InformerEvent, obj: T) => void)[] = [];
  private readonly streams: Stream<T>[];
  private relists = 0;
  private readonly transform: (obj: T) => T;

  constructor(private readonly opts: InformerOptions<T>) {
    this.transform = opts.transform ?? withoutManagedFields;
    const scopes: (string | undefined)[] = opts.namespaces === undefined ? [undefined] : [...new Set(opts.namespaces)];
    this.streams = scopes.map((ns) => new Stream(this, opts, ns));
    opts.scope?.onChange((ns, admitted) => this.rescope(ns, admitted));
  }

  private admits(obj: T): boolean {
    return this.opts.scope?.admits(obj.metadata?.namespace ?? "") ?? true;
  }

  /** A namespace entered or left the scope: its objects move into the cache (add) or out of it (delete). */
  private rescope(namespace: string, admitted: boolean): void {
    const [from, to] = admitted ? [this.aside, this.cache] : [this.cache, this.aside];
    for (const [k, o] of [...from]) {
      if ((o.metadata?.namespace ?? "") !== namespace) continue;
      from.delete(k);
      to.set(k, o);
      this.emit(admitted ? "add" : "delete", o);
    }
  }

  /** Adds a change handler (call before start()). */
  on(handler: (event: InformerEvent, obj: T) => void): void {
    this.handlers.push(handler);
  }

  /**
   * Lists every scope, then watches in the background. A first list that fails (the API
   * server unreachable, a missing CRD or grant) is tried again with backoff until it succeeds
   * or stop() is called: start() resolves then, and `synced` tells which.
   */
  async start(): Promise<void> {
    await Promise.all(this.streams.map((s) => s.start()));
  }

  /** True once every scope has been listed (client-go's HasSynced): the cache holds the server's objects. */
  get synced(): boolean {
    return this.streams.every((s) => s.synced) && (this.opts.scope?.synced ?? true);
  }

  /** Why the cache is not synced yet (each unlisted scope and its last list error), or undefined once it is. */
  unsynced(): string | undefined {
    const waiting = this.streams.filter((s) => !s.synced).map((s) => s.why());
    if (this.opts.scope?.synced === false) waiting.push("namespaces of --namespace-selector not listed yet");
    return waiting.length === 0 ? undefined : waiting.join("; ");
  }

  /** Stops every watch; the cache keeps what it held. */
  async stop(): Promise<void> {
    await Promise.all(this.streams.map((s) => s.stop()));
  }

  /** The cached object, if any. */
  get(name: string, namespace?: string): T | undefined {
    return this.cache.get(`${namespace ?? ""}/${name}`);
  }

  /** Cached objects of one namespace, or all. */
  list(namespace?: string): T[] {
    const all = [...this.cache.values()];
    return namespace === undefined ? all : all.filter((o) => (o.metadata?.namespace ?? "") === namespace);
  }

  /** Full lists made after the first one of each scope (after watch errors or 410 Gone). */
  get relistCount(): number {
    return this.relists;
  }

  /** A stream's full list of its scope: objects of the scope missing from it were deleted. */
  replaceScope(namespace: string | undefined, items: readonly T[], initial: boolean): void {
    if (!initial) this.relists++;
    const listed = new Map<string, T>();
    const inScope = (o: T) => namespace === undefined || (o.metadata?.namespace ?? "") === namespace;
    for (const [k, o] of [...this.aside]) if (inScope(o)) this.aside.delete(k);
    for (const o of items) {
      const k = objectKey(o);
      if (k === undefined) continue;
      const kept = this.transform(o);
      if (this.admits(kept)) listed.set(k, kept);
      else this.aside.set(k, kept);
    }
    // Deletions first, so a handler never sees a set that still holds a removed object.
    for (const [k, o] of [...this.cache]) {
      if (inScope(o) && !listed.has(k)) {
        this.cache.delete(k);
        this.emit("delete", o);
      }
    }
    for (const [k, o] of listed) {
      const had = this.cache.has(k);
      this.cache.set(k, o);
      this.emit(had ? "update" : "add", o);
    }
  }

  /** A stream's watch event. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", received: T): void {
    const k = objectKey(received);
    if (k === undefined) return;
    const obj = this.transform(received);
    if (!this.admits(obj)) {
      if (type === "DELETED") this.aside.delete(k);
      else this.aside.set(k, obj);
      return;
    }
    if (type === "DELETED") {
      this.cache.delete(k);
      this.emit("delete", obj);
      return;
    }
    const had = this.cache.has(k);
    this.cache.set(k, obj);
    this.emit(had ? "update" : "add", obj);
  }

  private emit(event: InformerEvent, obj: T): void {
    for (const h of this.handlers) {
      try {
        h(event, obj);
      } catch (err) {
        // A handler's bug must not break the watch (client-go's handlers cannot fail either).
        this.opts.logger?.error({ kind: this.opts.resource.kind, event, err: messageOf(err) }, "informer handler failed");
      }
    }
  }
}

/** How a watch ended: cleanly (resume from the last resourceVersion), or needing a full list. */
type WatchEnd = { relist: false } | { relist: true; err: unknown };

/** List + watch of one scope (a namespace, or all), relisting with backoff after errors. */
class Stream<T extends ApiObject> {
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  /** Aborted by stop(): ends a backoff pause at once. */
  private readonly stopping = new AbortController();
  private listed = false;
  private lastError: string | undefined;

  constructor(
    private readonly informer: Informer<T>,
    private readonly opts: InformerOptions<T>,
    private readonly namespace: string | undefined,
  ) {}

  /** Whether this scope has been listed once. */
  get synced(): boolean {
    return this.listed;
  }

  /** This scope, and why it is not listed yet. */
  why(): string {
    return `${this.opts.resource.kind} (${this.namespace ?? "all namespaces"}) not listed yet${this.lastError === undefined ? "" : `: ${this.lastError}`}`;
  }

  async start(): Promise<void> {
    const backoff = new Backoff({ initialMs: this.opts.backoffBaseMs ?? 200, maxMs: this.opts.backoffMaxMs ?? 5_000 });
    const what = `${this.opts.resource.kind} watch (${this.namespace ?? "all namespaces"})`;
    let rv = "";
    // The first list is retried like any later one: a controller started while the API server
    // is unreachable waits (not ready) instead of exiting.
    while (!this.stopped) {
      try {
        rv = await this.list(true);
        this.listed = !this.stopped;
        break;
      } catch (err) {
        if (this.stopped) break;
        this.lastError = messageOf(err);
        const pause = backoff.next();
        this.opts.logger?.warn({ watch: what, retryInMs: pause, err: this.lastError }, "first list failed, retrying");
        await sleep(pause, this.stopping.signal);
      }
    }
    if (!this.listed) return;
    backoff.reset();
    this.loop = (async () => {
      let needList = false;
      while (!this.stopped) {
        let pause: number;
        try {
          if (needList) {
            rv = await this.list(false);
            needList = false;
          }
          const end = await this.watchFrom(rv, (v) => (rv = v));
          if (!end.relist) {
            backoff.reset();
            continue;
          }
          needList = true;
          if (this.stopped) return;
          pause = backoff.next();
          this.opts.logger?.warn({ watch: what, retryInMs: pause, err: messageOf(end.err) }, "watch broke, relisting");
        } catch (err) {
          needList = true;
          if (this.stopped) return;
          pause = backoff.next();
          this.opts.logger?.warn({ watch: what, retryInMs: pause, err: messageOf(err) }, "list failed, retrying");
        }
        await sleep(pause, this.stopping.signal);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    this.stopping.abort();
    await this.loop;
  }

  private async list(initial: boolean): Promise<string> {
    const got = await this.opts.resource.list(this.namespace);
    if (this.stopped) return "";
    this.informer.replaceScope(this.namespace, got.items, initial);
    return got.metadata?.resourceVersion ?? "";
  }

  private watchFrom(resourceVersion: string, seen: (rv: string) => void): Promise<WatchEnd> {
    const query: Record<string, string | number | boolean> = {
      resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: this.opts.watchTimeoutSeconds ?? 300,
    };
    if (this.opts.resource.labelSelector !== undefined) query.labelSelector = this.opts.resource.labelSelector;
    return new Promise<WatchEnd>((resolve) => {
      let result: WatchEnd = { relist: false };
      const onEvent = (type: string, obj: unknown): void => {
        if (this.stopped) return;
        if (type === "ERROR") {
          // 410 Gone (resourceVersion too old) or any other error event: only a relist is safe.
          result = { relist: true, err: statusError(obj) };
          this.abort?.abort();
          return;
        }
        const o = obj as T;
        const rv = o.metadata?.resourceVersion;
        if (rv !== undefined && rv !== "") seen(rv);
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") this.informer.apply(type, o);
      };
      const onDone = (err: unknown): void => {
        if (err !== null && err !== undefined && !result.relist && !this.stopped) result = { relist: true, err };
        resolve(result);
      };
      new k8s.Watch(this.opts.kc)
        .watch(this.opts.resource.path(this.namespace), query, onEvent, onDone)
        .then((ac) => {
          this.abort = ac;
          if (this.stopped) ac.abort();
        })
        .catch((err: unknown) => resolve({ relist: true, err }));
    });
  }
}

/** A watch ERROR event's metav1.Status as an Error (its message says 410 Gone and why). */
function statusError(obj: unknown): Error {
  const s = (obj ?? {}) as { code?: unknown; reason?: unknown; message?: unknown };
  const text = (v: unknown, fallback: string) => (typeof v === "string" || typeof v === "number" ? String(v) : fallback);
  const err = new Error(`HTTP ${text(s.code, "?")} ${text(s.reason, "")}: ${text(s.message, "watch error")}`);
  if (typeof s.code === "number") (err as Error & { code?: number }).code = s.code;
  return err;
}
