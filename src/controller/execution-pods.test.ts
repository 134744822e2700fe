// The objects the Execution reconciler creates: names are deterministic, everything is owned
// by its Execution, judges mount the worker's claims read-only, results survive in a ConfigMap.
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import type { Agent, Execution, VolumeSpec } from "../api/types.js";
import { LABELS } from "../runtime/kubernetes/pod-spec.js";
import { INLINE_INPUT_LIMIT, SPAWN_ERROR_ANNOTATION, storedJudgeChild, validationJudgeChild } from "../children/child-executions.js";
import { ENV_PAYLOAD_LIMIT, INPUT_ANNOTATION, MAX_PAYLOAD_BYTES, ownerMarks } from "../children/workloads.js";
import { joinParts, parseDescriptor } from "../runtime/kubernetes/configmap-parts.js";
import {
  EXECUTION_INSTANCE,
  claimManifest,
  claimName,
  controllingExecution,
  copierWorkload,
  copyClaimManifest,
  judgeSpec,
  judgeWorkspaces,
  placementOf,
  workloadPodName,
  workspaceMounts,
  workspaceStrategy,
  chooseSnapshotClass,
  restoredClaimManifest,
  snapshotClassOf,
  snapshotError,
  streamsCopies,
  streamCopierWorkload,
  workerPlacement,
  copySourceCommand,
  COPY_SOURCE_CONTAINER,
  COPY_SOURCE_ANNOTATION,
  COPY_COMMIT_SCRIPT,
  COPY_SINK_COMMAND,
  copyCommitCommand,
  COPY_SOURCE_SCRIPT,
  copierName,
  volumeSnapshotManifest,
} from "./execution-pods.js";
import { resultConfigMaps } from "./stored-parts.js";
import type * as k8s from "@kubernetes/client-node";
import { podFor } from "../runtime/kubernetes/pod-workloads.js";
import type { WorkloadMount } from "../runtime/workload.js";
import { workerWorkload, type WorkerOptions, type WorkerRun } from "../children/workloads.js";

/** Iteration N's worker as the reconciler builds it: the workspace claims read-write. */
function workerOf(ex: Execution, agent: Agent, run: WorkerRun, opts: WorkerOptions) {
  return workerWorkload(ex, agent, run, workspaceMounts(ex.metadata.name, agent, false), opts);
}

const ex: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "uid-1" },
  spec: { agentRef: { name: "w" }, input: { n: 1 } },
};
const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "w" },
  spec: {
    runtime: { image: "gavel/example:dev", pull_policy: "Never" },
    task: { instruction: "do it" },
    security: { network: { mode: "none" }, resources: { memory: "256Mi" } },
    volumes: [{ name: "workspace", mount_path: "/workspace", storage_class: "fast", size: "2Gi" }],
  },
};
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "rule-judge", labels: { role: "judge" } },
  spec: { runtime: { image: "gavel/rule-judge:dev" } },
};
const shape = { instance: EXECUTION_INSTANCE };
/** The pod PodWorkloads makes of a judge child (or why it cannot run). */
function judgePod(child: Execution, judgeAgent: Agent, mounts: WorkloadMount[], node?: string): k8s.V1Pod | string {
  const built = judgeSpec(child, judgeAgent, mounts, {});
  return typeof built === "string" ? built : podFor(built.spec, { ...built.place, ...(node !== undefined ? { node } : {}) }, shape);
}

describe("execution pods", () => {
  it("the worker pod has a deterministic name, the Execution as controller owner, the env contract and the claim read-write", () => {
    const pod = podFor(
      workerOf(ex, agent, { name: "demo-i2", iteration: 2, feedback: "fix it", timeoutSeconds: 60 }, {}),
      placementOf(ownerMarks(ex), "apart"),
      shape,
    );
    expect(pod.metadata?.name).toBe(workloadPodName("demo-i2"));
    expect(pod.metadata?.name).toBe(`gavel-demo-i2-${EXECUTION_INSTANCE}`);
    expect(pod.metadata?.ownerReferences).toEqual([
      { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "demo", uid: "uid-1", controller: true, blockOwnerDeletion: true },
    ]);
    expect(controllingExecution(pod as never)).toBe("demo");
    expect(pod.metadata?.labels).toMatchObject({
      [LABELS.instance]: EXECUTION_INSTANCE,
      "gavel.dev/execution": "demo",
      "gavel.dev/iteration": "2",
      [LABELS.network]: "none",
    });
    const c = pod.spec?.containers[0];
    const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      GAVEL_EXECUTION: "demo",
      GAVEL_ITERATION: "2",
      GAVEL_FEEDBACK: "fix it",
      GAVEL_INPUT: '{"n":1}',
      GAVEL_WORKSPACE: "/workspace",
      GAVEL_TASK: "do it",
    });
    expect(c?.image).toBe("gavel/example:dev");
    expect(c?.imagePullPolicy).toBe("Never");
    expect(pod.spec?.activeDeadlineSeconds).toBe(60);
    expect(pod.spec?.volumes?.find((v) => v.persistentVolumeClaim !== undefined)?.persistentVolumeClaim).toEqual({
      claimName: "demo-workspace",
      readOnly: false,
    });
  });

  it("the judge pod gets the payload in GAVEL_INPUT and the parent's claims read-only; too big a payload is refused by name", () => {
    const request = {
      name: "demo-i1-v0-rule-judge",
      judge: "rule-judge",
      iteration: 1,
      validatorIndex: 0,
      validator: { type: "semantic" as const, judge_agent: "rule-judge", criteria: "x" },
      depth: 1,
      timeoutSeconds: 30,
      network: "none" as const,
    };
    const child = validationJudgeChild({
      parent: ex,
      owner: ownerMarks(ex),
      worker: agent,
      judge: { ...judge, spec: { ...judge.spec, input_schema: { type: "object", properties: { criteria: { type: "string" } } } } },
      request,
      output: "",
      workerMounts: [],
    }).execution;
    const pod = judgePod(child, judge, workspaceMounts("demo", agent, true));
    if (typeof pod === "string") throw new Error(pod);
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "demo-i1-v0-rule-judge", controller: true });
    const c = pod.spec?.containers[0];
    // gavel's own judge image: its program is known (src/children/images.ts), so it could run under gavel-launch.
    expect(c?.command).toEqual(["node", "/app/dist/judges/rule-judge/main.js"]);
    expect(c?.env?.find((e) => e.name === "GAVEL_INPUT")?.value).toBe('{"criteria":"x"}');
    expect(c?.volumeMounts?.find((m) => m.mountPath === "/workspace")?.readOnly).toBe(true);
    expect(pod.spec?.securityContext?.runAsUser).toBe(65534);
    const big = { ...child, spec: { ...child.spec, input: { output: "x".repeat(ENV_PAYLOAD_LIMIT) } } };
    expect(judgePod(big, judge, [])).toMatch(/at most 98304 in env GAVEL_INPUT, and the child names no parts/);
    expect(judgePod(child, { ...judge, spec: {} }, [])).toMatch(/names no image and no language runtime/);
  });

  it("a ReadWriteOncePod volume is copied for each judge (its own claim, filled by a copier pod); other volumes are shared read-only", () => {
    const two: Agent = {
      ...agent,
      spec: {
        ...agent.spec,
        volumes: [
          { name: "workspace", mount_path: "/workspace", size: "2Gi", access_mode: "ReadWriteOncePod" },
          { name: "cache", mount_path: "/cache" },
        ],
      },
    };
    const child: Execution = {
      ...ex,
      metadata: { name: "demo-i1-v0-j", namespace: "team", uid: "uid-c" },
      spec: { agentRef: { name: "j" }, timeoutSeconds: 60 },
    };
    const { mounts, copies } = judgeWorkspaces("demo", two, "demo-i1-v0-j");
    expect(mounts).toEqual([
      { name: "workspace", source: "demo-i1-v0-j-workspace", mountPath: "/workspace", readOnly: true },
      { name: "cache", source: "demo-cache", mountPath: "/cache", readOnly: true },
    ]);
    expect(copies.map((c) => [c.from.source, c.to.source])).toEqual([["demo-workspace", "demo-i1-v0-j-workspace"]]);
    const pvc = copyClaimManifest(child, copies[0]!);
    expect(pvc.metadata?.name).toBe("demo-i1-v0-j-workspace");
    expect(pvc.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "demo-i1-v0-j" });
    expect(pvc.spec?.accessModes).toEqual(["ReadWriteOncePod"]);
    const pod = podFor(copierWorkload(child, copies, "gavel/base:test"), placementOf(ownerMarks(child)), shape);
    expect(pod.metadata?.name).toBe("gavel-demo-i1-v0-j-copy-ex");
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "demo-i1-v0-j", controller: true });
    const c = pod.spec?.containers[0];
    expect(c?.command?.slice(0, 2)).toEqual(["sh", "-c"]);
    expect(c?.command?.[2]).toMatch(
      /^set -e; for f in \/gavel\/from\/0\/\* \/gavel\/from\/0\/\.\[!\.\]\* \/gavel\/from\/0\/\.\.\?\*; do .*cp -a "\$f" \/gavel\/to\/0\/; fi; done$/,
    );
    expect(c?.volumeMounts?.filter((m) => m.mountPath.startsWith("/gavel/")).map((m) => [m.mountPath, m.readOnly])).toEqual([
      ["/gavel/from/0", true],
      ["/gavel/to/0", false],
    ]);
    expect(
      pod.spec?.volumes
        ?.filter((v) => v.persistentVolumeClaim !== undefined)
        .map((v) => [v.persistentVolumeClaim?.claimName, v.persistentVolumeClaim?.readOnly]),
    ).toEqual([
      ["demo-workspace", true],
      ["demo-i1-v0-j-workspace", false],
    ]);
    expect(pod.spec?.activeDeadlineSeconds).toBe(60);
    expect(pod.metadata?.labels?.["gavel.dev/network"]).toBe("none");
    expect(judgeWorkspaces("demo", agent, "demo-i1-v0-j").copies).toEqual([]);
  });

  it("a worker whose tool-call judges copy a ReadWriteOncePod volume carries the copy source; its judges' stream copier mounts only the copies", () => {
    const rwo = { name: "workspace", mount_path: "/workspace" };
    const rwop = { name: "solo", mount_path: "/solo", access_mode: "ReadWriteOncePod" as const };
    const tool = { type: "semantic" as const, judge_agent: "j", criteria: "safe" };
    const with_ = (strategy: Agent["spec"]["workspace_strategy"], volumes: VolumeSpec[], toolJudges = [tool]): Agent => ({
      ...agent,
      spec: {
        ...agent.spec,
        volumes,
        execution: { tool_validation: toolJudges },
        ...(strategy !== undefined ? { workspace_strategy: strategy } : {}),
      },
    });
    expect(streamsCopies(with_(undefined, [rwo, rwop]))).toBe(true);
    expect(streamsCopies(with_("copy", [rwop]))).toBe(true);
    expect(streamsCopies(with_("snapshot", [rwop]))).toBe(false);
    expect(streamsCopies(with_("copy", [rwo]))).toBe(false);
    expect(streamsCopies(with_(undefined, [rwop], []))).toBe(false);

    const worker = with_(undefined, [rwo, rwop]);
    const run = { name: "demo-i1", iteration: 1, timeoutSeconds: 60 };
    const pod = podFor(workerOf(ex, worker, run, {}), workerPlacement(ownerMarks(ex), worker, "gavel/base:test"), {
      ...shape,
      imagePullPolicy: "Never",
    });
    const source = pod.spec?.initContainers?.find((c) => c.name === COPY_SOURCE_CONTAINER);
    expect(source).toMatchObject({
      image: "gavel/base:test",
      imagePullPolicy: "Never",
      restartPolicy: "Always",
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
    });
    // Every claim of the worker, read-only, by volume name.
    const byName = new Map(pod.spec?.volumes?.map((v) => [v.name, v.persistentVolumeClaim?.claimName]));
    expect(source?.volumeMounts?.map((m) => [byName.get(m.name), m.mountPath, m.readOnly])).toEqual([
      ["demo-workspace", "/gavel/from/workspace", true],
      ["demo-solo", "/gavel/from/solo", true],
    ]);
    expect(
      pod.spec?.containers[0]?.volumeMounts?.filter((m) => m.mountPath.startsWith("/w") || m.mountPath === "/solo").map((m) => m.readOnly),
    ).toEqual([false, false]);
    expect(
      podFor(
        workerOf(ex, with_("snapshot", [rwop]), run, {}),
        workerPlacement(ownerMarks(ex), with_("snapshot", [rwop]), "gavel/base:test"),
        shape,
      ).spec?.initContainers,
    ).toBeUndefined();

    const child: Execution = {
      ...ex,
      metadata: { name: "demo-i1-t0-s1-j", namespace: "team", uid: "uid-c" },
      spec: { agentRef: { name: "j" }, timeoutSeconds: 30 },
    };
    const copies = judgeWorkspaces("demo", worker, child.metadata.name).copies;
    expect(copySourceCommand(copies)).toEqual([
      "sh",
      "-c",
      expect.stringContaining('find "$@" -mindepth 1 -maxdepth 1 -print0 | tar -c -f - --null -T -') as unknown,
      "gavel-copy-source",
      "solo",
    ]);
    const copier = podFor(
      streamCopierWorkload(child, copies, "gavel/base:test"),
      { ...placementOf(ownerMarks(child)), annotations: { [COPY_SOURCE_ANNOTATION]: "gavel-demo-i1-ex" } },
      shape,
    );
    expect(copier.metadata?.annotations?.[COPY_SOURCE_ANNOTATION]).toBe("gavel-demo-i1-ex");
    expect(
      copier.spec?.volumes
        ?.filter((v) => v.persistentVolumeClaim !== undefined)
        .map((v) => [v.persistentVolumeClaim?.claimName, v.persistentVolumeClaim?.readOnly]),
    ).toEqual([["demo-i1-t0-s1-j-solo", false]]);
    expect(copier.spec?.containers[0]?.volumeMounts?.find((m) => m.mountPath.startsWith("/gavel/"))?.mountPath).toBe("/gavel/to/solo");
    expect(copier.spec?.containers[0]?.command?.[2]).toMatch(/until \[ -e \/tmp\/copied \]/);
    expect(COPY_SINK_COMMAND[2]).toMatch(/cd \/gavel\/to .*; tar -x -f - 2>\/tmp\/copy.err$/);
    expect(copyCommitCommand(0)).toEqual(["sh", "-c", COPY_COMMIT_SCRIPT, "gavel-copy-commit", "0"]);
    expect(copyCommitCommand(300)[4]).toBe("255");
    expect(copier.spec?.activeDeadlineSeconds).toBe(30);
  });

  it("the chart's controller-exec policy allows exactly these scripts (its CEL repeats them)", async () => {
    const policy = await readFile(new URL("../../charts/gavel/templates/controller-exec-policy.yaml", import.meta.url), "utf8");
    expect(policy).toContain(`object.command[2] == '${COPY_SOURCE_SCRIPT}'`);
    expect(policy).toContain(`object.container == '${COPY_SOURCE_CONTAINER}'`);
    expect(policy).toContain(`object.command == [${COPY_SINK_COMMAND.map((a) => `'${a}'`).join(", ")}]`);
    expect(policy).toContain(`object.command[2] == '${COPY_COMMIT_SCRIPT}'`);
    expect(policy).toContain("object.command[3] == 'gavel-copy-commit'");
    expect(workloadPodName(copierName("j"))).toBe("gavel-j-copy-ex");
    expect(policy).toContain("request.name.endsWith('-copy-ex')");
  });

  it("spec.workspace_strategy picks shared, snapshot or copy for every volume; shared ReadWriteOnce claims pin the judge to the worker's node", () => {
    const rwo = { name: "workspace", mount_path: "/workspace" };
    const rwx = { name: "data", mount_path: "/data", access_mode: "ReadWriteMany" as const };
    const rwop = { name: "solo", mount_path: "/solo", access_mode: "ReadWriteOncePod" as const };
    const with_ = (strategy: Agent["spec"]["workspace_strategy"], volumes = [rwo, rwx]): Agent => ({
      ...agent,
      spec: { ...agent.spec, volumes, ...(strategy !== undefined ? { workspace_strategy: strategy } : {}) },
    });
    // Default: shared (copy only for ReadWriteOncePod); the ReadWriteOnce claim pins to the worker's node.
    const byDefault = judgeWorkspaces("demo", with_(undefined, [rwo, rwx, rwop]), "j");
    expect([workspaceStrategy(rwo), workspaceStrategy(rwx), workspaceStrategy(rwop)]).toEqual(["shared", "shared", "copy"]);
    expect(byDefault.mounts.map((m) => m.source)).toEqual(["demo-workspace", "demo-data", "j-solo"]);
    expect(byDefault.onWorkerNode).toBe(true);
    expect(judgeWorkspaces("demo", with_(undefined, [rwx]), "j").onWorkerNode).toBe(false);
    // snapshot: every volume restored from a VolumeSnapshot, nothing pinned.
    const snap = judgeWorkspaces("demo", with_("snapshot"), "j");
    expect(snap.snapshots.map((s) => [s.from.source, s.to.source])).toEqual([
      ["demo-workspace", "j-workspace"],
      ["demo-data", "j-data"],
    ]);
    expect(snap.copies).toEqual([]);
    expect(snap.onWorkerNode).toBe(false);
    expect(snap.mounts.every((m) => m.readOnly)).toBe(true);
    // copy of a ReadWriteOnce claim: the copier reads it on the worker's node.
    const copy = judgeWorkspaces("demo", with_("copy"), "j");
    expect(copy.copies).toHaveLength(2);
    expect(copy.onWorkerNode).toBe(true);

    const child: Execution = { ...ex, metadata: { name: "j", namespace: "team", uid: "uid-c" }, spec: { agentRef: { name: "judge" } } };
    const vs = volumeSnapshotManifest(child, snap.snapshots[0]!, "csi-hostpath-snapclass");
    expect(vs).toMatchObject({
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshot",
      metadata: { name: "j-workspace", ownerReferences: [{ kind: "Execution", name: "j" }] },
      spec: { volumeSnapshotClassName: "csi-hostpath-snapclass", source: { persistentVolumeClaimName: "demo-workspace" } },
    });
    const restored = restoredClaimManifest(child, snap.snapshots[0]!);
    expect(restored.metadata?.name).toBe("j-workspace");
    expect(restored.spec?.dataSource).toEqual({ apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "j-workspace" });
    expect(restored.spec?.accessModes).toEqual(["ReadWriteOnce"]);
    expect(snapshotError({ status: { error: { message: "driver says no" } } })).toBe("driver says no");
    expect(snapshotError({ status: { readyToUse: false } })).toBeUndefined();

    const pinned = judgePod(child, judge, byDefault.mounts, "node-a") as k8s.V1Pod;
    expect(pinned.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms).toEqual([
      { matchFields: [{ key: "metadata.name", operator: "In", values: ["node-a"] }] },
    ]);
    // The worker's node is kept with its result, for judges that start after its pod is gone.
    const result = resultConfigMaps(
      ownerMarks(ex),
      "demo-i1",
      { iteration: 1, exitCode: 0, stdout: "", stderr: "", timedOut: false, cancelled: false },
      "node-a",
    ).at(-1);
    expect(result?.data?.node).toBe("node-a");
  });

  it("a snapshot class is the CSI driver's default one, else its only one; anything else is refused naming spec.workspace_strategy", () => {
    const hostpath = { name: "csi-hostpath-snapclass", driver: "hostpath.csi.k8s.io", default: false };
    expect(chooseSnapshotClass("workspace", "csi-hostpath-sc", "hostpath.csi.k8s.io", [hostpath])).toEqual({
      name: "csi-hostpath-snapclass",
    });
    expect(
      chooseSnapshotClass("workspace", "sc", "hostpath.csi.k8s.io", [
        hostpath,
        { ...hostpath, name: "other" },
        { ...hostpath, name: "main", default: true },
      ]),
    ).toEqual({ name: "main" });
    const problem = (r: { name: string } | { problem: string }) => ("problem" in r ? r.problem : `chose ${r.name}`);
    expect(problem(chooseSnapshotClass("workspace", "sc", "hostpath.csi.k8s.io", [hostpath, { ...hostpath, name: "other" }]))).toMatch(
      /^spec\.workspace_strategy: .*2 VolumeSnapshotClasses have driver hostpath\.csi\.k8s\.io and none is the default/,
    );
    expect(chooseSnapshotClass("workspace", "local-path", "rancher.io/local-path", [hostpath])).toEqual({
      problem:
        "spec.workspace_strategy: snapshot cannot serve volume workspace (StorageClass local-path, driver rancher.io/local-path): no VolumeSnapshotClass has driver rancher.io/local-path (classes: csi-hostpath-snapclass (hostpath.csi.k8s.io)); use copy",
    });
    expect(problem(chooseSnapshotClass("workspace", "local-path", "rancher.io/local-path", undefined))).toMatch(
      /the VolumeSnapshot API \(snapshot\.storage\.k8s\.io\/v1\) is not installed in this cluster; use copy$/,
    );
    expect(
      snapshotClassOf({ metadata: { name: "c", annotations: { "snapshot.storage.kubernetes.io/is-default-class": "true" } }, driver: "d" }),
    ).toEqual({ name: "c", driver: "d", default: true });
    expect(snapshotClassOf({ metadata: {} })).toBeUndefined();
  });

  it("claims take the volume's size, access mode and storage class", () => {
    const pvc = claimManifest(ownerMarks(ex), agent.spec.volumes![0]!);
    expect(pvc.metadata?.name).toBe("demo-workspace");
    expect(pvc.spec).toEqual({ accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } }, storageClassName: "fast" });
    expect(claimName("My_Run", "Work Space")).toBe("my-run-work-space");
  });

  it("a judge payload beyond env goes into ConfigMap parts owned by the parent and mounted read-only; one over 8 MiB fails the child naming spec.input", () => {
    const request = {
      name: "demo-i1-v0-rule-judge",
      judge: "rule-judge",
      iteration: 1,
      validatorIndex: 0,
      validator: { type: "semantic" as const, judge_agent: "rule-judge", criteria: "x" },
      depth: 1,
      timeoutSeconds: 30,
      network: "none" as const,
    };
    const make = (output: string) =>
      validationJudgeChild({ parent: ex, owner: ownerMarks(ex), worker: agent, judge, request, output, workerMounts: [] }).execution;
    // Small: nothing changes, the payload stays in spec.input and env.
    expect(storedJudgeChild(make("tiny"))).toEqual({ execution: make("tiny"), parts: [] });
    // Between env and inline limits: parts, and spec.input kept for kubectl.
    const medium = storedJudgeChild(make("m".repeat(ENV_PAYLOAD_LIMIT)));
    expect(medium.parts).toHaveLength(1);
    expect(medium.execution.spec.input).toBeDefined();
    // 4 MiB: five parts, spec.input dropped, the annotation describes them.
    const output = "z".repeat(4 * 1024 * 1024);
    const large = storedJudgeChild(make(output));
    expect(large.execution.spec.input).toBeUndefined();
    expect(large.parts.map((c) => c.metadata?.name)).toEqual([
      "demo-i1-v0-rule-judge-input-00",
      "demo-i1-v0-rule-judge-input-01",
      "demo-i1-v0-rule-judge-input-02",
      "demo-i1-v0-rule-judge-input-03",
      "demo-i1-v0-rule-judge-input-04",
    ]);
    expect(large.parts[0]?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "demo", controller: true });
    const d = parseDescriptor(large.execution.metadata.annotations?.[INPUT_ANNOTATION]);
    expect(d?.parts).toBe(5);
    const payload = JSON.parse(joinParts("demo-i1-v0-rule-judge-input", d!, large.parts).toString("utf8")) as {
      content: string;
      intent: string;
    };
    expect(payload.intent).toBe("x");
    expect(payload.content === output, "the payload's content is the output, whole").toBe(true);
    const pod = judgePod(large.execution, judge, []);
    if (typeof pod === "string") throw new Error(pod);
    const c = pod.spec?.containers[0];
    expect(c?.env?.find((e) => e.name === "GAVEL_INPUT")).toBeUndefined();
    expect(c?.env?.find((e) => e.name === "GAVEL_INPUT_DIR")?.value).toBe("/var/run/gavel/input");
    expect(c?.volumeMounts?.find((m) => m.mountPath === "/var/run/gavel/input")).toEqual({
      name: "input",
      mountPath: "/var/run/gavel/input",
      readOnly: true,
    });
    const sources = pod.spec?.volumes?.find((v) => v.name === "input")?.projected?.sources ?? [];
    expect(sources.map((s) => s.configMap?.items?.[0]?.path)).toEqual(["part-00", "part-01", "part-02", "part-03", "part-04"]);
    expect(INLINE_INPUT_LIMIT).toBeLessThan(1024 * 1024);
    // Over the limit: the child fails with the field named, and no part is made.
    const huge = storedJudgeChild(make("h".repeat(MAX_PAYLOAD_BYTES)));
    expect(huge.parts).toEqual([]);
    expect(huge.execution.spec.input).toBeUndefined();
    expect(huge.execution.metadata.annotations?.[SPAWN_ERROR_ANNOTATION]).toMatch(
      /^spec\.input: the judge payload is \d+ bytes; the limit is 8388608 \(8 MiB\)/,
    );
  });
});
