// The objects the Execution reconciler creates for one Execution, built without I/O: the
// workloads of its worker, judges and copiers with their placement (deterministic names,
// owned by the Execution; PodWorkloads makes them pods), workspace claims and snapshots. A
// reader's workload is file-readers.ts's, the stored worker result stored-parts.ts's.
import type * as k8s from "@kubernetes/client-node";
import { API_VERSION, type Agent, type Execution, type VolumeSpec, type WorkspaceStrategy } from "../api/types.js";
import type { RuntimeTable } from "../children/runtime-table.js";
import {
  CHILD_LABELS,
  INPUT_ANNOTATION,
  INPUT_DIR,
  judgeWorkload,
  labelValue,
  ownerMarks,
  ownerOf,
  type OwnerMarks,
} from "../children/workloads.js";
import { inputPartsPrefix } from "../children/child-executions.js";
import { parseDescriptor, podName, type PodPlacement, type PodSidecar } from "../runtime/kubernetes.js";
import { DEFAULT_JUDGE_TIMEOUT_SECONDS, parseDurationSeconds } from "../engine/durations.js";
import type { WorkloadMount, WorkloadSpec } from "../runtime/workload.js";

/** Runtime-instance label value of every pod the reconciler makes (pod names end in it). */
export const EXECUTION_INSTANCE = "ex";
/** Annotation a user sets (any value) to cancel a running Execution. */
export const CANCEL_ANNOTATION = "gavel.dev/cancel";

export type Owned = {
  metadata?: { ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean; apiVersion: string }[] };
};

/** The ownerReference of the Execution that controls an object (its name and uid), if it is one. */
export function controllingOwner(obj: Owned): { name: string; uid: string } | undefined {
  return obj.metadata?.ownerReferences?.find((o) => o.controller === true && o.kind === "Execution" && o.apiVersion === API_VERSION);
}

/** The name of the Execution that controls an object, if it is one. */
export function controllingExecution(obj: Owned): string | undefined {
  return controllingOwner(obj)?.name;
}

/** The key (namespace/name) of the Execution that controls an object (a pod, a judge child), if any. */
export function ownerKey(obj: Owned & { metadata?: { namespace?: string } }): string | undefined {
  const owner = controllingExecution(obj);
  return owner === undefined ? undefined : `${obj.metadata?.namespace ?? ""}/${owner}`;
}

/** Pod name of a workload (worker run `<exec>-i<N>` or judge child): `gavel-<name>-ex`, ≤ 63 characters. */
export function workloadPodName(workload: string): string {
  return podName(workload, EXECUTION_INSTANCE);
}

/** Name of the claim backing one workspace volume of an Execution: `<exec>-<volume>`. */
export function claimName(execution: string, volume: string): string {
  const name = `${execution}-${volume}`
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
  return name.slice(0, 253).replace(/-+$/, "");
}

/** The mounts of an Execution's workspace volumes (read-only for judges and readers). */
export function workspaceMounts(execution: string, agent: Agent, readOnly: boolean): WorkloadMount[] {
  return (agent.spec.volumes ?? []).map((v) => ({ name: v.name, source: claimName(execution, v.name), mountPath: v.mount_path, readOnly }));
}

/**
 * How a judge sees one of the worker's volumes (ADR 0034, 0038): the Agent's
 * `spec.workspace_strategy` when set, else `copy` for a ReadWriteOncePod volume (attached to one
 * pod at a time, so parallel judges get copies) and `shared` for the others.
 */
export function workspaceStrategy(volume: VolumeSpec, agent?: Agent): WorkspaceStrategy {
  return agent?.spec.workspace_strategy ?? (volume.access_mode === "ReadWriteOncePod" ? "copy" : "shared");
}

/**
 * Whether the worker's pod carries the copy source (ADR 0041): its tool-call judges get copies
 * of a ReadWriteOncePod volume, which no other pod can attach while the worker's pod runs, so
 * the copy is streamed out of the worker's pod itself (`copySource`).
 */
export function streamsCopies(agent: Agent): boolean {
  if ((agent.spec.execution?.tool_validation ?? []).length === 0) return false;
  return (agent.spec.volumes ?? []).some((v) => v.access_mode === "ReadWriteOncePod" && workspaceStrategy(v, agent) === "copy");
}

/** The worker pod's copy source: a native sidecar that mounts every workspace volume read-only at COPY_SOURCE_DIR/<volume>. */
export const COPY_SOURCE_CONTAINER = "gavel-copy-source";
/** Where the copy source mounts the worker's volumes, and where a stream copier mounts the judge's copies. */
export const COPY_SOURCE_DIR = "/gavel/from";
export const COPY_TARGET_DIR = "/gavel/to";
/** Annotation of a copier that is filled by a stream from the worker's pod (not by reading the worker's claims): that pod's name. */
export const COPY_SOURCE_ANNOTATION = "gavel.dev/copy-source";

/**
 * The copy source of a worker pod (ADR 0041): a native sidecar (init container with
 * restartPolicy Always) of the reader image that mounts the worker's claims read-only and
 * only waits; the controller runs `tar c` in it (pods/exec). Same user as the worker, so it
 * reads what the worker wrote; it exits 0 on SIGTERM, when the worker's container has ended.
 */
export function copySource(volumes: readonly VolumeSpec[], execution: string, image: string): PodSidecar {
  return {
    name: COPY_SOURCE_CONTAINER,
    image,
    command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"],
    mounts: volumes.map((v) => ({
      name: v.name,
      source: claimName(execution, v.name),
      mountPath: `${COPY_SOURCE_DIR}/${v.name}`,
      readOnly: true,
    })),
  };
}

/**
 * What the controller runs in the worker pod's copy source: a tar on stdout of what the volumes
 * the judge copies hold, as `<volume>/<entry>`. The volumes' roots are left out: extracting
 * them would change the mode of the copy's root, which belongs to the provisioner (refused
 * to a non-root user, even with --no-overwrite-dir). A root it cannot list fails it.
 */
export function copySourceCommand(copies: readonly WorkspaceCopy[]): string[] {
  return ["sh", "-c", COPY_SOURCE_SCRIPT, "gavel-copy-source", ...copies.map((c) => c.volume.name)];
}

/** The script of copySourceCommand (the chart's controller-exec policy allows exactly it). */
export const COPY_SOURCE_SCRIPT = `cd ${COPY_SOURCE_DIR} || exit 1; for v; do ls -A "$v" > /dev/null || exit 1; done; find "$@" -mindepth 1 -maxdepth 1 -print0 | tar -c -f - --null -T -`;

/**
 * What the controller runs in a stream copier, fed the source's tar on stdin (ADR 0044): one
 * attempt at a time (a lock), none once the copy is committed; it empties the copies of what an
 * earlier, cut attempt left (only entries this user made: not the provisioner's), then extracts.
 * Its exit is tar's (tar runs as the shell's child: run by `exec` in its place, it saw its stdin end
 * early, at the first read with nothing waiting). A copy is done only when the controller commits it (COPY_COMMIT_SCRIPT),
 * so a stream cut by a controller that died leaves the copier waiting for the next attempt.
 */
export const COPY_SINK_COMMAND = [
  "sh",
  "-c",
  `exec 9>/tmp/copy.lock; flock 9 || exit 1; if [ -e /tmp/copied ]; then exit 0; fi; cd ${COPY_TARGET_DIR} || exit 1; find . -mindepth 2 -type d -user "$(id -u)" -exec chmod u+w {} +; find . -mindepth 2 -user "$(id -u)" -delete || exit 1; tar -x -f - 2>/tmp/copy.err`,
];

/**
 * What the controller runs in a stream copier once an attempt has ended, with the copy's exit
 * code (0: the source sent the whole tar and the sink extracted it): the copier's program then
 * exits with it (streamCopierWorkload). Once only: a later commit changes nothing.
 */
export const COPY_COMMIT_SCRIPT =
  'exec 9>/tmp/copy.lock; flock 9 || exit 1; if [ ! -e /tmp/copied ]; then echo "$1" > /tmp/copied.part && mv /tmp/copied.part /tmp/copied; fi';

/** The commit of a stream copy with exit code `code` (0-255). */
export function copyCommitCommand(code: number): string[] {
  return ["sh", "-c", COPY_COMMIT_SCRIPT, "gavel-copy-commit", String(Math.min(255, Math.max(0, Math.trunc(code))))];
}

/** One volume a judge gets as its own claim (a copy, or a snapshot's restore): the worker's claim it comes from, and the judge's. */
export interface WorkspaceCopy {
  volume: VolumeSpec;
  from: WorkloadMount;
  to: WorkloadMount;
}

/** The worker's volumes as one judge child sees them. */
export interface JudgeWorkspaces {
  /** What the judge pod mounts, all read-only at the worker's paths. */
  mounts: WorkloadMount[];
  /** Claims a copier pod fills before the judge starts (`copy`). */
  copies: WorkspaceCopy[];
  /** Claims restored from a VolumeSnapshot of the worker's claim (`snapshot`). */
  snapshots: WorkspaceCopy[];
  /**
   * True when a pod of the judge mounts the worker's own ReadWriteOnce claim (`shared`, or a
   * copier's source): it must run on the worker's node, where that claim is attached.
   */
  onWorkerNode: boolean;
}

/** The worker's volumes as one judge child mounts them (read-only, own claims where the strategy says), and the claims to make first. */
export function judgeWorkspaces(parent: string, agent: Agent, child: string): JudgeWorkspaces {
  const out: JudgeWorkspaces = { mounts: [], copies: [], snapshots: [], onWorkerNode: false };
  for (const v of agent.spec.volumes ?? []) {
    const from = { name: v.name, source: claimName(parent, v.name), mountPath: v.mount_path, readOnly: true };
    const strategy = workspaceStrategy(v, agent);
    if (strategy !== "snapshot" && (v.access_mode ?? "ReadWriteOnce") === "ReadWriteOnce") out.onWorkerNode = true;
    if (strategy === "shared") {
      out.mounts.push(from);
      continue;
    }
    const to = { ...from, source: claimName(child, v.name) };
    (strategy === "copy" ? out.copies : out.snapshots).push({ volume: v, from, to });
    out.mounts.push(to);
  }
  return out;
}

/** The API group of CSI volume snapshots (external-snapshotter's CRDs). */
export const SNAPSHOT_GROUP = "snapshot.storage.k8s.io";
export const SNAPSHOT_VERSION = "v1";

/** A judge's VolumeSnapshot of one worker claim (named like the claim restored from it, owned by the judge child). */
export function volumeSnapshotManifest(child: Execution, s: WorkspaceCopy, className: string): Record<string, unknown> {
  return {
    apiVersion: `${SNAPSHOT_GROUP}/${SNAPSHOT_VERSION}`,
    kind: "VolumeSnapshot",
    metadata: {
      name: s.to.source,
      labels: { [CHILD_LABELS.execution]: labelValue(child.metadata.name) },
      ownerReferences: [ownerOf(child)],
    },
    spec: { volumeSnapshotClassName: className, source: { persistentVolumeClaimName: s.from.source } },
  };
}

/** The claim restored from a judge's VolumeSnapshot: the volume's size, class and access mode, owned by the judge child. */
export function restoredClaimManifest(child: Execution, s: WorkspaceCopy): k8s.V1PersistentVolumeClaim {
  const pvc = copyClaimManifest(child, s);
  return { ...pvc, spec: { ...pvc.spec, dataSource: { apiGroup: SNAPSHOT_GROUP, kind: "VolumeSnapshot", name: s.to.source } } };
}

/** A VolumeSnapshotClass as gavel reads it. */
export interface SnapshotClass {
  name: string;
  driver: string;
  default: boolean;
}

/**
 * The VolumeSnapshotClass for a claim of `storageClass` (whose CSI driver is `provisioner`):
 * the driver's default class, else its only one; otherwise why `snapshot` cannot serve it,
 * naming the field. `classes` undefined: the VolumeSnapshot API is not installed.
 */
export function chooseSnapshotClass(
  volume: string,
  storageClass: string,
  provisioner: string,
  classes: readonly SnapshotClass[] | undefined,
): { name: string } | { problem: string } {
  const at = `spec.workspace_strategy: snapshot cannot serve volume ${volume} (StorageClass ${storageClass}, driver ${provisioner})`;
  if (classes === undefined)
    return { problem: `${at}: the VolumeSnapshot API (${SNAPSHOT_GROUP}/${SNAPSHOT_VERSION}) is not installed in this cluster; use copy` };
  const fit = classes.filter((c) => c.driver === provisioner);
  const chosen = fit.find((c) => c.default) ?? (fit.length === 1 ? fit[0] : undefined);
  if (chosen !== undefined) return { name: chosen.name };
  if (fit.length === 0)
    return {
      problem: `${at}: no VolumeSnapshotClass has driver ${provisioner} (classes: ${classes.map((c) => `${c.name} (${c.driver})`).join(", ") || "none"}); use copy`,
    };
  return {
    problem: `${at}: ${fit.length} VolumeSnapshotClasses have driver ${provisioner} and none is the default (annotation snapshot.storage.kubernetes.io/is-default-class)`,
  };
}

/** A VolumeSnapshotClass object as SnapshotClass; undefined when it is not one. */
export function snapshotClassOf(obj: unknown): SnapshotClass | undefined {
  if (typeof obj !== "object" || obj === null) return undefined;
  const o = obj as { metadata?: { name?: unknown; annotations?: Record<string, string> }; driver?: unknown };
  if (typeof o.metadata?.name !== "string" || typeof o.driver !== "string") return undefined;
  return {
    name: o.metadata.name,
    driver: o.driver,
    default: o.metadata.annotations?.["snapshot.storage.kubernetes.io/is-default-class"] === "true",
  };
}

/** Why a judge's VolumeSnapshot failed (its status.error); undefined while it is fine. */
export function snapshotError(obj: unknown): string | undefined {
  const message = (obj as { status?: { error?: { message?: unknown } } } | undefined)?.status?.error?.message;
  return typeof message === "string" && message !== "" ? message : undefined;
}

/** The claim of a judge's copy of a worker volume: the volume's size, class and access mode, owned by the judge child. */
export function copyClaimManifest(child: Execution, copy: WorkspaceCopy): k8s.V1PersistentVolumeClaim {
  const pvc = claimManifest(ownerMarks(child), copy.volume);
  return { ...pvc, metadata: { ...pvc.metadata, name: copy.to.source } };
}

/** Workload name of a judge child's copier: `<child>-copy` (pod `gavel-<child>-copy-ex`). */
export function copierName(child: string): string {
  return `${child}-copy`;
}

/**
 * The copier of a judge child: the worker's claims read-only at /gavel/from/<i>, the copies
 * read-write at /gavel/to/<i>, `cp -a` of each, no network (placed owned by the child).
 */
export function copierWorkload(child: Execution, copies: WorkspaceCopy[], image: string): WorkloadSpec {
  const mounts = copies.flatMap((c, i) => [
    { ...c.from, mountPath: `${COPY_SOURCE_DIR}/${i}`, readOnly: true },
    { ...c.to, mountPath: `${COPY_TARGET_DIR}/${i}`, readOnly: false },
  ]);
  // Entry by entry (dot files too), not the volume's root: the copy's root belongs to the
  // provisioner, and preserving the source root's mode on it is refused to a non-root user.
  const each = (i: number) =>
    `for f in /gavel/from/${i}/* /gavel/from/${i}/.[!.]* /gavel/from/${i}/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then cp -a "$f" /gavel/to/${i}/; fi; done`;
  const script = ["set -e", ...copies.map((_, i) => each(i))].join("; ");
  return copierSpec(child, mounts, ["sh", "-c", script], image);
}

/**
 * The copier of a judge child whose copies are streamed from the worker's running pod
 * (ADR 0041): only the copies, read-write at /gavel/to/<volume>; it waits until the
 * controller has committed the copy (COPY_COMMIT_SCRIPT, after COPY_SINK_COMMAND extracted the
 * stream), then exits with the committed code and prints tar's errors. Placed annotated with the worker pod it copies from (COPY_SOURCE_ANNOTATION).
 */
export function streamCopierWorkload(child: Execution, copies: WorkspaceCopy[], image: string): WorkloadSpec {
  const mounts = copies.map((c) => ({ ...c.to, mountPath: `${COPY_TARGET_DIR}/${c.volume.name}`, readOnly: false }));
  const wait =
    'until [ -e /tmp/copied ]; do sleep 0.1; done; if [ -e /tmp/copy.err ]; then cat /tmp/copy.err >&2; fi; exit "$(cat /tmp/copied)"';
  return copierSpec(child, mounts, ["sh", "-c", wait], image);
}

function copierSpec(child: Execution, mounts: WorkloadMount[], command: string[], image: string): WorkloadSpec {
  return {
    name: copierName(child.metadata.name),
    image,
    command,
    mounts,
    network: "none",
    timeoutSeconds: Math.max(1, Math.ceil(parseDurationSeconds(child.spec.timeoutSeconds) ?? DEFAULT_JUDGE_TIMEOUT_SECONDS)),
    labels: { [CHILD_LABELS.execution]: labelValue(child.metadata.name), [CHILD_LABELS.role]: "copier" },
  };
}

/** The PersistentVolumeClaim of one workspace volume, owned by the Execution. */
export function claimManifest(owner: OwnerMarks, volume: VolumeSpec): k8s.V1PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claimName(owner.name, volume.name),
      labels: { [CHILD_LABELS.execution]: owner.label },
      ownerReferences: [owner.reference],
    },
    spec: {
      accessModes: [volume.access_mode ?? "ReadWriteOnce"],
      resources: { requests: { storage: volume.size ?? "1Gi" } },
      ...(volume.storage_class !== undefined ? { storageClassName: volume.storage_class } : {}),
    },
  };
}

/** Options that shape a judge's workload (the pods' own shape is PodWorkloads'). */
export interface SpecOptions {
  /** Images of language runtimes (`spec.runtime.language`); default the built-in table. */
  runtimes?: RuntimeTable;
}

/** Where the reconciler places a workload of `owner`: its namespace, owned by it; `streams` "apart" for workers and judges (gavel-launch). */
export function placementOf(owner: OwnerMarks, streams: "apart" | "merged" = "merged"): PodPlacement {
  return { namespace: owner.namespace, owner: owner.reference, streams };
}

/** Where iteration N's worker runs: its Execution's placement, with the copy source when its tool-call judges need one (streamsCopies; `image`: the reader image). */
export function workerPlacement(owner: OwnerMarks, agent: Agent, image: string): PodPlacement {
  const place = placementOf(owner, "apart");
  return streamsCopies(agent) ? { ...place, sidecars: [copySource(agent.spec.volumes ?? [], owner.name, image)] } : place;
}

/**
 * A judge child's workload and placement, the parent's claims read-only: its payload in env
 * GAVEL_INPUT, or the ConfigMap parts its annotation names mounted read-only at INPUT_DIR
 * (GAVEL_INPUT_DIR); a string says why it cannot run.
 */
export function judgeSpec(
  child: Execution,
  judge: Agent,
  mounts: WorkloadMount[],
  opts: SpecOptions,
): { spec: WorkloadSpec; place: PodPlacement } | string {
  const spec = judgeWorkload(child, judge, mounts, { stdin: false, ...(opts.runtimes !== undefined ? { runtimes: opts.runtimes } : {}) });
  if (typeof spec === "string") return spec;
  const descriptor = parseDescriptor(child.metadata.annotations?.[INPUT_ANNOTATION]);
  const parts =
    descriptor === undefined
      ? {}
      : { parts: { volume: "input", prefix: inputPartsPrefix(child.metadata.name), descriptor, mountPath: INPUT_DIR } };
  return { spec, place: { ...placementOf(ownerMarks(child), "apart"), ...parts } };
}
