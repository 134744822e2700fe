// A judge's workspace by snapshot (workspace strategy `snapshot`, ADR 0038): a VolumeSnapshot
// of each worker claim and a claim restored from it, owned by the judge child; the
// VolumeSnapshotClass comes from the volume's StorageClass (its CSI driver). Why `snapshot`
// cannot serve a volume is said before any pod starts, naming the field.
import * as k8s from "@kubernetes/client-node";
import type { Agent, Execution, VolumeSpec } from "../api/types.js";
import { createOrAdopt, httpStatusOf, ignoreNotFound, isNotFound, messageOf } from "../errors.js";
import {
  chooseSnapshotClass,
  restoredClaimManifest,
  SNAPSHOT_GROUP,
  SNAPSHOT_VERSION,
  snapshotClassOf,
  snapshotError,
  volumeSnapshotManifest,
  type SnapshotClass,
  type WorkspaceCopy,
} from "./execution-pods.js";
import { namespaceOf } from "./execution-parts.js";

/** The judges' VolumeSnapshots and the claims restored from them. */
export class WorkspaceSnapshots {
  private readonly core: k8s.CoreV1Api;
  private readonly custom: k8s.CustomObjectsApi;
  private readonly storage: k8s.StorageV1Api;

  constructor(kc: k8s.KubeConfig) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.storage = kc.makeApiClient(k8s.StorageV1Api);
  }

  /** Why `snapshot` cannot serve one of the Agent's volumes (the first), naming the field; undefined when every volume has a class. */
  async problem(agent: Agent): Promise<string | undefined> {
    for (const v of agent.spec.volumes ?? []) {
      const chosen = await this.classFor(v);
      if ("problem" in chosen) return chosen.problem;
    }
    return undefined;
  }

  /** The judge's VolumeSnapshots and restored claims, created once (adopted on a retry); why not, naming the field. */
  async ensure(child: Execution, snapshots: WorkspaceCopy[]): Promise<string | undefined> {
    const namespace = namespaceOf(child);
    for (const s of snapshots) {
      const chosen = await this.classFor(s.volume);
      if ("problem" in chosen) return chosen.problem;
      const body = volumeSnapshotManifest(child, s, chosen.name);
      await createOrAdopt(() =>
        this.custom.createNamespacedCustomObject({
          group: SNAPSHOT_GROUP,
          version: SNAPSHOT_VERSION,
          namespace,
          plural: "volumesnapshots",
          body,
        }),
      );
      await createOrAdopt(() => this.core.createNamespacedPersistentVolumeClaim({ namespace, body: restoredClaimManifest(child, s) }));
    }
    return undefined;
  }

  /** Why one of the judge's VolumeSnapshots failed (the CSI driver's status.error); undefined while they are fine. */
  async failure(child: Execution, snapshots: WorkspaceCopy[]): Promise<string | undefined> {
    for (const s of snapshots) {
      const got: unknown = await this.custom
        .getNamespacedCustomObject({
          group: SNAPSHOT_GROUP,
          version: SNAPSHOT_VERSION,
          namespace: namespaceOf(child),
          plural: "volumesnapshots",
          name: s.to.source,
        })
        .catch(ignoreNotFound);
      const error = snapshotError(got);
      if (error !== undefined)
        return `spec.workspace_strategy: the VolumeSnapshot ${s.to.source} of volume ${s.volume.name} failed: ${error}`;
    }
    return undefined;
  }

  /** The VolumeSnapshotClass for a volume's claims: its StorageClass (or the cluster's default) names the CSI driver. */
  private async classFor(volume: VolumeSpec): Promise<{ name: string } | { problem: string }> {
    try {
      return await this.readClassFor(volume);
    } catch (err) {
      if (httpStatusOf(err) !== 403) throw err;
      return {
        problem: `spec.workspace_strategy: snapshot needs to list StorageClasses and VolumeSnapshotClasses (cluster-scoped), which this controller may not (${messageOf(err)})`,
      };
    }
  }

  private async readClassFor(volume: VolumeSpec): Promise<{ name: string } | { problem: string }> {
    const classes = (await this.storage.listStorageClass()).items;
    const sc =
      volume.storage_class !== undefined
        ? classes.find((c) => c.metadata?.name === volume.storage_class)
        : classes.find((c) => c.metadata?.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true");
    if (sc === undefined) {
      const which =
        volume.storage_class !== undefined
          ? `StorageClass ${volume.storage_class} does not exist`
          : "the cluster has no default StorageClass";
      return { problem: `spec.workspace_strategy: snapshot cannot serve volume ${volume.name}: ${which}` };
    }
    let snapshotClasses: SnapshotClass[] | undefined;
    try {
      const list = (await this.custom.listClusterCustomObject({
        group: SNAPSHOT_GROUP,
        version: SNAPSHOT_VERSION,
        plural: "volumesnapshotclasses",
      })) as { items?: unknown[] };
      snapshotClasses = (list.items ?? []).map(snapshotClassOf).filter((c): c is SnapshotClass => c !== undefined);
    } catch (err) {
      // 404: the CRDs (external-snapshotter) are not installed.
      if (!isNotFound(err)) throw err;
    }
    return chooseSnapshotClass(volume.name, sc.metadata?.name ?? "", sc.provisioner, snapshotClasses);
  }
}
