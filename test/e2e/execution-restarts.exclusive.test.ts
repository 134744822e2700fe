// The chart's controller pod SIGKILLed in the middle of a run (test/harness/gavel-chart.ts
// kill: no SIGTERM, no Lease handed back): the restarted controller adopts the worker pod or
// the judge child it left and finishes the run as if nothing happened. In the exclusive lane
// (vitest.config.ts): the crash would hit any other file's runs too.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { agentYaml, executionYaml, QUICK_WRITER_VALIDATION } from "../harness/example-worker.js";
import { executionsIn, type Executions } from "../harness/executions.js";
import { ChartController } from "../harness/gavel-chart.js";
import { REPO_DIR } from "../harness/paths.js";

describe("Execution reconciler on the single-node cluster, when the controller crashes", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let controller: ChartController;
  let runs: Executions;
  let ns: string;
  const timings: Record<string, number> = {};

  const apply = (yaml: string) => runs.apply(yaml);
  const get = (name: string) => runs.get(name);
  const final = (name: string, timeoutMs?: number) => runs.final(name, timeoutMs);

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    controller = new ChartController(cluster);
    await controller.ready();
    ns = await cluster.createNamespace("e2e-restart");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${await controller.log()}`);
    const r = await cluster.kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")]);
    if (r.code !== 0) throw new Error(`kubectl apply rule-judge: ${r.stderr}`);
    await apply(agentYaml("quick-writer", 3, QUICK_WRITER_VALIDATION));
  }, 300_000);

  afterAll(async () => {
    console.log(`execution restart e2e timings (s): ${JSON.stringify(timings)}`);
    if (cluster !== undefined && ns !== undefined) await cluster.deleteNamespace(ns);
  });

  it("Given the controller is SIGKILLed while the worker runs, the restarted controller adopts the pod and the run ends correctly", async () => {
    const t0 = Date.now();
    await apply(executionYaml("restart", "quick-writer", { correct_first_time: true, sleep_seconds: 6 }));
    // When the worker pod runs, the controller dies without warning
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: "gavel-restart-i1-ex", namespace: ns }).catch(() => undefined);
        return pod?.status?.phase === "Running" ? true : undefined;
      },
      120_000,
      "the worker pod to run",
    );
    await controller.kill();
    const ex = await final("restart");
    timings.restart = (Date.now() - t0) / 1000;

    // Then the new controller collected the same pod: one worker run, judged, Succeeded
    expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
    expect(ex.status?.iteration).toBe(1);
    const runsLog = (await readFile(join(await runs.workspace("restart"), "runs.log"), "utf8")).trim().split("\n");
    expect(runsLog).toHaveLength(1);
    expect((await get("restart-i1-v1-rule-judge"))?.status?.verdict?.score).toBe(1);
  });

  it("Given the controller is SIGKILLed as soon as the judge child exists, the restarted one finishes the run with that one child", async () => {
    const t0 = Date.now();
    await apply(executionYaml("rejudge", "quick-writer", { correct_first_time: true }));
    // When the child Execution appears, the controller dies (the child's pod may or may not exist yet)
    await eventually(
      async () => ((await get("rejudge-i1-v1-rule-judge")) !== undefined ? true : undefined),
      120_000,
      "the judge child to exist",
    );
    await controller.kill();
    const ex = await final("rejudge");
    timings.restartDuringJudge = (Date.now() - t0) / 1000;

    expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
    expect(ex.status?.children?.map((c) => [c.name, c.phase])).toEqual([["rejudge-i1-v1-rule-judge", "Succeeded"]]);
    expect((await get("rejudge-i1-v1-rule-judge"))?.status?.verdict?.score).toBe(1);
    expect((await readFile(join(await runs.workspace("rejudge"), "runs.log"), "utf8")).trim().split("\n")).toHaveLength(1);
    await runs.podsEnded("rejudge");
  });
});
