// Every object of one kind the API server created in a namespace from some moment on, counted
// from a watch (not from gavel's own counters): each uid once, with its name, labels and
// owners, also when it is gone by the end. What "no pod created twice for one step" is checked
// with. A watch the server ends (a timeout, a compaction) resumes from the last resourceVersion
// seen, or from a fresh list when that is too old.
import * as k8s from "@kubernetes/client-node";
import { messageOf } from "../../src/errors.js";

/** One object as it was when the watch first saw it. */
export interface SeenObject {
  uid: string;
  name: string;
  labels: Record<string, string>;
  owners: string[];
  /** When the watch first saw it (ms, the test's clock). */
  seenAt: number;
}

/** The objects seen so far, by uid, and the watch's stop. */
export interface CreatedObjects {
  seen: Map<string, SeenObject>;
  /** Names seen with more than one uid: created, deleted and created again. */
  recreated(): Map<string, SeenObject[]>;
  stop(): Promise<void>;
}

type Listed = { metadata?: { resourceVersion?: string }; items: k8s.KubernetesObject[] };

/** A kind of object: its apiVersion, Kind and plural. */
export interface Resource {
  apiVersion: string;
  kind: string;
  plural: string;
}

export const PODS: Resource = { apiVersion: "v1", kind: "Pod", plural: "pods" };

/** Watches `resource` in `namespace` from a list now on. Resolves once the first list is in. */
export async function watchCreated(kc: k8s.KubeConfig, resource: Resource, namespace: string): Promise<CreatedObjects> {
  const group = resource.apiVersion === "v1" ? "/api/v1" : `/apis/${resource.apiVersion}`;
  const path = `${group}/namespaces/${namespace}/${resource.plural}`;
  const seen = new Map<string, SeenObject>();
  const note = (o: k8s.KubernetesObject) => {
    const uid = o.metadata?.uid;
    if (uid === undefined || seen.has(uid)) return;
    seen.set(uid, {
      uid,
      name: o.metadata?.name ?? "",
      labels: o.metadata?.labels ?? {},
      owners: (o.metadata?.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`),
      seenAt: Date.now(),
    });
  };
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const list = async (): Promise<string> => {
    const l = (await objects.list(resource.apiVersion, resource.kind, namespace)) as unknown as Listed;
    for (const o of l.items) note(o);
    return l.metadata?.resourceVersion ?? "";
  };
  let resourceVersion = await list();
  let stopped = false;
  let abort: AbortController | undefined;
  let ended: () => void = () => undefined;
  const loop = (async () => {
    while (!stopped) {
      const done = new Promise<unknown>((resolve) => (ended = () => resolve(undefined)));
      let gone = false;
      abort = await new k8s.Watch(kc)
        .watch(
          path,
          { resourceVersion, allowWatchBookmarks: true },
          (type: string, obj: k8s.KubernetesObject & { code?: number }) => {
            if (type === "ERROR") {
              gone = obj.code === 410;
              return;
            }
            if (obj.metadata?.resourceVersion !== undefined) resourceVersion = obj.metadata.resourceVersion;
            if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") note(obj);
          },
          (err: unknown) => {
            if (err !== null && err !== undefined) gone ||= /410|too old/i.test(messageOf(err));
            ended();
          },
        )
        .catch((err: unknown) => {
          gone = /410|too old/i.test(messageOf(err));
          ended();
          return undefined;
        });
      await done;
      if (stopped) break;
      if (gone) resourceVersion = await list().catch(() => resourceVersion);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    seen,
    recreated() {
      const byName = new Map<string, SeenObject[]>();
      for (const o of seen.values()) byName.set(o.name, [...(byName.get(o.name) ?? []), o]);
      return new Map([...byName].filter(([, os]) => os.length > 1));
    },
    async stop() {
      stopped = true;
      abort?.abort();
      ended();
      await loop;
    },
  };
}
