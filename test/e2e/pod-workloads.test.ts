// PodWorkloads, the Workloads port on Kubernetes (ADR 0030), on the single-node cluster: real
// pods on containerd observed through the controller's own pod informer, a dynamically
// provisioned claim, exit codes, stdout apart from stderr under gavel-launch, deadline,
// retire with retention, a file read by a reader workload, owner garbage collection.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Informer, podResource } from "../../src/controller/runtime/informer.js";
import { readerContent, volumeReader } from "../../src/runtime/file-reader.js";
import { LABELS, NETWORK_POLICY_NAME } from "../../src/runtime/kubernetes/pod-spec.js";
import { PodWorkloads, type PodPlacement } from "../../src/runtime/kubernetes/pod-workloads.js";
import { OUTPUT_CAP_BYTES, type WorkloadMount, type WorkloadObservation, type WorkloadSpec } from "../../src/runtime/workload.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { BASE_IMAGE, REPO_DIR } from "../harness/paths.js";

const CLAIM = "workspace";
const INSTANCE = "e2e-pw";

describe("PodWorkloads on the single-node cluster", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ns: string;
  let pods: Informer<k8s.V1Pod>;
  let workloads: PodWorkloads;
  let place: PodPlacement;
  const rw: WorkloadMount = { name: "workspace", source: CLAIM, mountPath: "/workspace", readOnly: false };

  function node(name: string, script: string, extra: Partial<WorkloadSpec> = {}): WorkloadSpec {
    return { name, image: BASE_IMAGE, command: ["node", "-e", script], mounts: [], network: "allow", timeoutSeconds: 60, ...extra };
  }

  /** Observes until the workload is in one of `states` (level-triggered: the informer's cache, polled). */
  function until(name: string, states: WorkloadObservation["state"][], at: PodPlacement = place): Promise<WorkloadObservation> {
    return eventually(
      async () => {
        const seen = await workloads.observe(name, at);
        return states.includes(seen.state) ? seen : undefined;
      },
      90_000,
      `${name} to be ${states.join(" or ")}`,
    );
  }

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    ns = await cluster.createNamespace("e2e-krt");
    place = { namespace: ns };
    // The default StorageClass (local-path) binds it when the first pod that mounts it is scheduled.
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: CLAIM }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } } },
    });
    pods = new Informer<k8s.V1Pod>({
      kc: cluster.kc,
      resource: podResource(cluster.kc, `${LABELS.instance}=${INSTANCE}`),
      namespaces: [ns],
    });
    await pods.start();
    workloads = new PodWorkloads({
      core,
      net: cluster.kc.makeApiClient(k8s.NetworkingV1Api),
      pods,
      instance: INSTANCE,
      imagePullPolicy: "Never",
      launcher: readFileSync(join(REPO_DIR, "dist", "bin", "gavel-launch")),
    });
  }, 900_000);

  afterAll(async () => {
    await pods?.stop();
    await cluster?.deleteNamespace(ns);
  });

  it("Given a workload, ensure creates one hardened pod (adopted on a second ensure), observed until it ends, its output read", async () => {
    const spec = node(
      "hello",
      [
        "const fs=require('fs');",
        "let rootWrite='allowed'; try { fs.writeFileSync('/etc/x','1'); } catch (e) { rootWrite=e.code; }",
        "const capEff=/CapEff:\\s*(\\w+)/.exec(fs.readFileSync('/proc/self/status','utf8'))[1];",
        "console.log(JSON.stringify({greeting: process.env.GREETING, uid: process.getuid(), rootWrite, capEff}));",
      ].join("\n"),
      { env: { GREETING: "hi" } },
    );
    // When it is ensured twice (a retried reconcile), then one pod exists
    expect(await workloads.ensure(spec, place)).toBe(true);
    expect(await workloads.ensure(spec, place)).toBe(false);
    const ended = await until("hello", ["ended"]);
    expect(ended).toMatchObject({ state: "ended", exitCode: 0, timedOut: false, node: expect.any(String) as string });

    // Then its stdout is the program's, run as nobody with no capabilities and a read-only root
    const out = await workloads.output("hello", place);
    expect(out.truncated).toBe(false);
    expect(JSON.parse(out.stdout)).toEqual({ greeting: "hi", uid: 65534, rootWrite: "EROFS", capEff: "0000000000000000" });
    // And retire keeps an ended pod for its retention, then deletes it
    expect(await workloads.retire("hello", place, 600)).toBeGreaterThan(Date.now());
    expect(await workloads.retire("hello", place, 0)).toBeUndefined();
    await until("hello", ["absent"]);
    // A stdin the port cannot deliver is refused by field, before anything is created
    await expect(workloads.ensure(node("with-stdin", "0", { stdin: "x" }), place)).rejects.toThrow(/^spec\.stdin: /);
  }, 120_000);

  it("Given streams apart, a program under gavel-launch keeps stderr apart from stdout; a failing exit code is observed as such", async () => {
    await workloads.ensure(node("streams", "console.log('out'); console.error('err'); process.exit(3)"), { ...place, streams: "apart" });
    expect(await until("streams", ["ended"])).toMatchObject({ exitCode: 3, timedOut: false });
    expect(await workloads.output("streams", place)).toEqual({ stdout: "out\n", stderr: "err\n", truncated: false });
  }, 120_000);

  it("Given output over 8 MiB, output() is cut at the cap and says so", async () => {
    await workloads.ensure(node("chatty", "process.stdout.write('y'.repeat(9 * 1024 * 1024))"), place);
    await until("chatty", ["ended"]);
    const out = await workloads.output("chatty", place);
    expect(out.truncated).toBe(true);
    expect(Buffer.byteLength(out.stdout)).toBe(OUTPUT_CAP_BYTES);
  }, 120_000);

  it("Given a writer on the claim, a reader workload with the claim read-only returns its file; network none makes the deny-all policy", async () => {
    await workloads.ensure(
      node("writer", "require('fs').writeFileSync('/workspace/result.json', JSON.stringify({status:'success'}))", { mounts: [rw] }),
      place,
    );
    expect(await until("writer", ["ended"])).toMatchObject({ exitCode: 0 });

    // A validator's file read as the controller does it: a reader workload, observed until it ends
    await workloads.ensure(volumeReader("reader", BASE_IMAGE, { ...rw, readOnly: true }, "/workspace/result.json", 60), place);
    const seen = await until("reader", ["ended"]);
    const out = await workloads.output("reader", place);
    if (seen.state !== "ended") throw new Error("not ended");
    expect(
      readerContent(
        { exitCode: seen.exitCode, stdout: out.stdout, stderr: "", timedOut: seen.timedOut, truncated: out.truncated },
        "workspace",
      ),
    ).toEqual({ ok: true, content: '{"status":"success"}' });
    // Its network was none: the namespace's deny-all NetworkPolicy exists (not enforced by bridge CNI)
    const np = await cluster.kc
      .makeApiClient(k8s.NetworkingV1Api)
      .readNamespacedNetworkPolicy({ name: NETWORK_POLICY_NAME, namespace: ns });
    expect(np.spec?.podSelector.matchLabels).toEqual({ [LABELS.network]: "none" });
  }, 180_000);

  it("Given a deadline shorter than the program, the pod ends timed out; a running one is retired at once; a missing image is stuck by name", async () => {
    await workloads.ensure(node("sleeper", "setTimeout(() => {}, 600000)", { timeoutSeconds: 3 }), place);
    await workloads.ensure(node("stoppable", "setTimeout(() => {}, 600000)"), place);
    await workloads.ensure(node("no-image", "0", { image: "gavel/does-not-exist:never" }), place);
    expect(await until("sleeper", ["ended"])).toMatchObject({ timedOut: true });
    const stuck = await until("no-image", ["stuck"]);
    expect(stuck.state === "stuck" && stuck.reason).toMatch(/ErrImageNeverPull/);
    await until("stoppable", ["running"]);
    // A running workload is not kept, whatever the retention
    expect(await workloads.retire("stoppable", place, 600)).toBeUndefined();
    await until("stoppable", ["absent"]);
  }, 120_000);

  it("Given an owner, deleting it lets the garbage collector remove the workload's pod", async () => {
    // A ConfigMap stands in for the Execution
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "owner" } } });
    const owned = {
      ...place,
      owner: { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata?.uid ?? "", controller: true },
    };
    await workloads.ensure(node("owned", "setTimeout(() => {}, 600000)"), owned);
    await until("owned", ["pending", "running"]);
    await core.deleteNamespacedConfigMap({ name: "owner", namespace: ns });
    await until("owned", ["absent"]);
  }, 120_000);
});
