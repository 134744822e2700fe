// What the controller keeps in ConfigMaps, with the I/O: a judge child (the reconciler's
// validation judges, the cluster gate's tool judges) after the parts of a payload too large for
// a pod's env, and a worker run's result (`<worker>-result`) after the parts of an output
// larger than one ConfigMap (runtime/kubernetes/configmap-parts.ts). Deterministic names make a
// retry, or another replica, adopt what exists.
import type * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Execution } from "../api/types.js";
import { storedJudgeChild } from "../children/child-executions.js";
import { CHILD_LABELS, type OwnerMarks } from "../children/workloads.js";
import type { WorkerObservation } from "../engine/outer-loop.js";
import { createOrAdopt, isNotFound } from "../errors.js";
import {
  describeParts,
  descriptorText,
  joinParts,
  parseDescriptor,
  PART_BYTES,
  partConfigMaps,
  partName,
  type PartsDescriptor,
} from "../runtime/kubernetes.js";

/** Key of the result ConfigMap that names the parts of a worker output too large to keep inline. */
const STDOUT_PARTS = "stdoutParts";

/** Creates a judge child (and its payload parts before it); false when the child already existed. */
export async function createJudgeChild(api: { core: k8s.CoreV1Api; custom: k8s.CustomObjectsApi }, child: Execution): Promise<boolean> {
  const namespace = child.metadata.namespace ?? "default";
  const stored = storedJudgeChild(child);
  for (const body of stored.parts) await createOrAdopt(() => api.core.createNamespacedConfigMap({ namespace, body }));
  return createOrAdopt(() =>
    api.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", body: stored.execution }),
  );
}

/** Keeps a finished worker run's result, owned by its Execution (its output's parts first, resultConfigMaps' order); `node`: where it ran. */
export async function storeWorkerResult(
  core: k8s.CoreV1Api,
  owner: OwnerMarks,
  worker: string,
  w: WorkerObservation,
  node?: string,
): Promise<void> {
  for (const body of resultConfigMaps(owner, worker, w, node))
    await createOrAdopt(() => core.createNamespacedConfigMap({ namespace: owner.namespace, body }));
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

/** Name of the ConfigMap holding a finished worker run's result. */
export function resultName(worker: string): string {
  return `${worker}-result`.slice(0, 253);
}

/** Prefix of the ConfigMap parts of a worker output larger than one part: `<worker>-result-out`. */
export function resultPartsPrefix(worker: string): string {
  return outputPartsPrefix(resultName(worker));
}

function outputPartsPrefix(result: string): string {
  return `${result}-out`;
}

/**
 * The ConfigMaps that keep a finished worker run's result, so a restarted controller still
 * has it: the result `<worker>-result` (last) with the output inline, or, for an output larger
 * than one part (up to the runtime's 8 MiB cap), the parts `<worker>-result-out-NN` first and
 * their descriptor in the result, and the worker's node. Create them in order.
 */
export function resultConfigMaps(owner: OwnerMarks, worker: string, w: WorkerObservation, node?: string): k8s.V1ConfigMap[] {
  const labels = { [CHILD_LABELS.execution]: owner.label, [CHILD_LABELS.iteration]: String(w.iteration) };
  const ownerReferences = [owner.reference];
  const bytes = Buffer.from(w.stdout);
  const parts = bytes.length > PART_BYTES ? partConfigMaps(resultPartsPrefix(worker), bytes, { labels, ownerReferences }) : [];
  const result: k8s.V1ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: resultName(worker), labels, ownerReferences },
    immutable: true,
    data: {
      iteration: String(w.iteration),
      exitCode: String(w.exitCode),
      timedOut: String(w.timedOut),
      cancelled: String(w.cancelled),
      ...(parts.length > 0 ? { [STDOUT_PARTS]: descriptorText(describeParts(bytes)) } : { stdout: w.stdout }),
      stderr: w.stderr.slice(-4096),
      ...(w.streamsMerged !== undefined ? { streamsMerged: w.streamsMerged } : {}),
      // Where the worker ran (its ReadWriteOnce claims are attached there): judges that share them run there too.
      ...(node !== undefined ? { node } : {}),
    },
  };
  return [...parts, result];
}

/** The descriptor of the output parts a result ConfigMap names; undefined when its output is inline. */
export function resultPartsOf(cm: k8s.V1ConfigMap): PartsDescriptor | undefined {
  return parseDescriptor(cm.data?.[STDOUT_PARTS]);
}

/** The worker result a result ConfigMap (and its output's parts, read in order) holds; undefined when it is not one. */
export function workerResultOf(cm: k8s.V1ConfigMap, parts: readonly k8s.V1ConfigMap[] = []): WorkerObservation | undefined {
  const d = cm.data;
  if (d === undefined) return undefined;
  const iteration = Number(d.iteration);
  const exitCode = Number(d.exitCode);
  if (!Number.isInteger(iteration) || !Number.isInteger(exitCode)) return undefined;
  const described = resultPartsOf(cm);
  const stdout =
    described === undefined ? (d.stdout ?? "") : joinParts(outputPartsPrefix(cm.metadata?.name ?? ""), described, parts).toString("utf8");
  return {
    iteration,
    exitCode,
    stdout,
    stderr: d.stderr ?? "",
    timedOut: d.timedOut === "true",
    cancelled: d.cancelled === "true",
    ...(d.streamsMerged !== undefined ? { streamsMerged: d.streamsMerged } : {}),
  };
}
