// The controller's fast tier: the Execution reconciler against a real control plane
// (kube-apiserver + etcd with gavel's CRDs, no kubelet: test/harness/control-plane.ts), its
// workloads run by the in-memory double (test/harness/in-memory-workloads.ts). One case or
// more per concern: runs and their validators, judge children, workspace copies and
// snapshots, file readers, status and conditions. State is asserted as the API server holds it.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { CHILD_LABELS } from "../../src/children/workloads.js";
import { ExecutionReconciler, podWorkloadsFor } from "../../src/controller/execution-reconciler.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { eventually } from "../harness/eventually.js";
import { parseSamples } from "../harness/metrics.js";
import { InMemoryWorkloads, type SimulatedRun } from "../harness/in-memory-workloads.js";
import type { WorkloadSpec } from "../../src/runtime/workload.js";

const FINAL = ["Succeeded", "Failed", "Cancelled", "TimedOut"];
const VERDICT = (score: number) => ({ stdout: `${JSON.stringify({ score, confidence: 1, reasoning: `score ${score}` })}\n` });

/** What a simulated worker of one Execution does, by iteration. */
type Worker = (spec: WorkloadSpec, iteration: number, workloads: InMemoryWorkloads) => SimulatedRun;

describe("Execution reconciler on a control plane with in-memory workloads (the fast tier)", () => {
  let cp: ControlPlane;
  let ns: string;
  let api: k8s.CustomObjectsApi;
  let core: k8s.CoreV1Api;
  let workloads: InMemoryWorkloads;
  let reconciler: ExecutionReconciler;
  const workers = new Map<string, Worker>();
  /** A judge's score by the judge Agent's image; a judge that sees the worker's file scores by it. */
  const judges = new Map<string, (spec: WorkloadSpec, workloads: InMemoryWorkloads) => SimulatedRun>();

  /** Copies what a copier's source claims hold into its targets, as `cp -a` does. */
  const copy = (spec: WorkloadSpec, w: InMemoryWorkloads): SimulatedRun => {
    const from = spec.mounts.filter((m) => m.readOnly);
    const to = spec.mounts.filter((m) => !m.readOnly);
    from.forEach((f, i) => {
      const target = to[i];
      if (target === undefined) return;
      for (const [key, content] of [...w.files])
        if (key.startsWith(`${f.source}:`)) w.files.set(`${target.source}:${key.slice(f.source.length + 1)}`, content);
    });
    return { exitCode: 0 };
  };

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace("ctl");
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    core = cp.kc.makeApiClient(k8s.CoreV1Api);
    workloads = new InMemoryWorkloads((spec, w) => {
      const role = spec.labels?.[CHILD_LABELS.role];
      if (role === "copier") return copy(spec, w);
      if (role === "judge") return judges.get(spec.image)?.(spec, w) ?? { exitCode: 2, stderr: `no judge ${spec.image}` };
      const behaviour = workers.get(spec.labels?.[CHILD_LABELS.execution] ?? "");
      return behaviour?.(spec, Number(spec.env?.GAVEL_ITERATION), w) ?? { exitCode: 0 };
    });
    const { informer } = podWorkloadsFor(cp.kc, { namespace: ns });
    // No kubelet ends a pod here, so nothing wakes an Execution when a workload ends: a short resync does.
    reconciler = new ExecutionReconciler({
      kc: cp.kc,
      pods: { informer, workloads },
      namespace: ns,
      resyncMs: 200,
      podRetentionSeconds: 0,
      agentGraceMs: 300,
    });
    await reconciler.start();
  }, 180_000);

  afterAll(async () => {
    await reconciler?.stop();
    await cp?.stop();
  });

  const create = async (plural: "agents" | "executions", body: object): Promise<void> => {
    await api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural, body });
  };
  const agent = (name: string, spec: Agent["spec"]) =>
    create("agents", { apiVersion: `${GROUP}/${VERSION}`, kind: "Agent", metadata: { name }, spec });
  const judgeAgent = (name: string, image: string) => agent(name, { runtime: { image }, execution: { mode: "one-shot" } } as Agent["spec"]);
  const execution = (name: string, agentName: string) =>
    create("executions", {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "Execution",
      metadata: { name },
      spec: { agentRef: { name: agentName } },
    });
  const get = async (name: string): Promise<Execution> =>
    (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name })) as Execution;
  const final = (name: string) =>
    eventually(
      async () => {
        const ex = await get(name);
        return FINAL.includes(ex.status?.phase ?? "") ? ex : undefined;
      },
      30_000,
      `${name} to end`,
    );
  const workspace = { volumes: [{ name: "workspace", mount_path: "/workspace", size: "16Mi" }] };

  describe("runs and their validators", () => {
    it("Given exit_code and regex validators, a failing first iteration refines with feedback and the second passes; each result is kept in its ConfigMap", async () => {
      workers.set("refine", (_spec, i) => (i === 1 ? { exitCode: 3, stderr: "kaput: disk on fire" } : { stdout: "all tests pass\n" }));
      await agent("refiner", {
        runtime: { image: "test/worker" },
        execution: { mode: "iterative", max_iterations: 3, validation: [{ type: "exit_code" }, { type: "regex", pattern: "tests pass" }] },
      } as Agent["spec"]);
      await execution("refine", "refiner");
      const ex = await final("refine");
      expect(ex.status?.phase).toBe("Succeeded");
      expect(ex.status?.iterations?.map((it) => [it.number, it.phase, it.exitCode])).toEqual([
        [1, "Refining", 3],
        [2, "Passed", 0],
      ]);
      expect(ex.status?.iterations?.[1]?.feedback).toContain("kaput: disk on fire");
      // The second worker got the first one's feedback, in its env contract
      const started = workloads.started.filter((s) => s.labels?.[CHILD_LABELS.execution] === "refine");
      expect(started.map((s) => s.name)).toEqual(["refine-i1", "refine-i2"]);
      expect(started[1]?.env?.GAVEL_FEEDBACK).toContain("kaput");
      const result = await core.readNamespacedConfigMap({ name: "refine-i2-result", namespace: ns });
      expect(result.data).toMatchObject({ exitCode: "0", stdout: "all tests pass\n" });
      expect(result.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "refine", controller: true });
    });
  });

  describe("judge children", () => {
    it("Given a semantic validator, the judge runs as a child Execution owned by the run, with the worker's output as payload; its verdict passes the run", async () => {
      workers.set("judged", () => ({ stdout: "the answer is 42\n" }));
      judges.set("test/judge-reads", (spec) => VERDICT(String(spec.env?.GAVEL_INPUT).includes("the answer is 42") ? 1 : 0));
      await judgeAgent("reader-judge", "test/judge-reads");
      await agent("judged-worker", {
        runtime: { image: "test/worker" },
        execution: { mode: "one-shot", validation: [{ type: "semantic", judge_agent: "reader-judge", criteria: "says 42", min_score: 1 }] },
      } as Agent["spec"]);
      await execution("judged", "judged-worker");
      const ex = await final("judged");
      expect(ex.status?.phase).toBe("Succeeded");
      expect(ex.status?.children?.map((c) => [c.name, c.purpose, c.phase])).toEqual([
        ["judged-i1-v0-reader-judge", "validation", "Succeeded"],
      ]);
      const child = await get("judged-i1-v0-reader-judge");
      expect(child.spec.parent).toMatchObject({ name: "judged", iteration: 1, purpose: "validation" });
      expect(child.metadata.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "judged", controller: true });
      expect(child.status?.verdict?.score).toBe(1);
    });

    it("Given a judge whose workload fails, its child ends Failed with the rejection and the run fails", async () => {
      workers.set("rejected", () => ({ stdout: "done\n" }));
      judges.set("test/judge-crashes", () => ({ exitCode: 1, stderr: "judge crashed" }));
      await judgeAgent("crashing-judge", "test/judge-crashes");
      await agent("rejected-worker", {
        runtime: { image: "test/worker" },
        execution: { mode: "one-shot", validation: [{ type: "semantic", judge_agent: "crashing-judge" }] },
      } as Agent["spec"]);
      await execution("rejected", "rejected-worker");
      const ex = await final("rejected");
      expect(ex.status?.phase).toBe("Failed");
      const child = await get("rejected-i1-v0-crashing-judge");
      expect(child.status?.phase).toBe("Failed");
      expect(child.status?.rejection).toBeDefined();
    });
  });

  describe("workspace copies and snapshots", () => {
    it("Given a ReadWriteOncePod workspace, the judge gets a copy in a claim of its own, made by a copier that goes once the judge runs", async () => {
      workers.set("copied", (spec, _i, w) => {
        const mount = spec.mounts.find((m) => m.name === "workspace");
        if (mount !== undefined) w.write(mount, "/workspace/sum.js", "module.exports = (a, b) => a + b;");
        return { stdout: "wrote sum.js\n" };
      });
      judges.set("test/judge-files", (spec, w) => {
        const mount = spec.mounts.find((m) => m.mountPath === "/workspace");
        return VERDICT(
          mount !== undefined && mount.readOnly && w.files.get(`${mount.source}:/workspace/sum.js`)?.includes("a + b") === true ? 1 : 0,
        );
      });
      await judgeAgent("file-judge", "test/judge-files");
      await agent("copy-worker", {
        runtime: { image: "test/worker" },
        volumes: [{ name: "workspace", mount_path: "/workspace", size: "16Mi", access_mode: "ReadWriteOncePod" }],
        execution: { mode: "one-shot", validation: [{ type: "semantic", judge_agent: "file-judge" }] },
      } as Agent["spec"]);
      await execution("copied", "copy-worker");
      const ex = await final("copied");
      expect(ex.status?.phase).toBe("Succeeded");
      const child = "copied-i1-v0-file-judge";
      // The worker's claim and the judge's copy, each owned by its Execution
      const claims = await core.listNamespacedPersistentVolumeClaim({ namespace: ns });
      const owners = claims.items
        .map((c) => [c.metadata?.name, c.spec?.accessModes, c.metadata?.ownerReferences?.[0]?.name])
        .filter(([name]) => String(name).startsWith("copied"));
      expect(owners.sort()).toEqual([
        ["copied-i1-v0-file-judge-workspace", ["ReadWriteOncePod"], child],
        ["copied-workspace", ["ReadWriteOncePod"], "copied"],
      ]);
      // The judge mounted its copy, not the worker's claim; the copier ran before it and is gone
      const names = workloads.started.map((s) => s.name);
      expect(names.indexOf(`${child}-copy`)).toBeGreaterThan(-1);
      expect(names.indexOf(`${child}-copy`)).toBeLessThan(names.indexOf(child));
      expect(workloads.started.find((s) => s.name === child)?.mounts.map((m) => [m.source, m.readOnly])).toEqual([
        [`${child}-workspace`, true],
      ]);
      expect(workloads.names()).not.toContain(`${child}-copy`);
    });

    it("Given workspace_strategy snapshot on a cluster with no default StorageClass, the run is refused before any workload starts, naming the field", async () => {
      await agent("snapshot-worker", {
        runtime: { image: "test/worker" },
        workspace_strategy: "snapshot",
        ...workspace,
        execution: { mode: "one-shot" },
      } as Agent["spec"]);
      await execution("snapped", "snapshot-worker");
      const ex = await final("snapped");
      expect(ex.status?.phase).toBe("Failed");
      const accepted = ex.status?.conditions?.find((c) => c.type === "Accepted");
      expect([accepted?.status, accepted?.reason]).toEqual(["False", "WorkspaceStrategyUnsupported"]);
      expect(accepted?.message).toBe(
        "spec.workspace_strategy: snapshot cannot serve volume workspace: the cluster has no default StorageClass",
      );
      expect(workloads.started.filter((s) => s.labels?.[CHILD_LABELS.execution] === "snapped")).toEqual([]);
    });
  });

  describe("file readers", () => {
    it("Given json_schema on a workspace file, a reader of each iteration reads it (read-only); the first iteration's readers go when the second starts", async () => {
      workers.set("schema", (spec, i, w) => {
        const mount = spec.mounts.find((m) => m.name === "workspace");
        if (mount !== undefined) w.write(mount, "/workspace/out.json", JSON.stringify({ answer: i === 1 ? "forty-two" : 42 }));
        return {};
      });
      const schema = { type: "object", required: ["answer"], properties: { answer: { type: "integer" } } };
      await agent("schema-worker", {
        runtime: { image: "test/worker" },
        ...workspace,
        execution: {
          mode: "iterative",
          max_iterations: 2,
          validation: [{ type: "json_schema", target_path: "/workspace/out.json", schema }],
        },
      } as Agent["spec"]);
      await execution("schema", "schema-worker");
      const ex = await final("schema");
      expect(ex.status?.phase).toBe("Succeeded");
      expect(ex.status?.iterations?.[0]?.validators?.[0]).toMatchObject({ type: "json_schema", passed: false });
      expect(ex.status?.iterations?.[0]?.validators?.[0]?.reasoning).toContain("/answer: must be integer");
      const readers = workloads.started.filter(
        (s) => s.labels?.[CHILD_LABELS.execution] === "schema" && s.labels[CHILD_LABELS.role] === "reader",
      );
      expect(readers.map((r) => [r.labels?.[CHILD_LABELS.iteration], r.mounts.map((m) => [m.source, m.readOnly])])).toEqual([
        ["1", [["schema-workspace", true]]],
        ["2", [["schema-workspace", true]]],
      ]);
      // Retired: iteration 1's when iteration 2's worker started, iteration 2's right after the status write that ended the run
      expect(workloads.stopped.filter((n) => n.startsWith("schema-"))).toEqual([]);
      await eventually(
        () => (workloads.names().some((n) => n.startsWith("schema-")) ? undefined : true),
        5_000,
        "the run's workloads to be retired",
      );
    });

    it("Given a target_path outside every workspace volume, the validator fails naming the path and no reader starts", async () => {
      await agent("outside-worker", {
        runtime: { image: "test/worker" },
        ...workspace,
        execution: { mode: "one-shot", validation: [{ type: "json_schema", target_path: "/tmp/out.json", schema: { type: "object" } }] },
      } as Agent["spec"]);
      await execution("outside", "outside-worker");
      const ex = await final("outside");
      expect(ex.status?.phase).toBe("Failed");
      expect(ex.status?.iterations?.[0]?.validators?.[0]?.reasoning).toContain(
        "/tmp/out.json is not inside any workspace volume (/workspace)",
      );
      expect(
        workloads.started.filter((s) => s.labels?.[CHILD_LABELS.execution] === "outside").map((s) => s.labels?.[CHILD_LABELS.role]),
      ).toEqual(["worker"]);
    });
  });

  describe("status and conditions", () => {
    it("Given an Execution whose Agent never appears, it fails after the grace with Accepted=False naming spec.agentRef.name", async () => {
      await execution("orphan", "no-such-agent");
      const ex = await final("orphan");
      expect(ex.status?.phase).toBe("Failed");
      expect(ex.status?.conditions?.find((c) => c.type === "Accepted")).toMatchObject({
        status: "False",
        reason: "AgentNotFound",
        observedGeneration: 1,
        message: `spec.agentRef.name: Agent "no-such-agent" not found in namespace ${ns}`,
      });
    });

    it("Given the cancel annotation on a running Execution, its worker is stopped and it ends Cancelled; its history is in Kubernetes Events", async () => {
      workers.set("stopped", () => ({ hang: true }));
      await agent("hanging-worker", { runtime: { image: "test/worker" }, execution: { mode: "one-shot" } } as Agent["spec"]);
      await execution("stopped", "hanging-worker");
      await eventually(() => (workloads.names().includes("stopped-i1") ? true : undefined), 10_000, "the worker to start");
      // A merge patch, as `kubectl annotate` sends: a replace of the object read a moment before
      // fails with 409 when the controller writes the run's status in between (seen in make test).
      await api.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: "executions",
          name: "stopped",
          body: { metadata: { annotations: { "gavel.dev/cancel": "test" } } },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      const done = await final("stopped");
      expect(done.status?.phase).toBe("Cancelled");
      expect(workloads.stopped).toContain("stopped-i1");
      const events = await eventually(
        async () => {
          const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: "involvedObject.name=stopped" });
          return list.items.some((e) => e.reason === "ExecutionPhase" && e.message?.includes("Cancelled")) ? list.items : undefined;
        },
        10_000,
        "the Cancelled event",
      );
      expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(["ExecutionStarted", "IterationStarted", "ExecutionPhase"]));
      expect(events.find((e) => e.reason === "ExecutionPhase" && e.message?.includes("Cancelled"))?.type).toBe("Warning");
    });
  });

  describe("API requests", () => {
    /** GETs so far of gavel's Executions and Agents (or of the resources named), as the API server counts them (apiserver_request_total). */
    const gets = async (group = GROUP, resources = ["executions", "agents"]): Promise<number> => {
      const r = await cp.kubectl(["get", "--raw", "/metrics"]);
      return parseSamples(r.stdout)
        .filter((s) => s.name === "apiserver_request_total" && s.labels.verb === "GET" && s.labels.group === group)
        .filter((s) => resources.includes(s.labels.resource ?? ""))
        .reduce((n, s) => n + s.value, 0);
    };
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it("Given judged runs, reconciles read Executions and Agents from the caches: few GETs of them while they run, none at rest", async () => {
      judges.set("test/judge-yes", () => VERDICT(1));
      await judgeAgent("yes-judge", "test/judge-yes");
      await agent("cached-worker", {
        runtime: { image: "test/worker" },
        execution: { mode: "one-shot", validation: [{ type: "semantic", judge_agent: "yes-judge", min_score: 1 }] },
      } as Agent["spec"]);
      const names = ["cached-1", "cached-2", "cached-3", "cached-4", "cached-5", "cached-6"];
      const [before, reconciled] = [await gets(), reconciler.stats.reconciles];
      for (const name of names) await execution(name, "cached-worker");
      // Waited for with LISTs, so every GET the API server counts meanwhile is the reconciler's.
      const ended = await eventually(
        async () => {
          const list = (await api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions" })) as {
            items: Execution[];
          };
          const ours = list.items.filter((e) => names.includes(e.metadata.name));
          return ours.length === names.length && ours.every((e) => FINAL.includes(e.status?.phase ?? "")) ? ours : undefined;
        },
        60_000,
        "the runs to end",
      );
      expect(ended.map((e) => e.status?.phase)).toEqual(names.map(() => "Succeeded"));
      const reconciles = reconciler.stats.reconciles - reconciled;
      const read = (await gets()) - before;
      // Reading the API server, each reconcile GETs its Execution, and each run's its Agent and judge Agent:
      // more GETs than reconciles. From the caches, only a read the cache cannot answer yet goes to the server.
      expect(reconciles).toBeGreaterThan(names.length * 4);
      expect(read).toBeLessThan(reconciles / 4);
      // At rest the 200 ms resync reconciles every Execution of the namespace again: from the caches alone.
      await sleep(500);
      const [rest, restReconciled] = [await gets(), reconciler.stats.reconciles];
      await sleep(1000);
      expect(reconciler.stats.reconciles - restReconciled).toBeGreaterThan(names.length);
      expect((await gets()) - rest).toBe(0);
    });

    it("Given a worker that runs, its run's reconciles read no stored result while its pod runs (none can exist yet)", async () => {
      workers.set("running", () => ({ hang: true }));
      await agent("running-worker", { runtime: { image: "test/worker" }, execution: { mode: "one-shot" } } as Agent["spec"]);
      await execution("running", "running-worker");
      await eventually(() => (workloads.names().includes("running-i1") ? true : undefined), 10_000, "the worker to start");
      await sleep(300);
      const [before, reconciled] = [await gets("", ["configmaps"]), reconciler.stats.reconciles];
      await sleep(1000);
      expect(reconciler.stats.reconciles - reconciled).toBeGreaterThan(3);
      expect((await gets("", ["configmaps"])) - before).toBe(0);
      await api.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: "executions",
          name: "running",
          body: { metadata: { annotations: { "gavel.dev/cancel": "done" } } },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      expect((await final("running")).status?.phase).toBe("Cancelled");
    });
  });
});
