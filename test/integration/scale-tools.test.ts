// The tool-calling variant of the scale harness at a few Executions (make test's short version
// of `GAVEL_BENCH_SCALE_TOOLS`, docs/scale.md): `gavel controller --nats` on a control plane of
// its own with nats-server -js in operator mode, kwok's pods, and each worker's three calls sent
// by the worker runtime's own code with the credential the controller minted for it. Each call
// is decided once, counted in the JetStream store, and the Executions end Succeeded.
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { gavelWrites, requestsBetween } from "../../bench/scale-metrics.js";
import { scaleNames, scaleRun, type ScaleRun } from "../harness/scale-run.js";
import { TOOL_CALLS } from "../harness/scale-tools.js";

const N = 4;

describe("scale harness, tools variant (kwok nodes, the real controller process, NATS with JetStream)", () => {
  it(`runs ${N} Executions whose workers make ${TOOL_CALLS.length} calls each through the gate, each decided once`, async () => {
    const seen: { parent?: Execution; toolJudge?: Execution; judgeInput?: string } = {};
    const run: ScaleRun = await scaleRun({
      executions: N,
      variant: "tools",
      podRunMs: 300,
      nodes: 2,
      timeoutMs: 90_000,
      async inspect(cp, namespace) {
        const api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
        const core = cp.kc.makeApiClient(k8s.CoreV1Api);
        const { execution, toolJudgePods } = scaleNames(1, "tools");
        const get = async (name: string) =>
          (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", name })) as Execution;
        seen.parent = await get(execution);
        seen.toolJudge = await get(`${execution}-i1-t0-s3-rule-judge`);
        const pod = await core.readNamespacedPod({ namespace, name: toolJudgePods[0] ?? "" });
        seen.judgeInput = pod.spec?.containers[0]?.env?.find((e) => e.name === "GAVEL_INPUT")?.value;
      },
    });
    const tools = run.tools;
    expect(tools?.errors).toEqual([]);
    expect(run.phases).toEqual({ Succeeded: N });
    // One worker pod, one validation judge and one tool-call judge pod per Execution.
    expect(run.pods).toEqual({ workers: N, judges: 2 * N });
    // Every call answered, as expected, and decided exactly once in the store.
    expect(tools?.calls.map((c) => c.error).filter((e) => e !== undefined)).toEqual([]);
    const outcome = (c: NonNullable<typeof tools>["calls"][number]) =>
      c.decision === undefined
        ? "none"
        : c.decision.allowed
          ? c.decision.judges.length > 0
            ? "judged"
            : "allowed"
          : c.decision.blocked_by;
    expect(tools?.calls.map((c) => [c.step, outcome(c)]).sort()).toEqual(
      Array.from({ length: N }, () => TOOL_CALLS.map((c, i) => [i + 1, c.expect]))
        .flat()
        .sort(),
    );
    expect(tools?.decisions.size).toBe(N * TOOL_CALLS.length);
    expect([...(tools?.decisions.values() ?? [])].every((d) => d === 1)).toBe(true);
    expect(tools?.claimsOnly).toEqual([]);
    // The tool judge's verdict came from its pod's log (the real rule judge's output), and the
    // payload it was computed from is the one the gate gave the judge's pod.
    expect(seen.toolJudge?.status?.verdict?.score).toBeGreaterThanOrEqual(0.6);
    expect(JSON.parse(seen.judgeInput ?? "{}")).toMatchObject({ proposed_tool_call: { tool: "fs.write" } });
    expect(seen.parent?.status?.toolCalls).toMatchObject({ proposed: 3, allowed: 2, blocked: 1 });
    // The controller minted each worker's credential into a Secret (gavel's writes, from the API server's counts).
    const writes = gavelWrites(requestsBetween(run.apiBefore, run.apiAfter), run.harnessWrites);
    const count = (kind: string) => writes.find((k) => `${k.verb} ${k.resource}` === kind)?.count ?? 0;
    expect(count("POST /secrets")).toBe(N);
    expect(count("POST /pods")).toBe(3 * N);
    expect(count("PATCH /pods")).toBe(0);
  }, 240_000);
});
