// Judge overhead: from "spawn judge" to a parsed verdict through DockerRuntime, against
// `docker run --rm` of the same image and command, interleaved in the same run; p50 of 30.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { judgeOutcome } from "../src/engine/gradient.js";
import { DockerRuntime } from "../src/runtime/docker/docker-runtime.js";
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

async function viaRuntime(runtime: DockerRuntime, i: number): Promise<number> {
  const t0 = performance.now();
  const handle = await runtime.start({ name: `bench-judge-${i}`, image: IMAGE, command: COMMAND, mounts: [], network: "none", timeoutSeconds: 60 });
  const outcome = judgeOutcome(await handle.wait());
  const t1 = performance.now();
  if (!outcome.ok) throw new Error(`runtime run ${i}: no verdict (${outcome.rejection}: ${outcome.detail})`);
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
    const runtime = new DockerRuntime({ readerImage: IMAGE });
    const ours: number[] = [];
    const baseline: number[] = [];
    try {
      // Warm both paths (image layers, the CLI binary) before measuring.
      await viaRuntime(runtime, -1);
      await viaDockerRun(-1);
      for (let i = 0; i < RUNS; i++) {
        // Alternate which goes first so drift on a shared machine hits both alike.
        if (i % 2 === 0) {
          ours.push(await viaRuntime(runtime, i));
          baseline.push(await viaDockerRun(i));
        } else {
          baseline.push(await viaDockerRun(i));
          ours.push(await viaRuntime(runtime, i));
        }
      }
    } finally {
      await runtime.close();
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
        notes: `${RUNS} runs each, interleaved; p90 ${percentile(ours, 90).toFixed(0)} ms vs ${percentile(baseline, 90).toFixed(0)} ms; runtime containers are hardened (read-only rootfs, tmpfs, caps dropped), the baseline is plain`,
      },
    ];
  },
};
