// gavel's Executions and Agents as the Execution reconciler reads them: from its informers'
// caches when they can answer, so a reconcile with nothing to do costs no request (the scale
// bench counted ~24 GETs per Execution before: issue 24, docs/scale.md), and from the API
// server when they cannot: an object the cache does not hold, or an Execution whose cached
// copy is not the newest version this process has seen (its own status write, or a live read).
import type * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import type { Agent, Execution, ExecutionStatus } from "../api/types.js";
import type { Logger } from "../telemetry/logger.js";
import { GavelResources } from "./gavel-resources.js";
import type { WatchSource } from "./runtime/controller.js";
import { customResource, Informer, type ApiObject } from "./runtime/informer.js";

/** The reconciler's caches of Executions and Agents. */
export interface ReconcilerCaches {
  executions: Informer<Execution>;
  agents: Informer<Agent>;
}

/** The informers of Executions and Agents of the watched namespaces (all when undefined); not started. */
export function reconcilerCaches(
  kc: k8s.KubeConfig,
  namespaces: readonly string[] | undefined,
  logger: Logger,
  filter?: NamespaceFilter,
): ReconcilerCaches {
  const scope = { ...(namespaces === undefined ? {} : { namespaces }), ...(filter === undefined ? {} : { scope: filter }) };
  return {
    executions: new Informer<Execution>({ kc, resource: customResource<Execution>(kc, "execution", "executions"), ...scope, logger }),
    agents: new Informer<Agent>({ kc, resource: customResource<Agent>(kc, "agent", "agents"), ...scope, logger }),
  };
}

/** An informer the controller runtime starts and syncs with its watches, whose changes wake no key: it is only read. */
export function readOnlyWatch<T extends ApiObject>(informer: Informer<T>): WatchSource<ApiObject> {
  // Its handlers are never called with another kind: keys() ignores the object.
  return { informer: informer as unknown as Informer<ApiObject>, keys: () => [] };
}

/**
 * GavelResources whose reads of Executions and Agents go through the caches. Why each is safe:
 * - An Execution: its status is the reconciler's memory, and a copy older than the status this
 *   process last wrote would redo that reconcile's work. So the cache answers only when its
 *   copy is the newest version this process has seen (the answer of its last status write or
 *   live read); else the API server does. A newer version written by someone else and not yet
 *   in the cache (a user's cancel annotation) is missed as a live read a moment earlier would
 *   miss it: its watch event queues the key again, and a status write from the older copy is
 *   a 409 the work queue retries.
 * - An Agent: gavel never writes an Agent's spec; a cached copy is the Agent as it was when the
 *   watch last told, as a live read a moment earlier. One the cache does not hold is read live,
 *   so "Agent not found" is always the API server's answer.
 * Copies are handed out (structuredClone): a reconcile mutates what it reads.
 */
export class CachedResources extends GavelResources {
  /** Per Execution key, the newest resourceVersion seen from the API server while the cache held another. */
  private readonly newest = new Map<string, string>();

  constructor(
    kc: k8s.KubeConfig,
    private readonly caches: ReconcilerCaches,
  ) {
    super(kc);
  }

  /** The Execution from the cache when it holds the newest version this process has seen; else from the API server. */
  override async execution(namespace: string, name: string): Promise<Execution | undefined> {
    const key = `${namespace}/${name}`;
    const cached = this.caches.executions.get(name, namespace);
    const newest = this.newest.get(key);
    if (cached !== undefined && (newest === undefined || newest === cached.metadata.resourceVersion)) {
      // The cache has caught up with what this process saw last.
      this.newest.delete(key);
      return structuredClone(cached);
    }
    const live = await super.execution(namespace, name);
    this.saw(namespace, name, live?.metadata.resourceVersion);
    return live;
  }

  /** The Agent from the cache; from the API server when the cache does not hold it. */
  override async agent(namespace: string, name: string): Promise<Agent | undefined> {
    const cached = this.caches.agents.get(name, namespace);
    return cached !== undefined ? structuredClone(cached) : super.agent(namespace, name);
  }

  /** Writes the status, and remembers the version written: the cache answers for it only once it holds that version. */
  override async replaceStatus(ex: Execution, status: ExecutionStatus): Promise<Execution | undefined> {
    const got = await super.replaceStatus(ex, status);
    this.saw(ex.metadata.namespace ?? "default", ex.metadata.name, got?.metadata.resourceVersion);
    return got;
  }

  /** Records a version the API server answered with (undefined: the Execution is gone). */
  private saw(namespace: string, name: string, resourceVersion: string | undefined): void {
    const key = `${namespace}/${name}`;
    if (resourceVersion === undefined || this.caches.executions.get(name, namespace)?.metadata.resourceVersion === resourceVersion)
      this.newest.delete(key);
    else this.newest.set(key, resourceVersion);
  }
}
