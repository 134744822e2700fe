// How the cluster commands (get, describe, logs, ui) reach the API server: kubectl's flags
// (--kubeconfig, --context, -n, -A) and its namespace rule (the flag, else the context's
// namespace, else "default"), and read-only helpers over gavel's custom resources.
import * as k8s from "@kubernetes/client-node";
import { loadKubeConfig } from "../controller/runtime.js";
import type { Agent, Execution, GuardPolicy, ToolApproval } from "../api/types.js";
import { GROUP, VERSION } from "../api/types.js";
import { isNotFound, NotFoundError, typedError } from "../errors.js";
import { CHILD_LABELS, labelValue } from "../children/workloads.js";
import { EXECUTIONS, type Resource } from "./resources.js";

/** parseArgs options shared by every cluster command. */
export const KUBE_FLAGS = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  namespace: { type: "string", short: "n" },
} as const;

export interface KubeFlags {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

/** A connection to one cluster and the namespace the command works in. */
export interface Kube {
  kc: k8s.KubeConfig;
  namespace: string;
  custom: k8s.CustomObjectsApi;
  core: k8s.CoreV1Api;
}

/** Loads the kubeconfig as kubectl does ($KUBECONFIG, ~/.kube/config, in-cluster) and picks the namespace. */
export function connectKube(flags: KubeFlags, io: { env: NodeJS.ProcessEnv }): Kube {
  const kc = loadKubeConfig(flags.kubeconfig ?? io.env.KUBECONFIG);
  if (flags.context !== undefined) {
    if (kc.getContextObject(flags.context) === null) throw new Error(`context "${flags.context}" is not in the kubeconfig`);
    kc.setCurrentContext(flags.context);
  }
  return kubeOf(kc, flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default");
}

/** A Kube over a loaded kubeconfig (the controller's own, for the web view it serves). */
export function kubeOf(kc: k8s.KubeConfig, namespace: string): Kube {
  return { kc, namespace, custom: kc.makeApiClient(k8s.CustomObjectsApi), core: kc.makeApiClient(k8s.CoreV1Api) };
}

export type GavelObject = Execution | Agent | GuardPolicy | ToolApproval;

/** Lists objects of a kind in one namespace (or all, when namespace is undefined). */
export async function listObjects<T extends GavelObject>(
  kube: Kube,
  r: Resource,
  namespace: string | undefined,
  labelSelector?: string,
): Promise<{ items: T[]; resourceVersion: string }> {
  const params = { group: GROUP, version: VERSION, plural: r.plural, ...(labelSelector !== undefined ? { labelSelector } : {}) };
  const list = (
    namespace === undefined
      ? await kube.custom.listCustomObjectForAllNamespaces(params)
      : await kube.custom.listNamespacedCustomObject({ ...params, namespace })
  ) as { items: T[]; metadata?: { resourceVersion?: string } };
  return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? "" };
}

/** Reads one object; NotFound (naming kind, name and namespace) when it does not exist. */
export async function getObject<T extends GavelObject>(kube: Kube, r: Resource, namespace: string, name: string): Promise<T> {
  try {
    return (await kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: r.plural, namespace, name })) as T;
  } catch (err) {
    if (isNotFound(err)) throw new NotFoundError(`${r.plural} "${name}" not found in namespace "${namespace}"`, { cause: err });
    throw typedError(err, `reading ${r.plural} "${name}" in namespace "${namespace}"`);
  }
}

/** Reads one object, or undefined when it does not exist. */
export async function findObject<T extends GavelObject>(kube: Kube, r: Resource, namespace: string, name: string): Promise<T | undefined> {
  try {
    return await getObject<T>(kube, r, namespace, name);
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}

/** The API path of a kind's collection, for a watch. */
export function collectionPath(r: Resource, namespace: string | undefined): string {
  return namespace === undefined
    ? `/apis/${GROUP}/${VERSION}/${r.plural}`
    : `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${r.plural}`;
}

/** The judge child Executions of one Execution (label gavel.dev/parent, then spec.parent.name, as labels are cut at 63). */
export async function childrenOf(kube: Kube, namespace: string, parent: string): Promise<Execution[]> {
  const { items } = await listObjects<Execution>(kube, EXECUTIONS, namespace, `${CHILD_LABELS.parent}=${labelValue(parent)}`);
  return items.filter((c) => c.spec.parent?.name === parent);
}
