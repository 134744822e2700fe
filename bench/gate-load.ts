// The load side of bench/gate.ts, in a worker thread so that the client's work (encoding,
// validation, timers) does not share an event loop with the gate being measured: a worker
// and the gate are separate processes in production too.
import { parentPort, workerData } from "node:worker_threads";
import { connect } from "@nats-io/transport-node";
import { ToolCallClient } from "../src/transport/tool-call-client.js";
import { benchProposal, openLoop, type LoadResult } from "./load.js";

/** One measurement the bench asks for. */
export interface LoadRequest {
  kind: "echo" | "gate";
  rate: number;
  seconds: number;
  /** Prefix of the toolCallIds ("g..." → real guard, "a..." → approve at once). */
  run: string;
  /** Send this W3C traceparent with every proposal (bench/tracing.ts), as a traced worker does. */
  traceParent?: string;
}

async function serve(): Promise<void> {
  const port = parentPort;
  if (port === null) return;
  const { url } = workerData as { url: string };
  const nc = await connect({ servers: url });
  const client = new ToolCallClient(nc, { attemptTimeoutMs: 5000 });
  const traced = new Map<string, ToolCallClient>();
  const clientOf = (traceParent: string | undefined): ToolCallClient => {
    if (traceParent === undefined) return client;
    let c = traced.get(traceParent);
    if (c === undefined) traced.set(traceParent, (c = new ToolCallClient(nc, { attemptTimeoutMs: 5000, traceParent })));
    return c;
  };
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
            const d = await clientOf(req.traceParent).propose(benchProposal(req.run, i));
            if (!d.allowed) throw new Error(`bench call denied: ${d.reason}`);
          };
    openLoop(req.rate, req.seconds, call).then(
      (r) => port.postMessage(r),
      (err: unknown) => port.postMessage({ latencies: [], lags: [], achieved: 0, error: String(err) } satisfies LoadResult),
    );
  });
  port.postMessage("ready");
}

await serve();
