// The load side of bench/gate.ts, in a worker thread so that the client's work (encoding,
// validation, timers) does not share an event loop with the gate being measured: a worker
// and the gate are separate processes in production too.
import { parentPort, workerData } from "node:worker_threads";
import { connect } from "@nats-io/transport-node";
import type { ToolCallProposal } from "../src/api/protocol.js";
import { ToolCallClient } from "../src/transport/tool-call-client.js";

/** One measurement the bench asks for. */
export interface LoadRequest {
  kind: "echo" | "gate";
  rate: number;
  seconds: number;
  /** Prefix of the toolCallIds ("g..." → real guard, "a..." → approve at once). */
  run: string;
}

/** Latencies (ms, from each call's scheduled time) and the rate actually issued. */
export interface LoadResult {
  latencies: number[];
  achieved: number;
  error?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A bench proposal: a skip_judge read with a few nested arguments. */
export function benchProposal(run: string, i: number): ToolCallProposal {
  return {
    namespace: "bench",
    execution: "gate",
    iteration: 1,
    step: 1,
    toolCallId: `${run}-${i}`,
    tool: "fs.read",
    args: { path: `/workspace/src/module-${i % 50}.ts`, encoding: "utf8", options: { follow: false, limit: 65536 } },
    intent: "read the module to find the bug",
  };
}

/**
 * Issues `call` at `rate` per second for `seconds`, open loop: each call's latency is taken
 * from its scheduled time, so a stall shows up as latency instead of a lower rate.
 */
export async function openLoop(rate: number, seconds: number, call: (i: number) => Promise<unknown>): Promise<LoadResult> {
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  const pending: Promise<void>[] = [];
  const start = performance.now();
  let i = 0;
  while (i < total) {
    const now = performance.now();
    while (i < total && start + (i * 1000) / rate <= now) {
      const scheduled = start + (i * 1000) / rate;
      pending.push(call(i).then(() => void latencies.push(performance.now() - scheduled)));
      i++;
    }
    await sleep(0);
  }
  await Promise.all(pending);
  return { latencies, achieved: total / ((performance.now() - start) / 1000) };
}

async function serve(): Promise<void> {
  const port = parentPort;
  if (port === null) return;
  const { url } = workerData as { url: string };
  const nc = await connect({ servers: url });
  const client = new ToolCallClient(nc, { attemptTimeoutMs: 5000 });
  const sample = JSON.stringify(benchProposal("x", 0));
  port.on("message", (req: LoadRequest | "close") => {
    if (req === "close") {
      void nc.close().then(() => port.close());
      return;
    }
    const call =
      req.kind === "echo"
        ? () => nc.request("bench.echo", sample, { timeout: 5000 })
        : async (i: number) => {
            const d = await client.propose(benchProposal(req.run, i));
            if (!d.allowed) throw new Error(`bench call denied: ${d.reason}`);
          };
    openLoop(req.rate, req.seconds, call).then(
      (r) => port.postMessage(r),
      (err: unknown) => port.postMessage({ latencies: [], achieved: 0, error: String(err) } satisfies LoadResult),
    );
  });
  port.postMessage("ready");
}

await serve();
