// The load side of the gate benchmarks (bench/gate.ts in-process, bench/gate-cluster.ts from a
// pod): an open loop paced by a sleeping thread to well under 100 µs, each call's latency taken
// from the moment it was actually sent, and the bench's guard-only proposal.
import { Worker } from "node:worker_threads";
import type { ToolCallProposal } from "../src/api/protocol.js";

/** Latencies (ms, from each call's actual send), how late each send was against its schedule (ms), and the rate issued. */
export interface LoadResult {
  latencies: number[];
  lags: number[];
  achieved: number;
  error?: string;
}

/** p-th percentile (0..100) of the samples, nearest rank. */
export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

const nowNs = (): number => Number(process.hrtime.bigint());

/** A schedule: `total` sends, `intervalNs` apart, the first at `startNs` (process.hrtime.bigint time). */
interface PacerPlan {
  startNs: number;
  intervalNs: number;
  total: number;
}

// The pacer thread: it sleeps in Atomics.wait (a futex with a sub-millisecond timeout, not the
// event loop's 1 ms timers) until 150 µs before each call's scheduled time, spins the rest,
// then tells the load thread to send it. Pacing there, rather than spinning on the load
// thread, leaves that thread free to read replies and most of the CPU to what is measured
// (the spin costs 15 % of a core at 1,000 calls/s). Source text, so that it runs the same
// compiled or under the test runner.
const PACER = `
const { parentPort } = require("node:worker_threads");
const cell = new Int32Array(new SharedArrayBuffer(4));
const now = () => Number(process.hrtime.bigint());
const SPIN_NS = 150e3;
parentPort.once("message", ({ startNs, intervalNs, total }) => {
  for (let i = 0; i < total; i++) {
    const due = startNs + i * intervalNs;
    // Asleep until shortly before, then the last stretch spun (a futex wakes late by tens of µs).
    for (let left = due - now() - SPIN_NS; left > 0; left = due - now() - SPIN_NS) Atomics.wait(cell, 0, 0, left / 1e6);
    while (now() < due);
    parentPort.postMessage(i);
  }
  parentPort.close();
});
parentPort.postMessage("ready");
`;

/**
 * Issues `call` at `rate` per second for `seconds`, open loop: the next call goes out on
 * schedule whether or not earlier ones were answered. A thread of its own (PACER above)
 * sleeps to each scheduled time; the latency runs from the actual send, so neither the
 * pacing's granularity nor a late wake-up of this thread is counted as the callee's time
 * (the lateness is returned apart, in `lags`).
 */
export async function openLoop(rate: number, seconds: number, call: (i: number) => Promise<unknown>): Promise<LoadResult> {
  const total = Math.max(1, Math.round(rate * seconds));
  const intervalNs = 1e9 / rate;
  const pacer = new Worker(PACER, { eval: true });
  try {
    await new Promise<void>((resolve, reject) => {
      pacer.once("message", () => resolve());
      pacer.once("error", reject);
    });
    const latencies: number[] = [];
    const lags: number[] = [];
    const startNs = nowNs() + 2e6;
    let lastSentNs = startNs;
    await new Promise<void>((resolve, reject) => {
      let answered = 0;
      pacer.on("message", (i: number) => {
        const sent = nowNs();
        lastSentNs = sent;
        lags.push((sent - (startNs + i * intervalNs)) / 1e6);
        call(i).then(() => {
          latencies.push((nowNs() - sent) / 1e6);
          if (++answered === total) resolve();
        }, reject);
      });
      pacer.once("error", reject);
      pacer.postMessage({ startNs, intervalNs, total } satisfies PacerPlan);
    });
    return { latencies, lags, achieved: total / ((lastSentNs - startNs + intervalNs) / 1e9) };
  } finally {
    await pacer.terminate();
  }
}

/** A bench proposal: a skip_judge read with a few nested arguments. */
export function benchProposal(
  run: string,
  i: number,
  who: Pick<ToolCallProposal, "namespace" | "execution" | "iteration"> = { namespace: "bench", execution: "gate", iteration: 1 },
): ToolCallProposal {
  return {
    ...who,
    step: 1,
    toolCallId: `${run}-${i}`,
    tool: "fs.read",
    args: { path: `/workspace/src/module-${i % 50}.ts`, encoding: "utf8", options: { follow: false, limit: 65536 } },
    intent: "read the module to find the bug",
  };
}
