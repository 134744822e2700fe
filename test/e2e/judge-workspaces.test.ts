// Workspace strategies on the single-node cluster (ADR 0034, 0038). `copy`: a worker whose
// volume is ReadWriteOncePod (one pod at a time may attach it) is judged by a multi_judge of
// three parallel judges; each gets its own copy (a claim filled by a copier pod from the
// worker's claim), reads the worker's report from it, and its write is refused with EROFS; the
// worker's files are unchanged afterwards. `shared`: the judge mounts the worker's ReadWriteOnce
// claim, pinned to the worker's node. `snapshot`: on the test CSI driver's StorageClass (csi.sh,
// ADR 0045) the judge reads its own claim restored from a VolumeSnapshot of the worker's, and
// they go with the Execution; on local-path (no VolumeSnapshotClass for its driver) it is
// refused before any pod starts, naming spec.workspace_strategy. Tool-call judges of a
// ReadWriteOncePod volume, which the running worker holds, get copies streamed out of the
// worker's pod (its copy-source sidecar, ADR 0041).
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { eventuallyGone, type Cluster } from "../harness/cluster.js";
import { chartRuns } from "../harness/chart-runs.js";
import { commandJudgeYaml, executionYaml, oneShotWorkerYaml, semanticValidation } from "../harness/example-worker.js";
import { callSummary, type Executions } from "../harness/executions.js";
import { CSI_CLASS, CSI_DRIVER } from "../harness/paths.js";
import { GROUP, VERSION } from "../../src/api/types.js";

// Exit 0 only when the worker's report is readable and a write to the workspace is refused with EROFS.
const CHECK = `const fs=require('fs');const r=JSON.parse(fs.readFileSync('/workspace/report.json','utf8'));let w='written';try{fs.writeFileSync('/workspace/judge-was-here','x')}catch(e){w=e.code}console.log(r.status,w);process.exit(r.status==='success'&&w==='EROFS'?0:1)`;

// A tool-call judge's check: the workspace as of the call (no notes before fs.write, "one" after), and no write.
const TOOL_CHECK = `const fs=require('fs');const t=JSON.parse(process.env.GAVEL_INPUT).proposed_tool_call.tool;let s='none';try{s=fs.readFileSync('/workspace/notes.txt','utf8')}catch(e){}let w='written';try{fs.writeFileSync('/workspace/judge-was-here','x')}catch(e){w=e.code}console.log(t,s,w);process.exit(w==='EROFS'&&s===(t==='fs.write'?'none':'one')?0:1)`;

const JUDGES = ["copy-judge-a", "copy-judge-b", "copy-judge-c"];

const judgeYaml = (name: string): string => commandJudgeYaml(name, { timeout: "120s" });

const RUN = `${oneShotWorkerYaml(
  "rwop-writer",
  `
      - type: multi_judge
        judges: [${JUDGES.join(", ")}]
        consensus: unanimous
        min_judges_required: 3
        criteria: |
          run: node -e "${CHECK}"
        min_score: 1.0`,
  { volume: "      access_mode: ReadWriteOncePod\n" },
)}---${executionYaml("rwop-copy", "rwop-writer", { correct_first_time: true })}`;

/** A worker with one ReadWriteOnce volume (of `storageClass`, else the default), judged by copy-judge-a with the same check, under `strategy`. */
function strategyRun(name: string, strategy: string, storageClass?: string): string {
  const volume = storageClass === undefined ? undefined : `      storage_class: ${storageClass}\n`;
  const worker = oneShotWorkerYaml(`${name}-writer`, semanticValidation(JUDGES[0] ?? "", `node -e "${CHECK}"`), {
    spec: `  workspace_strategy: ${strategy}\n`,
    volume,
  });
  return `${worker}---${executionYaml(name, `${name}-writer`, { correct_first_time: true })}`;
}

describe("judge workspaces on the cluster: the copy, shared and snapshot strategies", () => {
  let cluster: Cluster;
  let runs: Executions;

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-judge-workspaces"));
    await runs.apply(JUDGES.map(judgeYaml).join("---"));
  });

  it("three parallel judges of a ReadWriteOncePod workspace each read their own copy, cannot write it, and leave the worker's files unchanged", async () => {
    await runs.apply(RUN);
    const ex = await runs.final("rwop-copy", 300_000);
    const children = await Promise.all((ex.status?.children ?? []).map((c) => runs.get(c.name)));
    expect(ex.status?.phase, JSON.stringify(children.map((c) => c?.status))).toBe("Succeeded");
    expect(children.map((c) => c?.spec.agentRef.name).sort()).toEqual(JUDGES);
    for (const child of children) expect(child?.status?.verdict?.score, JSON.stringify(child?.status)).toBe(1);
    // Each judge had a claim of its own, owned by its child Execution.
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: runs.namespace })).items;
    for (const child of children) {
      const copy = claims.find((c) => c.metadata?.name === `${child?.metadata.name ?? ""}-workspace`);
      expect(copy?.spec?.accessModes).toEqual(["ReadWriteOncePod"]);
      expect(copy?.metadata?.ownerReferences?.[0]?.name).toBe(child?.metadata.name);
    }
    // The worker's own files are as it wrote them: no judge wrote there.
    const dir = await runs.workspace("rwop-copy");
    expect((await readdir(dir)).sort()).toEqual(["report.json", "runs.log", "sum.js", "sum.test.js"]);
    expect(JSON.parse(await readFile(join(dir, "report.json"), "utf8"))).toMatchObject({ status: "success", iteration: 1 });
  }, 360_000);

  it("shared: the judge mounts the worker's ReadWriteOnce claim read-only, scheduled onto the worker's node", async () => {
    await runs.apply(strategyRun("rwo-shared", "shared"));
    const ex = await runs.final("rwo-shared");
    const child = await runs.get(ex.status?.children?.[0]?.name ?? "");
    expect(ex.status?.phase, JSON.stringify(child?.status)).toBe("Succeeded");
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const pods = (await core.listNamespacedPod({ namespace: runs.namespace })).items;
    const worker = pods.find((p) => p.metadata?.name === "gavel-rwo-shared-i1-ex");
    const judge = pods.find((p) => p.metadata?.ownerReferences?.some((o) => o.name === child?.metadata.name));
    expect(judge?.spec?.volumes?.find((v) => v.persistentVolumeClaim !== undefined)?.persistentVolumeClaim).toEqual({
      claimName: "rwo-shared-workspace",
      readOnly: true,
    });
    const terms = judge?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    expect(terms).toEqual([{ matchFields: [{ key: "metadata.name", operator: "In", values: [worker?.spec?.nodeName] }] }]);
    expect(judge?.spec?.nodeName).toBe(worker?.spec?.nodeName);
  }, 180_000);

  it("snapshot without a VolumeSnapshotClass for the storage class's driver is refused before any pod starts, naming spec.workspace_strategy", async () => {
    await runs.apply(strategyRun("rwo-snapshot", "snapshot"));
    const ex = await runs.final("rwo-snapshot", 60_000);
    expect(ex.status?.phase).toBe("Failed");
    const accepted = ex.status?.conditions?.find((c) => c.type === "Accepted");
    expect(accepted).toMatchObject({ status: "False", reason: "WorkspaceStrategyUnsupported" });
    expect(accepted?.message).toBe(
      `spec.workspace_strategy: snapshot cannot serve volume workspace (StorageClass local-path, driver rancher.io/local-path): no VolumeSnapshotClass has driver rancher.io/local-path (classes: ${CSI_CLASS} (${CSI_DRIVER})); use copy`,
    );
    expect(await runs.podsOf("rwo-snapshot")).toEqual([]);
    expect(ex.status?.startTime).toBeUndefined();
  }, 90_000);

  it("snapshot on a CSI driver that takes snapshots: the judge reads its own claim restored from a VolumeSnapshot, cannot write it, and the snapshot and claims go with the Execution", async () => {
    await runs.apply(strategyRun("csi-snapshot", "snapshot", CSI_CLASS));
    const ex = await runs.final("csi-snapshot", 120_000);
    const child = await runs.get(ex.status?.children?.[0]?.name ?? "");
    // The judge's check passed: it read the worker's report and its write failed with EROFS.
    expect(ex.status?.phase, JSON.stringify(child?.status)).toBe("Succeeded");
    expect(child?.status?.verdict?.score, JSON.stringify(child?.status)).toBe(1);
    const kid = child?.metadata.name ?? "";
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const custom = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    const snapshots = { group: "snapshot.storage.k8s.io", version: "v1", namespace: runs.namespace, plural: "volumesnapshots" };
    // The judge's claim was restored from its VolumeSnapshot of the worker's claim, by the CSI driver.
    const snap = (await custom.getNamespacedCustomObject({ ...snapshots, name: `${kid}-workspace` })) as {
      spec?: { source?: { persistentVolumeClaimName?: string } };
      status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string };
    };
    expect(snap.spec?.source?.persistentVolumeClaimName).toBe("csi-snapshot-workspace");
    expect(snap.status?.readyToUse).toBe(true);
    const restored = await core.readNamespacedPersistentVolumeClaim({ name: `${kid}-workspace`, namespace: runs.namespace });
    expect(restored.spec?.dataSource).toEqual({ apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: `${kid}-workspace` });
    const pvs = [
      (await core.readNamespacedPersistentVolumeClaim({ name: "csi-snapshot-workspace", namespace: runs.namespace })).spec?.volumeName ??
        "",
      restored.spec?.volumeName ?? "",
    ];
    expect((await core.readPersistentVolume({ name: pvs[1] ?? "" })).spec?.csi?.driver).toBe(CSI_DRIVER);
    // The worker's own files are as it wrote them: the judge did not write there.
    const dir = await runs.workspace("csi-snapshot");
    expect((await readdir(dir)).sort()).toEqual(["report.json", "runs.log", "sum.js", "sum.test.js"]);
    // Deleting the Execution takes the judge's VolumeSnapshot (and its content), its claim and the worker's, and their volumes.
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: runs.namespace,
      plural: "executions",
      name: "csi-snapshot",
    });
    const content = snap.status?.boundVolumeSnapshotContentName ?? "";
    await eventuallyGone(
      () =>
        custom.getClusterCustomObject({ group: "snapshot.storage.k8s.io", version: "v1", plural: "volumesnapshotcontents", name: content }),
      60_000,
      `VolumeSnapshotContent ${content}`,
    );
    for (const pv of pvs) await eventuallyGone(() => core.readPersistentVolume({ name: pv }), 60_000, `volume ${pv}`);
    await eventuallyGone(
      () => custom.getNamespacedCustomObject({ ...snapshots, name: `${kid}-workspace` }),
      10_000,
      `VolumeSnapshot ${kid}-workspace`,
    );
  }, 180_000);

  it("tool-call judges of a ReadWriteOncePod workspace get copies streamed out of the running worker's pod: each sees the workspace as of its call and cannot write it", async () => {
    // The worker writes notes.txt (call 1), then lists the workspace (call 2); each call's judge
    // reads its copy: call 1's has no notes yet, call 2's has them; its write is refused (EROFS).
    await runs.apply(`
${commandJudgeYaml("tool-copy-judge", { allowlist: ["node"], timeout: "120s", inputs: "      proposed_tool_call: { type: object }\n" })}
---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: rwop-tool-writer }
spec:
  runtime:
    image: "gavel/agent:dev"
    pull_policy: Never
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: fs.write, args: { path: /workspace/notes.txt, content: one }, intent: write notes }]
          - tool_calls: [{ tool: cmd.run, args: { command: ls /workspace }, intent: list }]
          - final: wrote and listed
  task: { instruction: "Write notes, then list the workspace." }
  tools: [fs.write, { name: cmd.run, allowlist: [ls] }]
  security: { network: { mode: none }, resources: { timeout: 240s } }
  volumes: [{ name: workspace, mount_path: /workspace, size: 16Mi, access_mode: ReadWriteOncePod }]
  execution:
    mode: one-shot
    validation: [{ type: exit_code, expected: 0 }]
    tool_validation:
      - type: semantic
        judge_agent: tool-copy-judge
        min_score: 1.0
        criteria: |
          run: node -e "${TOOL_CHECK}"
---
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata: { name: rwop-tool }
spec: { agentRef: { name: rwop-tool-writer } }
`);
    const ex = await runs.final("rwop-tool", 300_000);
    const kids = (await runs.childrenOf("rwop-tool")).filter((k) => k.spec.parent?.purpose === "tool_validation");
    expect(ex.status?.phase, JSON.stringify(kids.map((k) => k.status))).toBe("Succeeded");
    expect(ex.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary)).toEqual([
      [1, "fs.write", "allowed", "", 1],
      [2, "cmd.run", "allowed", "", 1],
    ]);
    expect(kids.map((k) => k.status?.verdict?.score)).toEqual([1, 1]);
    // The worker's pod carried the copy source; each judge had a ReadWriteOncePod claim of its own.
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const worker = await core.readNamespacedPod({ name: "gavel-rwop-tool-i1-ex", namespace: runs.namespace });
    expect(worker.spec?.initContainers?.map((c) => [c.name, c.restartPolicy])).toEqual([["gavel-copy-source", "Always"]]);
    const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: runs.namespace })).items;
    for (const kid of kids)
      expect(claims.find((c) => c.metadata?.name === `${kid.metadata.name}-workspace`)?.spec?.accessModes).toEqual(["ReadWriteOncePod"]);
    // The worker's files are as it wrote them.
    const dir = await runs.workspace("rwop-tool");
    expect((await readdir(dir)).sort()).toEqual(["notes.txt"]);
    expect(await readFile(join(dir, "notes.txt"), "utf8")).toBe("one");
  }, 360_000);
});
