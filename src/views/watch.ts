// A watch of one kind of gavel object that outlives the API server's watch timeouts: each
// time the server ends the stream it is opened again from the last resourceVersion seen,
// and a resourceVersion the server no longer has (410 Gone) restarts it from the current
// state (the objects come again as ADDED). Used by `gavel get --watch`.
import * as k8s from "@kubernetes/client-node";
import type { GavelObject } from "./kube.js";
import { collectionPath } from "./kube.js";
import type { Resource } from "./resources.js";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchOptions {
  allNamespaces: boolean;
  labelSelector?: string;
  fieldSelector?: string;
  /** Where to start: a list's resourceVersion; "" starts from the current state. */
  resourceVersion: string;
  signal: AbortSignal;
  onEvent(type: WatchEventType, obj: GavelObject): void;
  onError(err: unknown): void;
}

/** Watches until the signal aborts. */
export async function watchObjects(kc: k8s.KubeConfig, r: Resource, namespace: string, opts: WatchOptions): Promise<void> {
  const watch = new k8s.Watch(kc);
  const path = collectionPath(r, opts.allNamespaces ? undefined : namespace);
  let rv = opts.resourceVersion;
  let current: Promise<AbortController> | undefined;
  const abort = () => void current?.then((c) => c.abort());
  opts.signal.addEventListener("abort", abort, { once: true });
  while (!opts.signal.aborted) {
    const ended = await new Promise<unknown>((resolve) => {
      const params = {
        allowWatchBookmarks: true,
        ...(rv !== "" ? { resourceVersion: rv } : {}),
        ...(opts.labelSelector !== undefined ? { labelSelector: opts.labelSelector } : {}),
        ...(opts.fieldSelector !== undefined ? { fieldSelector: opts.fieldSelector } : {}),
      };
      let gone = false;
      const started = (current = watch.watch(
        path,
        params,
        (type: string, obj: GavelObject & { code?: number }) => {
          if (type === "ERROR") {
            if (obj.code === 410) gone = true;
            return;
          }
          const version = obj.metadata?.resourceVersion;
          if (version !== undefined) rv = version;
          if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") opts.onEvent(type, obj);
        },
        (err: unknown) => {
          if (gone) rv = "";
          resolve(gone ? undefined : err);
        },
      ));
      void started.catch(resolve);
    });
    if (opts.signal.aborted) break;
    if (ended !== null && ended !== undefined) {
      opts.onError(ended);
      await new Promise((res) => setTimeout(res, 1000));
    }
  }
  opts.signal.removeEventListener("abort", abort);
}
