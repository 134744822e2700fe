// A finished worker run's result as the controller keeps it: one ConfigMap round trip, an
// output larger than one ConfigMap kept whole in parts, a missing or reordered part an error.
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { ownerMarks } from "../children/workloads.js";
import { PART_BYTES } from "../runtime/kubernetes/configmap-parts.js";
import { resultConfigMaps, workerResultOf } from "./stored-parts.js";

const ex: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "uid-1" },
  spec: { agentRef: { name: "w" }, input: { n: 1 } },
};

describe("stored worker results", () => {
  it("a worker result survives a ConfigMap round trip; an output larger than one ConfigMap is kept whole in parts", () => {
    const w = { iteration: 2, exitCode: 3, stdout: "out", stderr: "err", timedOut: true, cancelled: false };
    const small = resultConfigMaps(ownerMarks(ex), "demo-i2", w);
    expect(small.map((c) => c.metadata?.name)).toEqual(["demo-i2-result"]);
    expect(workerResultOf(small[0]!)).toEqual(w);
    // Why stdout holds stderr too (a pod not run under gavel-launch) is kept with it.
    const merged = { ...w, streamsMerged: "stderr is merged into stdout: ..." };
    expect(workerResultOf(resultConfigMaps(ownerMarks(ex), "demo-i2", merged)[0]!)).toEqual(merged);
    // 3 MiB of multi-byte text: parts cut inside characters join back intact.
    const text = "é→".repeat(600 * 1024);
    const big = resultConfigMaps(ownerMarks(ex), "demo-i2", { ...w, stdout: text });
    expect(big.map((c) => c.metadata?.name)).toEqual([
      "demo-i2-result-out-00",
      "demo-i2-result-out-01",
      "demo-i2-result-out-02",
      "demo-i2-result-out-03",
      "demo-i2-result",
    ]);
    for (const cm of big) {
      expect(cm.immutable).toBe(true);
      expect(cm.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "demo" });
      expect(Buffer.from(cm.binaryData?.part ?? "", "base64").length).toBeLessThanOrEqual(PART_BYTES);
    }
    const result = big.at(-1)!;
    expect(result.data?.stdout).toBeUndefined();
    expect(workerResultOf(result, big.slice(0, -1))).toEqual({ ...w, stdout: text });
    // A part missing or out of order is an error, never a silently short output.
    expect(() => workerResultOf(result, big.slice(0, 2))).toThrow(/expected 4 parts/);
    expect(() => workerResultOf(result, [big[1]!, big[0]!, big[2]!, big[3]!])).toThrow(
      /part 0 of demo-i2-result-out is demo-i2-result-out-01/,
    );
    expect(workerResultOf({ data: { iteration: "x" } })).toBeUndefined();
  });
});
