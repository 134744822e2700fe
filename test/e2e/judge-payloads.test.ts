// Judge payloads beyond what a pod's env holds, on the single-node cluster: a worker prints
// 4 MiB (the example worker's output_bytes), the controller keeps it in ConfigMap parts, the
// judge child's payload goes into parts `<child>-input-NN` mounted at GAVEL_INPUT_DIR, and the
// judge (the command judge running one allowlisted `node`) checks the output's SHA-256
// against the one computed here. Local mode passes the same payload on stdin
// (test/integration/local-run.test.ts). The judge's pod is kept after its verdict (pod retention).
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { type Cluster } from "../harness/cluster.js";
import { chartRuns } from "../harness/chart-runs.js";
import { commandJudgeYaml, executionYaml, oneShotWorkerYaml, semanticValidation } from "../harness/example-worker.js";
import { type Executions } from "../harness/executions.js";

const OUTPUT_BYTES = 4 * 1024 * 1024;

/** What the example worker prints with output_bytes: filler lines, then its report. */
function workerOutput(bytes: number): string {
  const report = { status: "success", iteration: 1, files: ["sum.js", "sum.test.js"], used_feedback: false };
  return `é→${"x".repeat(58)}\n`.repeat(bytes / 64) + `${JSON.stringify(report)}\n`;
}

// Reads the payload as the judges' reader does (parts in name order, else env), prints the
// output's size and hash and where it came from; exits 0 only when the hash is argv[1].
const CHECK = `const fs=require('fs'),d=process.env.GAVEL_INPUT_DIR;const b=d?Buffer.concat(fs.readdirSync(d).filter(n=>!n.startsWith('.')).sort().map(n=>fs.readFileSync(d+'/'+n))):Buffer.from(process.env.GAVEL_INPUT||'');const o=JSON.parse(b.toString()).output;const h=require('crypto').createHash('sha256').update(o).digest('hex');console.log(Buffer.byteLength(o),h,d?'dir':'env');process.exit(h===process.argv[1]?0:1)`;

/** A command judge checking the payload's output hash, a worker writing `outputBytes` judged by it, and its Execution. */
function yaml(name: string, outputBytes: number, sha256: string): string {
  const judge = commandJudgeYaml(`${name}-judge`, { timeout: "90s", output: true });
  const worker = oneShotWorkerYaml(`${name}-worker`, semanticValidation(`${name}-judge`, `node -e "${CHECK}" ${sha256}`));
  return `${judge}---${worker}---${executionYaml(name, `${name}-worker`, { output_bytes: outputBytes })}`;
}

describe("judge payloads on the cluster", () => {
  let cluster: Cluster;
  let runs: Executions;
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-judge-payloads"));
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  });

  it("a 4 MiB worker output reaches its judge intact through ConfigMap parts (SHA-256 checked inside the judge)", async () => {
    const expected = workerOutput(OUTPUT_BYTES);
    const sha = createHash("sha256").update(expected).digest("hex");
    await runs.apply(yaml("big-payload", OUTPUT_BYTES, sha));
    const ex = await runs.final("big-payload");
    const ref = ex.status?.children?.[0];
    const child = ref === undefined ? undefined : await runs.get(ref.name);
    expect(ex.status?.phase, JSON.stringify(child?.status)).toBe("Succeeded");
    expect(child?.status?.verdict?.score).toBe(1);
    // The payload is not in the child (etcd holds ~1.5 MiB per object) but in its parts.
    expect(child?.spec.input).toBeUndefined();
    const described = JSON.parse(child?.metadata.annotations?.["gavel.dev/input"] ?? "{}") as { parts?: number; bytes?: number };
    expect(described.parts).toBe(5);
    expect(described.bytes).toBeGreaterThan(OUTPUT_BYTES);
    const maps = (await core.listNamespacedConfigMap({ namespace: runs.namespace })).items.map((c) => c.metadata?.name ?? "");
    expect(maps.filter((n) => n.startsWith(`${ref?.name ?? ""}-input-`))).toHaveLength(5);
    // The worker's output is kept whole, in parts of its own.
    expect(maps.filter((n) => n.startsWith("big-payload-i1-result-out-"))).toHaveLength(5);
    // Finished pods are kept for their logs (the chart's podRetentionSeconds, 600 by default).
    const judgePod = (await core.listNamespacedPod({ namespace: runs.namespace })).items.find((p) =>
      p.metadata?.ownerReferences?.some((o) => o.name === ref?.name),
    );
    expect(judgePod?.status?.phase).toBe("Succeeded");
    const log = await core.readNamespacedPodLog({ name: judgePod?.metadata?.name ?? "", namespace: runs.namespace, container: "main" });
    expect(log).toContain('"score":1');
  }, 300_000);
});
