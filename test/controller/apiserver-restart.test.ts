// The API server restarted mid-run (issue 24 item 6), on the controller's fast tier: a real
// kube-apiserver + etcd (test/harness/control-plane.ts), workloads run by the in-memory double.
// Runs whose workers end and whose judges are asked for while the API server is away end as
// they would have (their status writes and the informers' watches retried), each worker and
// judge started once.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { CHILD_LABELS } from "../../src/children/workloads.js";
import { ExecutionReconciler, podWorkloadsFor } from "../../src/controller/execution-reconciler.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { eventually } from "../harness/eventually.js";
import { InMemoryWorkloads } from "../harness/in-memory-workloads.js";

const RUNS = ["a", "b", "c"];

describe("the API server restarted while runs are in flight (controller tier)", () => {
  let cp: ControlPlane;
  let ns: string;
  let api: k8s.CustomObjectsApi;
  let workloads: InMemoryWorkloads;
  let reconciler: ExecutionReconciler;
  /** Holds every worker until the test lets them end (while the API server is away). */
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace("apiserver-restart");
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    workloads = new InMemoryWorkloads(async (spec) => {
      if (spec.labels?.[CHILD_LABELS.role] === "judge") return { stdout: '{"score": 1, "confidence": 1, "reasoning": "fine"}\n' };
      await held;
      return { stdout: "done\n" };
    });
    const { informer } = podWorkloadsFor(cp.kc, { namespace: ns });
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
    release();
    await reconciler?.stop();
    await cp?.stop();
  });

  const create = (plural: string, kind: string, name: string, spec: object) =>
    api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name }, spec },
    });
  const get = async (name: string): Promise<Execution> =>
    (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name })) as Execution;

  it("workers that end and judges asked for while the API server restarts: every run Succeeds, each worker and judge started once", async () => {
    await create("agents", "Agent", "restart-judge", { runtime: { image: "test/judge" }, execution: { mode: "one-shot" } });
    await create("agents", "Agent", "restart-worker", {
      runtime: { image: "test/worker" },
      execution: {
        mode: "one-shot",
        validation: [{ type: "exit_code" }, { type: "semantic", judge_agent: "restart-judge", criteria: "done", min_score: 1 }],
      },
    } as Agent["spec"]);
    for (const run of RUNS) await create("executions", "Execution", run, { agentRef: { name: "restart-worker" } });
    await eventually(
      () => Promise.resolve(RUNS.every((r) => workloads.started.some((s) => s.labels?.[CHILD_LABELS.execution] === r)) ? true : undefined),
      30_000,
      "every worker started",
    );

    // The workers end while the API server is away: their results, the judges and the status wait for it.
    const pid = async () => /^API_PID=(\d+)$/m.exec(await readFile(join(cp.dir, "env"), "utf8"))?.[1];
    const before = await pid();
    const t0 = Date.now();
    const restarting = cp.restartApiServer();
    setTimeout(release, 500);
    await restarting;
    console.log(`the API server was restarted in ${(Date.now() - t0) / 1000} s; the workers ended 0.5 s into it`);
    expect(await pid()).not.toBe(before);

    const ended = await eventually(
      async () => {
        const all = await Promise.all(RUNS.map(get));
        return all.every((e) => ["Succeeded", "Failed", "TimedOut", "Cancelled"].includes(e.status?.phase ?? "")) ? all : undefined;
      },
      90_000,
      "every run ended after the API server's restart",
    );
    expect(ended.map((e) => [e.metadata.name, e.status?.phase])).toEqual(RUNS.map((r) => [r, "Succeeded"]));
    const names = workloads.started.map((s) => s.name).sort();
    expect(names).toEqual([...new Set(names)]);
    expect(names.filter((n) => RUNS.some((r) => n === `${r}-i1`))).toHaveLength(RUNS.length);
    // One judge per run, its child Succeeded.
    expect(workloads.started.filter((s) => s.labels?.[CHILD_LABELS.role] === "judge")).toHaveLength(RUNS.length);
  }, 180_000);
});
