// The single-node cluster runs real pods: a pod writes to a PVC, a second pod mounts the
// same claim read-only, reads the file and cannot write; exit codes and logs via the API.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { BASE_IMAGE } from "../harness/paths.js";

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

describe("single-node cluster: pods, a PVC, and a read-only second mount", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ns: string;
  let hostDir: string;
  const pv = `gavel-e2e-pv-${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    ns = await cluster.createNamespace("e2e-pods");
    hostDir = await mkdtemp(join(tmpdir(), "gavel-pv-"));
  });
  afterAll(async () => {
    await cluster?.deleteNamespace(ns);
    await core?.deletePersistentVolume({ name: pv }).catch(() => undefined);
    await rm(hostDir, { recursive: true, force: true });
  });

  async function finished(name: string): Promise<k8s.V1ContainerStateTerminated> {
    return eventually(async () => {
      const pod = await core.readNamespacedPod({ name, namespace: ns });
      return pod.status?.containerStatuses?.[0]?.state?.terminated ?? undefined;
    }, 120_000, `pod ${name} to finish`);
  }

  it("Given a claim bound to a hostPath volume, a writer pod writes and a read-only reader sees it", async () => {
    // Given a hostPath PersistentVolume and a claim bound to it
    await core.createPersistentVolume({
      body: {
        metadata: { name: pv },
        spec: {
          capacity: { storage: "64Mi" },
          accessModes: ["ReadWriteOnce"],
          persistentVolumeReclaimPolicy: "Retain",
          storageClassName: "gavel-e2e",
          hostPath: { path: hostDir, type: "Directory" },
          claimRef: { namespace: ns, name: "workspace" },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: "workspace" },
        spec: { accessModes: ["ReadWriteOnce"], storageClassName: "gavel-e2e", resources: { requests: { storage: "64Mi" } } },
      },
    });
    await eventually(async () => {
      const c = await core.readNamespacedPersistentVolumeClaim({ name: "workspace", namespace: ns });
      return c.status?.phase === "Bound" ? true : undefined;
    }, 60_000, "claim to bind");

    // When a writer pod writes a result and exits 0
    await core.createNamespacedPod({
      namespace: ns,
      body: nodePod("writer", "workspace", false,
        "require('fs').writeFileSync('/workspace/result.json', JSON.stringify({status:'success'})); console.log('wrote result')"),
    });
    const w = await finished("writer");
    expect(w.exitCode).toBe(0);
    expect(await core.readNamespacedPodLog({ name: "writer", namespace: ns })).toBe("wrote result\n");

    // And a reader pod mounts the same claim read-only, reads it, and tries to write
    await core.createNamespacedPod({
      namespace: ns,
      body: nodePod("reader", "workspace", true, [
        "const fs=require('fs');",
        "console.log('read ' + fs.readFileSync('/workspace/result.json','utf8'));",
        "try { fs.writeFileSync('/workspace/result.json','tampered'); console.log('write succeeded'); }",
        "catch (e) { console.log('write refused ' + e.code); process.exit(7); }",
      ].join("\n")),
    });

    // Then the reader read the file, its write was refused, and it exited 7
    const r = await finished("reader");
    expect(r.exitCode).toBe(7);
    const log = await core.readNamespacedPodLog({ name: "reader", namespace: ns });
    expect(log).toBe('read {"status":"success"}\nwrite refused EROFS\n');
  });
});
