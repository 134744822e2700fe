// An Execution deleted and created again at once under the same name: the garbage collector
// removes the first run's objects a moment later (pods may take their grace period), but
// gavel names a run's pods, judge children and stored results after the Execution's name,
// so the second run would find them and take them for its own (a worker result it never
// produced, a terminating worker pod, a workspace claim holding the first run's files). Before
// a run starts, what an earlier run of its name left is removed or waited for; the run starts
// once none is left.
import type * as k8s from "@kubernetes/client-node";
import type { Execution } from "../api/types.js";
import { CHILD_LABELS, labelValue } from "../children/workloads.js";
import { ignoreNotFound } from "../errors.js";
import { workerName } from "../engine/child-names.js";
import { controllingOwner, type Owned } from "./execution-pods.js";
import { resultName } from "./stored-parts.js";

/** What this module reads and deletes: the reconciler's caches and the core API. */
export interface EarlierRunAccess {
  core: k8s.CoreV1Api;
  pods: { list(namespace?: string): k8s.V1Pod[] };
  executions: { list(namespace?: string): Execution[] };
}

/** An object left by an earlier run of the name, and whether gavel removes it or the garbage collector does. */
export interface Leftover {
  kind: "Pod" | "Execution" | "ConfigMap" | "PersistentVolumeClaim";
  name: string;
  /** The uid of the earlier Execution that owns it. */
  owner: string;
}

/**
 * The objects of earlier runs of `ex`'s name still there: pods it controlled and judge
 * children (from the caches), the stored worker result of the first iteration and the
 * workspace claims named in `claims` (read).
 */
export async function earlierRunLeftovers(access: EarlierRunAccess, ex: Execution, claims: readonly string[] = []): Promise<Leftover[]> {
  const namespace = ex.metadata.namespace ?? "default";
  const name = ex.metadata.name;
  const uid = ex.metadata.uid;
  const out: Leftover[] = [];
  for (const pod of access.pods.list(namespace)) {
    const owner = controllingOwner(pod);
    if (owner?.name === name && owner.uid !== uid) out.push({ kind: "Pod", name: pod.metadata?.name ?? "", owner: owner.uid });
  }
  for (const child of access.executions.list(namespace)) {
    const parent = child.spec?.parent;
    if (parent?.name === name && parent.uid !== undefined && parent.uid !== uid)
      out.push({ kind: "Execution", name: child.metadata.name, owner: parent.uid });
  }
  const result = resultName(workerName(name, 1));
  const earlier = (obj: Owned | undefined): string | undefined => {
    const owner = obj === undefined ? undefined : controllingOwner(obj)?.uid;
    return owner !== undefined && owner !== uid ? owner : undefined;
  };
  const cmOwner = earlier(await access.core.readNamespacedConfigMap({ name: result, namespace }).catch(ignoreNotFound));
  if (cmOwner !== undefined) out.push({ kind: "ConfigMap", name: result, owner: cmOwner });
  for (const claim of claims) {
    // A claim is the garbage collector's to delete (its protection finalizer waits for the pods that mount it).
    const owner = earlier(await access.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace }).catch(ignoreNotFound));
    if (owner !== undefined) out.push({ kind: "PersistentVolumeClaim", name: claim, owner });
  }
  return out;
}

/**
 * Removes what gavel may remove of an earlier run's leftovers (pods at once; the stored
 * results with every ConfigMap labelled with the name, none of which the new run has made
 * before it starts); judge children and workspace claims go with the garbage collector
 * (gavel may not delete Executions or claims). Returns why the run waits, or undefined when
 * nothing was left.
 */
export async function removeEarlierRun(
  access: EarlierRunAccess,
  ex: Execution,
  claims: readonly string[] = [],
): Promise<string | undefined> {
  const left = await earlierRunLeftovers(access, ex, claims);
  if (left.length === 0) return undefined;
  const namespace = ex.metadata.namespace ?? "default";
  for (const l of left) {
    if (l.kind === "Pod") await access.core.deleteNamespacedPod({ name: l.name, namespace, gracePeriodSeconds: 0 }).catch(ignoreNotFound);
  }
  if (left.some((l) => l.kind === "ConfigMap")) {
    await access.core.deleteCollectionNamespacedConfigMap({
      namespace,
      labelSelector: `${CHILD_LABELS.execution}=${labelValue(ex.metadata.name)}`,
    });
  }
  const owners = [...new Set(left.map((l) => l.owner))].join(", ");
  return `waiting for ${left.length} object(s) of an earlier Execution named ${ex.metadata.name} (uid ${owners}) to be deleted: ${left.map((l) => `${l.kind} ${l.name}`).join(", ")}`.slice(
    0,
    1024,
  );
}
