// The namespaces a controller started with --namespace-selector reconciles: those whose labels
// match the selector, kept by a list + watch of Namespaces with that label selector, so the API
// server does the matching (a namespace relabelled out of the selector arrives as a deletion).
// Informers given this scope keep objects of other namespaces out of their caches (ADR 0081).
import * as k8s from "@kubernetes/client-node";
import { type Logger } from "../../telemetry/logger.js";
import { Informer, type Resource } from "./informer.js";

/** Which namespaces an informer keeps: admits(ns) now, and each change of it. */
export interface NamespaceFilter {
  admits(namespace: string): boolean;
  /** True once the namespaces have been listed: until then admits() may say no to a namespace that matches. */
  readonly synced: boolean;
  /** Calls `handler` when a namespace enters (true) or leaves (false) the scope. */
  onChange(handler: (namespace: string, admitted: boolean) => void): void;
}

/** Options of a NamespaceScope. */
export interface NamespaceScopeOptions {
  kc: k8s.KubeConfig;
  /** A Kubernetes label selector (e.g. `team=a`, `!gavel.dev/lane`, `env in (dev,ci)`). */
  selector: string;
  logger?: Logger;
}

/** Namespaces carrying a label selector (cluster-scoped). */
function namespaceResource(kc: k8s.KubeConfig, labelSelector: string): Resource<k8s.V1Namespace> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return { kind: "namespace", labelSelector, path: () => "/api/v1/namespaces", list: () => core.listNamespace({ labelSelector }) };
}

/** The namespaces matching a label selector, as a filter for informers. */
export class NamespaceScope implements NamespaceFilter {
  private readonly informer: Informer<k8s.V1Namespace>;
  private readonly handlers: ((namespace: string, admitted: boolean) => void)[] = [];

  constructor(opts: NamespaceScopeOptions) {
    this.informer = new Informer<k8s.V1Namespace>({
      kc: opts.kc,
      resource: namespaceResource(opts.kc, opts.selector),
      ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    });
    this.informer.on((event, ns) => {
      const name = ns.metadata?.name ?? "";
      if (event === "update") return;
      for (const h of this.handlers) h(name, event === "add");
    });
  }

  admits(namespace: string): boolean {
    return this.informer.get(namespace) !== undefined;
  }

  get synced(): boolean {
    return this.informer.synced;
  }

  /** Why the namespaces are not listed yet, or undefined once they are. */
  unsynced(): string | undefined {
    return this.informer.unsynced();
  }

  onChange(handler: (namespace: string, admitted: boolean) => void): void {
    this.handlers.push(handler);
  }

  /** Lists the matching namespaces, then watches them (resolves once listed, or once stop() is called). */
  start(): Promise<void> {
    return this.informer.start();
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }
}

/** `filter`, and `namespace` whatever its labels (the controller's own: its cluster-default GuardPolicy lives there). */
export function alsoAdmitting(filter: NamespaceFilter, namespace: string): NamespaceFilter {
  return {
    admits: (ns) => ns === namespace || filter.admits(ns),
    get synced() {
      return filter.synced;
    },
    onChange: (handler) =>
      filter.onChange((ns, admitted) => {
        if (ns !== namespace) handler(ns, admitted);
      }),
  };
}
