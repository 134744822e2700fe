// The single-node cluster runs real pods on real storage: a claim with no volume made for it
// is provisioned by the default StorageClass (local-path-provisioner) when its first pod is
// scheduled; a pod writes to it, a second pod mounts it read-only, reads the file and cannot
// write; exit codes and logs via the API; deleting the claim deletes the volume. The CSI
// stack of csi.sh (ADR 0045) takes a VolumeSnapshot of a claim and restores it into a new one.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, eventuallyGone, useCluster, type Cluster } from "../harness/cluster.js";
import { BASE_IMAGE, CSI_CLASS, CSI_DRIVER } from "../harness/paths.js";

function nodePod(name: string, claim: string, readOnly: boolean, script: string): k8s.V1Pod {
  return {
    metadata: { name },
    spec: {
      restartPolicy: "Never",
      containers: [
        {
          name: "main",
          image: BASE_IMAGE,
          imagePullPolicy: "Never",
          command: ["node", "-e", script],
          volumeMounts: [{ name: "workspace", mountPath: "/workspace", readOnly }],
        },
      ],
      volumes: [{ name: "workspace", persistentVolumeClaim: { claimName: claim, readOnly } }],
    },
  };
}

describe("single-node cluster: pods, a dynamically provisioned claim, and a read-only second mount", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ns: string;

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    ns = await cluster.createNamespace("e2e-pods");
  });
  afterAll(async () => {
    await cluster?.deleteNamespace(ns);
  });

  async function finished(name: string): Promise<k8s.V1ContainerStateTerminated> {
    return eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name, namespace: ns });
        return pod.status?.containerStatuses?.[0]?.state?.terminated ?? undefined;
      },
      120_000,
      `pod ${name} to finish`,
    );
  }

  it("Given a claim of the default StorageClass, a writer pod gets a new volume, a read-only reader sees its file, and the volume goes with the claim", async () => {
    // Given a claim that names no StorageClass and no volume
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: "workspace" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } } },
    });

    // When a writer pod mounts it, writes a result and exits 0
    const t0 = Date.now();
    await core.createNamespacedPod({
      namespace: ns,
      body: nodePod(
        "writer",
        "workspace",
        false,
        "require('fs').writeFileSync('/workspace/result.json', JSON.stringify({status:'success'})); console.log('wrote result')",
      ),
    });
    const w = await finished("writer");
    console.log(`claim provisioned and writer pod finished in ${Date.now() - t0} ms`);
    expect(w.exitCode).toBe(0);
    expect(await core.readNamespacedPodLog({ name: "writer", namespace: ns })).toBe("wrote result\n");

    // Then the claim is bound to a volume the provisioner made for it, in the default class
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: "workspace", namespace: ns });
    expect(claim.status?.phase).toBe("Bound");
    expect(claim.spec?.storageClassName).toBe("local-path");
    const pvName = claim.spec?.volumeName ?? "";
    const pv = await core.readPersistentVolume({ name: pvName });
    expect(pv.metadata?.annotations?.["pv.kubernetes.io/provisioned-by"]).toBe("rancher.io/local-path");
    expect(pv.spec?.claimRef).toMatchObject({ namespace: ns, name: "workspace" });

    // And a reader pod mounts the same claim read-only, reads it, and tries to write
    await core.createNamespacedPod({
      namespace: ns,
      body: nodePod(
        "reader",
        "workspace",
        true,
        [
          "const fs=require('fs');",
          "console.log('read ' + fs.readFileSync('/workspace/result.json','utf8'));",
          "try { fs.writeFileSync('/workspace/result.json','tampered'); console.log('write succeeded'); }",
          "catch (e) { console.log('write refused ' + e.code); process.exit(7); }",
        ].join("\n"),
      ),
    });

    // Then the reader read the file, its write was refused, and it exited 7
    const r = await finished("reader");
    expect(r.exitCode).toBe(7);
    const log = await core.readNamespacedPodLog({ name: "reader", namespace: ns });
    expect(log).toBe('read {"status":"success"}\nwrite refused EROFS\n');

    // When the pods and the claim are deleted, then the provisioner deletes the volume (reclaimPolicy Delete)
    for (const p of ["writer", "reader"]) await core.deleteNamespacedPod({ name: p, namespace: ns, gracePeriodSeconds: 0 });
    await core.deleteNamespacedPersistentVolumeClaim({ name: "workspace", namespace: ns });
    await eventuallyGone(() => core.readPersistentVolume({ name: pvName }), 60_000, `volume ${pvName}`);
  });

  it("Given a claim of the CSI StorageClass, a VolumeSnapshot of it restores into a new claim with the writer's files, read-only to its reader, and everything goes with the objects", async () => {
    const custom = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    const snapshots = { group: "snapshot.storage.k8s.io", version: "v1", namespace: ns, plural: "volumesnapshots" };
    const claim = (name: string, dataSource?: k8s.V1TypedLocalObjectReference): k8s.V1PersistentVolumeClaim => ({
      metadata: { name },
      spec: {
        storageClassName: CSI_CLASS,
        accessModes: ["ReadWriteOncePod"],
        resources: { requests: { storage: "16Mi" } },
        ...(dataSource === undefined ? {} : { dataSource }),
      },
    });
    // Given a writer's files on a claim of the CSI driver
    await core.createNamespacedPersistentVolumeClaim({ namespace: ns, body: claim("source") });
    await core.createNamespacedPod({
      namespace: ns,
      body: nodePod("csi-writer", "source", false, "require('fs').writeFileSync('/workspace/notes.txt','one')"),
    });
    expect((await finished("csi-writer")).exitCode).toBe(0);

    // When a VolumeSnapshot of it is taken and a claim is restored from it
    const t0 = Date.now();
    await custom.createNamespacedCustomObject({
      ...snapshots,
      body: {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshot",
        metadata: { name: "snap" },
        spec: { volumeSnapshotClassName: CSI_CLASS, source: { persistentVolumeClaimName: "source" } },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: claim("restored", { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" }),
    });
    await core.createNamespacedPod({
      namespace: ns,
      body: nodePod(
        "csi-reader",
        "restored",
        true,
        "const fs=require('fs');let w='written';try{fs.writeFileSync('/workspace/notes.txt','two')}catch(e){w=e.code}console.log(fs.readFileSync('/workspace/notes.txt','utf8'),w)",
      ),
    });

    // Then the reader sees the writer's file in its own claim and cannot write it
    expect((await finished("csi-reader")).exitCode).toBe(0);
    console.log(`snapshot taken, claim restored and reader pod finished in ${Date.now() - t0} ms`);
    expect(await core.readNamespacedPodLog({ name: "csi-reader", namespace: ns })).toBe("one EROFS\n");
    const snap = (await custom.getNamespacedCustomObject({ ...snapshots, name: "snap" })) as {
      status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string };
    };
    expect(snap.status?.readyToUse).toBe(true);
    const restored = await core.readNamespacedPersistentVolumeClaim({ name: "restored", namespace: ns });
    const pvs = [
      (await core.readNamespacedPersistentVolumeClaim({ name: "source", namespace: ns })).spec?.volumeName ?? "",
      restored.spec?.volumeName ?? "",
    ];
    expect((await core.readPersistentVolume({ name: pvs[1] ?? "" })).spec?.csi?.driver).toBe(CSI_DRIVER);

    // When the pods, the snapshot and the claims are deleted, then the volumes and the snapshot's content go too
    for (const p of ["csi-writer", "csi-reader"]) await core.deleteNamespacedPod({ name: p, namespace: ns, gracePeriodSeconds: 0 });
    await custom.deleteNamespacedCustomObject({ ...snapshots, name: "snap" });
    for (const c of ["source", "restored"]) await core.deleteNamespacedPersistentVolumeClaim({ name: c, namespace: ns });
    const content = snap.status?.boundVolumeSnapshotContentName ?? "";
    await eventuallyGone(
      () =>
        custom.getClusterCustomObject({ group: "snapshot.storage.k8s.io", version: "v1", plural: "volumesnapshotcontents", name: content }),
      60_000,
      `VolumeSnapshotContent ${content}`,
    );
    for (const pv of pvs) await eventuallyGone(() => core.readPersistentVolume({ name: pv }), 60_000, `volume ${pv}`);
  });
});
