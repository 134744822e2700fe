// Judge overhead: from "spawn judge" to a parsed verdict through DockerWorkloads (runToEnd, as
// local mode runs a judge), against
// `docker run --rm` of the same image and command, interleaved in the same run; p50 of 30.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { judgeOutcome } from "../src/engine/gradient.js";
import { DockerWorkloads } from "../src/runtime/docker/docker-workloads.js";
import { runToEnd } from "../src/runtime/run-to-end.js";
import type { BenchResult, BenchSuite } from "./types.js";

const IMAGE = process.env.BASE_IMAGE ?? "gavel/base:bookworm-node20";
const RUNS = Number(process.env.GAVEL_BENCH_RUNS ?? "30");
const VERDICT = { score: 1, confidence: 1, reasoning: "fixed verdict" };
const COMMAND = ["node", "-e", `process.stdout.write(${JSON.stringify(JSON.stringify(VERDICT))} + "\\n")`];

function dockerRun(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("docker", args, { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout }));
  });
}

/** p-th percentile (0..100) of the samples, nearest rank. */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

async function viaWorkloads(workloads: DockerWorkloads, i: number): Promise<number> {
  const t0 = performance.now();
  const spec = { name: `bench-judge-${i}`, image: IMAGE, command: COMMAND, mounts: [], network: "none" as const, timeoutSeconds: 60 };
  const outcome = judgeOutcome(await runToEnd(workloads, spec, { namespace: "bench" }));
  const t1 = performance.now();
  if (!outcome.ok) throw new Error(`workloads run ${i}: no verdict (${outcome.rejection}: ${outcome.detail})`);
  return t1 - t0;
}

async function viaDockerRun(i: number): Promise<number> {
  const t0 = performance.now();
  const r = await dockerRun(["run", "--rm", "--network", "none", IMAGE, ...COMMAND]);
  const outcome = judgeOutcome({ exitCode: r.code, stdout: r.stdout });
  const t1 = performance.now();
  if (!outcome.ok) throw new Error(`docker run ${i}: no verdict (${outcome.rejection}: ${outcome.detail})`);
  return t1 - t0;
}

export const suite: BenchSuite = {
  name: "judge-overhead",
  needs: ["docker"],
  async run(): Promise<BenchResult[]> {
    const workloads = new DockerWorkloads();
    const ours: number[] = [];
    const baseline: number[] = [];
    try {
      // Warm both paths (image layers, the CLI binary) before measuring.
      await viaWorkloads(workloads, -1);
      await viaDockerRun(-1);
      for (let i = 0; i < RUNS; i++) {
        // Alternate which goes first so drift on a shared machine hits both alike.
        if (i % 2 === 0) {
          ours.push(await viaWorkloads(workloads, i));
          baseline.push(await viaDockerRun(i));
        } else {
          baseline.push(await viaDockerRun(i));
          ours.push(await viaWorkloads(workloads, i));
        }
      }
    } finally {
      await workloads.removeAll();
    }
    const p50 = percentile(ours, 50);
    const base50 = percentile(baseline, 50);
    const ratio = p50 / base50;
    return [
      {
        name: "judge overhead p50 (spawn → parsed verdict)",
        baselineName: "docker run --rm, same image",
        baseline: base50,
        value: p50,
        unit: "ms",
        ratio,
        target: "ratio <= 1.3",
        met: ratio <= 1.3,
        notes: `${RUNS} runs each, interleaved; p90 ${percentile(ours, 90).toFixed(0)} ms vs ${percentile(baseline, 90).toFixed(0)} ms; gavel's containers are hardened (read-only rootfs, tmpfs, caps dropped), the baseline is plain`,
      },
    ];
  },
};
