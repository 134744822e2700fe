// What the controller keeps in ConfigMap parts (runtime/kubernetes/configmap-parts.ts), with
// the I/O: a judge child (the reconciler's validation judges, the cluster gate's tool judges)
// after the parts of a payload too large for a pod's env, and a worker run's result after the
// parts of an output larger than one ConfigMap. Deterministic names make a retry, or another
// replica, adopt what exists.
import type * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Execution } from "../api/types.js";
import { storedJudgeChild } from "../children/child-executions.js";
import type { WorkerObservation } from "../engine/outer-loop.js";
import { createOrAdopt, isNotFound } from "../errors.js";
import { partName } from "../runtime/kubernetes.js";
import { resultName, resultPartsOf, resultPartsPrefix, workerResultOf } from "./execution-pods.js";

/** Creates a judge child (and its payload parts before it); false when the child already existed. */
export async function createJudgeChild(api: { core: k8s.CoreV1Api; custom: k8s.CustomObjectsApi }, child: Execution): Promise<boolean> {
  const namespace = child.metadata.namespace ?? "default";
  const stored = storedJudgeChild(child);
  for (const body of stored.parts) await createOrAdopt(() => api.core.createNamespacedConfigMap({ namespace, body }));
  return createOrAdopt(() =>
    api.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", body: stored.execution }),
  );
}

/** Keeps a finished worker run's result (its output's parts first, resultConfigMaps' order). */
export async function storeWorkerResult(core: k8s.CoreV1Api, namespace: string, configMaps: readonly k8s.V1ConfigMap[]): Promise<void> {
  for (const body of configMaps) await createOrAdopt(() => core.createNamespacedConfigMap({ namespace, body }));
}

/** A worker run's stored result with its whole output; undefined when none is stored. */
export async function readWorkerResult(core: k8s.CoreV1Api, namespace: string, worker: string): Promise<WorkerObservation | undefined> {
  let cm: k8s.V1ConfigMap;
  try {
    cm = await core.readNamespacedConfigMap({ name: resultName(worker), namespace });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const described = resultPartsOf(cm);
  const parts =
    described === undefined
      ? []
      : await Promise.all(
          Array.from({ length: described.parts }, (_, k) =>
            core.readNamespacedConfigMap({ name: partName(resultPartsPrefix(worker), k), namespace }),
          ),
        );
  return workerResultOf(cm, parts);
}
