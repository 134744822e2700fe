// The scale harness at 10 Executions (make test's short version of `make bench-scale`,
// docs/scale.md): `gavel controller` as a process on a control plane of its own, pods placed
// by kube-scheduler on kwok's nodes and played by kwok. Every run ends Succeeded through its
// real paths: the worker's log read through the API server from the node's kubelet endpoint
// (kwok's) and kept in the result ConfigMap, the judge's GradientResult (the real rule judge's
// output, framed by the real gavel-launch) parsed from its pod's log.
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { gavelWrites, requestsBetween } from "../../bench/scale-metrics.js";
import { scaleNames, scaleRun, type ScaleRun } from "../harness/scale-run.js";

const N = 10;

describe("scale harness (kwok nodes, the real controller process)", () => {
  it(`runs ${N} Executions, each once, each judged from its pods' logs`, async () => {
    const seen: { parent?: Execution; child?: Execution; result?: k8s.V1ConfigMap } = {};
    const run: ScaleRun = await scaleRun({
      executions: N,
      podRunMs: 500,
      nodes: 2,
      timeoutMs: 90_000,
      async inspect(cp, namespace) {
        const api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
        const core = cp.kc.makeApiClient(k8s.CoreV1Api);
        const { execution } = scaleNames(3);
        const get = async (name: string) =>
          (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", name })) as Execution;
        seen.parent = await get(execution);
        seen.child = await get(`${execution}-i1-v0-scale-judge`);
        seen.result = await core.readNamespacedConfigMap({ namespace, name: `${execution}-i1-result` });
      },
    });
    expect(run.phases).toEqual({ Succeeded: N });
    expect(run.pods).toEqual({ workers: N, judges: N });
    // The worker's stdout and stderr, kept apart as gavel-launch framed them, from the log kwok served.
    expect(seen.result?.data?.stdout).toBe("Summary\n1. Input\n2. Method\n3. Result\n");
    expect(seen.result?.data?.stderr).toContain("iteration 1 started");
    expect(seen.result?.data?.exitCode).toBe("0");
    // The rule judge's verdict, parsed from the judge pod's log, decided the validator.
    expect(seen.child?.status?.verdict?.score).toBe(1);
    expect(seen.parent?.status?.iterations?.[0]?.validators?.[0]?.score).toBe(1);
    expect(run.createToPodSeconds.every((s) => Number.isFinite(s) && s >= 0)).toBe(true);
    expect(run.reconciles).toBeGreaterThan(0);
    expect(run.rss.peak).toBeGreaterThan(0);
    // gavel's writes, from the API server's own counts: at least its pods, judge children and status writes.
    const writes = gavelWrites(requestsBetween(run.apiBefore, run.apiAfter), run.harnessWrites);
    const count = (kind: string) => writes.find((k) => `${k.verb} ${k.resource}` === kind)?.count ?? 0;
    expect(count("POST /pods")).toBe(2 * N);
    expect(count("POST 100monkeys.ai/executions")).toBe(N);
    const statusWrites = writes.filter((k) => k.resource === "100monkeys.ai/executions/status").reduce((a, k) => a + k.count, 0);
    expect(statusWrites).toBeGreaterThanOrEqual(2 * N);
  }, 240_000);
});
