// Engine throughput: simulated iterations per second through the local driver and the
// in-memory workloads (no containers), against an empty loop of the same shape in the same run.
import type { Agent, Execution } from "../src/api/types.js";
import { InMemoryWorkloads, virtualWorkspace } from "../test/harness/in-memory-workloads.js";
import { runToEnd } from "../src/runtime/run-to-end.js";
import { runLocal } from "../src/local/local-run.js";
import { ExecutionTrace } from "../src/telemetry/execution-trace.js";
import type { Tracing } from "../src/telemetry/tracing.js";
import type { BenchResult, BenchSuite } from "./types.js";

const ITERATIONS = 10_000;
/** Each Execution refines this many times: iterations 1..N-1 fail the regex, N passes. */
const PER_EXECUTION = 10;
const TARGET_PER_SECOND = 5_000;

const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "bench-worker" },
  spec: {
    runtime: { image: "bench/worker" },
    execution: {
      mode: "iterative",
      max_iterations: PER_EXECUTION,
      validation: [
        { type: "exit_code" },
        { type: "regex", pattern: "^done$" },
        { type: "semantic", judge_agent: "bench-judge", min_score: 0.5 },
      ],
    },
  },
};
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "bench-judge", labels: { role: "judge" } },
  spec: { runtime: { image: "bench/judge" }, execution: { mode: "one-shot" } },
};
const VERDICT = '{"score": 0.9, "confidence": 0.9, "reasoning": "ok"}';

function execution(i: number): Execution {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: { name: `bench-${i}` },
    spec: { agentRef: { name: "bench-worker" } },
  };
}

/**
 * The measured loop (exported for its test and bench/tracing.ts): Executions of PER_EXECUTION
 * iterations through the engine and driver; with `tracing`, each Execution traced.
 */
export async function engineIterations(total: number, tracing?: Tracing): Promise<number> {
  const workloads = new InMemoryWorkloads((spec) =>
    spec.image === "bench/judge"
      ? { stdout: VERDICT }
      : { stdout: spec.env?.GAVEL_ITERATION === String(PER_EXECUTION) ? "done\n" : "not yet\n" },
  );
  workloads.record = false;
  const judges = new Map([["bench-judge", judge]]);
  let iterations = 0;
  for (let i = 0; iterations < total; i++) {
    const ex = execution(i);
    const trace =
      tracing === undefined
        ? {}
        : {
            trace: new ExecutionTrace(tracing, {
              namespace: "bench",
              name: ex.metadata.name,
              uid: `bench-${i}-${total}`,
              agent: agent.metadata.name,
            }),
          };
    const r = await runLocal({ execution: ex, agent, judges, workloads, workspace: virtualWorkspace, ...trace });
    if (r.execution.status?.phase !== "Succeeded") throw new Error(`bench execution ended ${r.execution.status?.phase ?? "?"}`);
    iterations += r.execution.status.iterations?.length ?? 0;
  }
  return iterations;
}

/**
 * The baseline: the same number of "iterations", each one worker and one judge run to their
 * end (runToEnd) on the same in-memory workloads (one worker, one judge), with no engine decisions, validators or events.
 */
async function emptyIterations(total: number): Promise<number> {
  const workloads = new InMemoryWorkloads((spec) => (spec.image === "bench/judge" ? { stdout: VERDICT } : { stdout: "done\n" }));
  workloads.record = false;
  const place = { namespace: "bench" };
  for (let i = 0; i < total; i++) {
    await runToEnd(workloads, { name: `w${i}`, image: "bench/worker", mounts: [], network: "none", timeoutSeconds: 60 }, place);
    await runToEnd(workloads, { name: `j${i}`, image: "bench/judge", mounts: [], network: "none", timeoutSeconds: 60 }, place);
  }
  return total;
}

async function perSecond(f: (n: number) => Promise<number>, n: number): Promise<number> {
  const start = performance.now();
  const done = await f(n);
  return done / ((performance.now() - start) / 1000);
}

export const suite: BenchSuite = {
  name: "engine",
  needs: [],
  async run(): Promise<BenchResult[]> {
    // Warm up the JIT on both loops before measuring.
    await engineIterations(500);
    await emptyIterations(500);
    const engine = await perSecond(engineIterations, ITERATIONS);
    const baseline = await perSecond(emptyIterations, ITERATIONS);
    return [
      {
        name: "engine: simulated iterations per second (in-memory workloads, 1 core)",
        baselineName: "same workloads, worker + judge runToEnd only",
        baseline,
        value: engine,
        unit: "iterations/s",
        ratio: engine / baseline,
        target: `>= ${TARGET_PER_SECOND} iterations/s`,
        met: engine >= TARGET_PER_SECOND,
        // The baseline shares runToEnd and the double (the floor under every iteration), so a
        // cost added there shows in the absolute figures only; the engine's own time is the rest.
        notes: `${ITERATIONS} iterations in Executions of ${PER_EXECUTION}; each iteration: worker, exit_code, regex, one semantic judge child (verdict parsed), events; engine's own time ${(1e6 / engine - 1e6 / baseline).toFixed(1)} µs per iteration (1/value - 1/baseline)`,
      },
    ];
  },
};
