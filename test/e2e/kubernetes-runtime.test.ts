// KubernetesRuntime on the single-node cluster: real pods on containerd, a dynamically
// provisioned claim, exit codes, stdin/stdout, deadline, stop, read-only mounts, readFile, cleanup.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeOutcome } from "../../src/engine/gradient.js";
import { KubernetesRuntime } from "../../src/runtime/kubernetes/kubernetes-runtime.js";
import { LABELS, NETWORK_POLICY_NAME } from "../../src/runtime/kubernetes/pod-spec.js";
import { OUTPUT_CAP_BYTES, TRUNCATION_MARKER, type WorkloadMount, type WorkloadSpec } from "../../src/runtime/workload.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { BASE_IMAGE } from "../harness/paths.js";

const CLAIM = "workspace";

describe("KubernetesRuntime on the single-node cluster", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ns: string;
  let runtime: KubernetesRuntime;
  const rw: WorkloadMount = { name: "workspace", source: CLAIM, mountPath: "/workspace", readOnly: false };
  const ro: WorkloadMount = { ...rw, readOnly: true };

  function node(name: string, script: string, extra: Partial<WorkloadSpec> = {}): WorkloadSpec {
    return { name, image: BASE_IMAGE, command: ["node", "-e", script], mounts: [], network: "allow", timeoutSeconds: 60, ...extra };
  }

  async function podsOf(instance: string): Promise<string[]> {
    const list = await core.listNamespacedPod({ namespace: ns, labelSelector: `${LABELS.instance}=${instance}` });
    return list.items.map((p) => p.metadata?.name ?? "");
  }

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    ns = await cluster.createNamespace("e2e-krt");
    // The default StorageClass (local-path) binds it when the first pod that mounts it is scheduled.
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: CLAIM }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } } },
    });
    runtime = new KubernetesRuntime({ kubeConfig: cluster.kc, namespace: ns, imagePullPolicy: "Never" });
  }, 900_000);

  afterAll(async () => {
    await runtime?.close();
    await cluster?.deleteNamespace(ns);
  });

  it("Given stdin and env, a pod exits 0 and its stdout is returned; it is hardened and then deleted", async () => {
    // When a workload reads stdin and reports what it is allowed to do
    const h = await runtime.start(node("hello", [
      "const fs=require('fs');",
      "const input=fs.readFileSync(0,'utf8');",
      "let rootWrite='allowed'; try { fs.writeFileSync('/etc/x','1'); } catch (e) { rootWrite=e.code; }",
      "fs.writeFileSync('/tmp/scratch','ok');",
      "const capEff=/CapEff:\\s*(\\w+)/.exec(fs.readFileSync('/proc/self/status','utf8'))[1];",
      "const nnp=/NoNewPrivs:\\s*(\\d)/.exec(fs.readFileSync('/proc/self/status','utf8'))[1];",
      "console.log(JSON.stringify({input, greeting: process.env.GREETING, uid: process.getuid(), rootWrite, capEff, nnp}));",
    ].join("\n"), { stdin: "payload ✓", env: { GREETING: "hi" } }));
    const r = await h.wait();

    // Then it exited 0 with exactly that output, as nobody, with no capabilities, read-only root
    expect(r).toMatchObject({ exitCode: 0, stderr: "", truncated: false, timedOut: false, cancelled: false });
    expect(JSON.parse(r.stdout)).toEqual({ input: "payload ✓", greeting: "hi", uid: 65534, rootWrite: "EROFS", capEff: "0000000000000000", nnp: "1" });
    expect(r.finishedAt.getTime()).toBeGreaterThanOrEqual(r.startedAt.getTime());
    // And neither the pod nor its stdin ConfigMap is left
    expect(await podsOf(runtime.instance)).toEqual([]);
    const cms = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: `${LABELS.instance}=${runtime.instance}` });
    expect(cms.items).toEqual([]);
  }, 120_000);

  it("Given stdin through the attach API (the path for images run by their entrypoint), the workload reads all of it", async () => {
    const attaching = new KubernetesRuntime({ kubeConfig: cluster.kc, namespace: ns, imagePullPolicy: "Never", stdinVia: "attach" });
    try {
      // 300 KiB: more than an env variable may hold
      const big = "x".repeat(300 * 1024);
      const h = await attaching.start(node("attached", "const s=require('fs').readFileSync(0,'utf8'); console.log(s.length, s === 'x'.repeat(300*1024))", { stdin: big }));
      const r = await h.wait();
      expect(r).toMatchObject({ exitCode: 0, stdout: `${300 * 1024} true\n`, timedOut: false });
      // And a workload that exits without reading its stdin is not an error (attach may find it gone)
      const quick = await (await attaching.start(node("ignores-stdin", "console.log('quick')", { stdin: "unread" }))).wait();
      expect(quick).toMatchObject({ exitCode: 0, stdout: "quick\n" });
    } finally {
      await attaching.close();
    }
    expect(await podsOf(attaching.instance)).toEqual([]);
  }, 120_000);

  it("Given the real rule-judge image run by its entrypoint, the payload on stdin only, its verdict parses", async () => {
    // Given a tool-call payload and no GAVEL_INPUT: the judge can only get it from stdin (attach)
    const payload = { task: "tidy up", proposed_tool_call: { tool: "shell_exec", args: { command: "rm -rf /" } }, available_tools: ["shell_exec"], worker_mounts: ["/workspace"], criteria: "", validation_context: "semantic_judge_pre_execution_inner_loop", policy_violations: [] };
    const h = await runtime.start({
      name: "rule-judge-call",
      image: "gavel/rule-judge:dev",
      stdin: JSON.stringify(payload),
      mounts: [ro],
      network: "none",
      timeoutSeconds: 60,
      labels: { "gavel.dev/role": "judge" },
    });
    const r = await h.wait();

    // Then the judge blocked the call at its guard, read from the pod's log
    expect(r.exitCode).toBe(0);
    const outcome = judgeOutcome(r);
    expect(outcome.ok && outcome.result.score).toBe(0);
    expect(outcome.ok && outcome.result.reasoning).toMatch(/^guard: dangerous shell command/);
  }, 120_000);

  it("Given output over 8 MiB, stdout is cut at the cap and marked truncated", async () => {
    const h = await runtime.start(node("chatty", "process.stdout.write('y'.repeat(9 * 1024 * 1024))"));
    const r = await h.wait();
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    expect(r.stdout === "y".repeat(OUTPUT_CAP_BYTES) + TRUNCATION_MARKER, `${r.stdout.length} characters, ending ${JSON.stringify(r.stdout.slice(-60))}`).toBe(true);
  }, 120_000);

  it("Given a workload that exits 3, wait() reports exit code 3 (and does not reject)", async () => {
    const h = await runtime.start(node("exit-three", "console.log('failing'); process.exit(3)"));
    const r = await h.wait();
    expect(r).toMatchObject({ exitCode: 3, stdout: "failing\n", timedOut: false, cancelled: false });
  }, 120_000);

  it("Given a writer on the claim, readFile reads its file through a read-only reader pod", async () => {
    // Given a worker that writes into its workspace
    const w = await runtime.start(node("writer", "require('fs').writeFileSync('/workspace/result.json', JSON.stringify({status:'success'}))", { mounts: [rw] }));
    expect((await w.wait()).exitCode).toBe(0);

    // When the file is read through the runtime, then it is the writer's content
    expect(await runtime.readFile(ro, "result.json")).toBe('{"status":"success"}');
    // And a missing file is undefined, a path outside the mount is refused
    expect(await runtime.readFile(ro, "/workspace/missing.json")).toBeUndefined();
    await expect(runtime.readFile(ro, "../etc/passwd")).rejects.toThrow(/outside the mount/);
    expect(await podsOf(runtime.instance)).toEqual([]);
  }, 180_000);

  it("Given a judge with the claim mounted read-only, its writes are refused with EROFS", async () => {
    const h = await runtime.start(node("judge-ro", [
      "const fs=require('fs');",
      "try { fs.writeFileSync('/workspace/result.json','tampered'); console.log('write succeeded'); }",
      "catch (e) { console.log('refused ' + e.code); process.exit(7); }",
    ].join("\n"), { mounts: [ro], network: "none", labels: { "gavel.dev/role": "judge" } }));
    const r = await h.wait();
    expect(r).toMatchObject({ exitCode: 7, stdout: "refused EROFS\n" });

    // And network "none" made the namespace's deny-all NetworkPolicy (not enforced by bridge CNI)
    const np = await cluster.kc.makeApiClient(k8s.NetworkingV1Api).readNamespacedNetworkPolicy({ name: NETWORK_POLICY_NAME, namespace: ns });
    expect(np.spec?.podSelector.matchLabels).toEqual({ [LABELS.network]: "none" });
  }, 120_000);

  it("Given a workload that outlives its deadline, it is killed and reported timedOut", async () => {
    const t0 = Date.now();
    const h = await runtime.start(node("sleeper", "console.log('started'); setTimeout(() => {}, 600000)", { timeoutSeconds: 3 }));
    const r = await h.wait();
    expect(r).toMatchObject({ timedOut: true, cancelled: false });
    expect(r.exitCode).not.toBe(0);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(await podsOf(runtime.instance)).toEqual([]);
  }, 120_000);

  it("Given a running workload, stop() deletes its pod and wait() reports cancelled", async () => {
    const h = await runtime.start(node("stoppable", "console.log('running'); setTimeout(() => {}, 600000)"));
    // Let it get running, so the stop really kills a live container
    await eventually(async () => {
      const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `${LABELS.instance}=${runtime.instance}` });
      return pods.items[0]?.status?.phase === "Running" ? true : undefined;
    }, 60_000, "pod to run");
    const t0 = Date.now();
    await h.stop();
    await h.stop(); // idempotent
    const r = await h.wait();
    expect(r).toMatchObject({ cancelled: true, timedOut: false });
    expect(r.exitCode).not.toBe(0);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(await podsOf(runtime.instance)).toEqual([]);
  }, 120_000);

  it("Given a missing image, wait() rejects naming the image and the pod is removed", async () => {
    const h = await runtime.start(node("no-image", "0", { image: "gavel/does-not-exist:never" }));
    await expect(h.wait()).rejects.toThrow(/gavel\/does-not-exist:never.*ErrImageNeverPull/);
    expect(await podsOf(runtime.instance)).toEqual([]);
  }, 120_000);

  it("Given ownerReferences, deleting the owner lets the garbage collector remove the workload's pod", async () => {
    // Given an owner object (a ConfigMap standing in for the Execution) and a runtime owned by it
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "owner" } } });
    const owned = new KubernetesRuntime({
      kubeConfig: cluster.kc,
      namespace: ns,
      imagePullPolicy: "Never",
      ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata?.uid ?? "" }],
    });
    const h = await owned.start(node("owned", "setTimeout(() => {}, 600000)"));
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `${LABELS.instance}=${owned.instance}` });
    expect(pods.items[0]?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "ConfigMap", name: "owner" });

    // When the owner is deleted, then the controller-manager's garbage collector deletes the pod
    await core.deleteNamespacedConfigMap({ name: "owner", namespace: ns });
    await eventually(async () => ((await podsOf(owned.instance)).length === 0 ? true : undefined), 60_000, "owned pod to be collected");
    const r = await h.wait();
    expect(r).toMatchObject({ cancelled: false, timedOut: false });
    expect(r.exitCode).not.toBe(0);
    await owned.close();
  }, 120_000);

  it("Given a second runtime with live pods, close() leaves none of its pods behind", async () => {
    const other = new KubernetesRuntime({ kubeConfig: cluster.kc, namespace: ns, imagePullPolicy: "Never" });
    const a = await other.start(node("left-a", "setTimeout(() => {}, 600000)"));
    await other.start(node("left-b", "setTimeout(() => {}, 600000)", { stdin: "x" }));
    expect((await podsOf(other.instance)).length).toBe(2);
    await other.close();
    expect(await podsOf(other.instance)).toEqual([]);
    expect((await a.wait()).cancelled).toBe(true);
    await expect(other.start(node("after-close", "0"))).rejects.toThrow(/closed/);
  }, 120_000);
});
