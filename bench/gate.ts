// Gate round trip: a guard-only tool call (the real guard, skip_judge tool) proposed by the
// worker's client (on a load thread) through the tool-call service, against a bare NATS
// request/reply echo of the same bytes on the same server, interleaved in the same run.
import { Worker } from "node:worker_threads";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallProposal } from "../src/api/protocol.js";
import { agentScope } from "../src/gate/guard/context.js";
import { runGuard } from "../src/gate/guard/guard.js";
import { compilePolicy } from "../src/gate/guard/policy.js";
// The chart's nats-server version (test/harness/build-nats.sh) when built, as on the cluster; else Debian's.
import { startNats } from "../test/harness/nats.js";
import { ToolCallService } from "../src/gate/tool-call.js";
import type { LoadRequest } from "./gate-load.js";
import { benchProposal as proposal, percentile, type LoadResult } from "./load.js";
import type { BenchResult, BenchSuite } from "./types.js";

const RATE = 1000;
const P99_LIMIT_MS = 5;
const SECONDS = Number(process.env.GAVEL_BENCH_GATE_SECONDS ?? "1");
const ROUNDS = Number(process.env.GAVEL_BENCH_GATE_ROUNDS ?? "4");

/** Runs measurements on the load thread (bench/gate-load.ts), one at a time. */
export class LoadThread {
  private constructor(private readonly worker: Worker) {}

  static async start(url: string): Promise<LoadThread> {
    const worker = new Worker(new URL("./gate-load.js", import.meta.url), { workerData: { url } });
    await new Promise<void>((resolve, reject) => {
      worker.once("message", () => resolve());
      worker.once("error", reject);
    });
    return new LoadThread(worker);
  }

  run(req: LoadRequest): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      this.worker.once("message", (r: LoadResult) => (r.error !== undefined ? reject(new Error(r.error)) : resolve(r)));
      this.worker.postMessage(req);
    });
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.worker.once("exit", r));
    this.worker.postMessage("close");
    await exited;
  }
}

// The guard-only decide: the real guard over a skip_judge tool (fs.read) with the default policy.
function guardDecide(): (p: ToolCallProposal) => Promise<ToolCallDecision> {
  const ctx = { policy: compilePolicy([]), scope: agentScope({ spec: { tools: ["fs.read", "fs.list"] } }), history: [] };
  return (p) => {
    const t = performance.now();
    const guard = runGuard({ tool: p.tool, args: p.args, step: p.step }, ctx);
    const decision: ToolCallDecision = {
      toolCallId: p.toolCallId,
      allowed: guard.approved,
      blocked_by: guard.approved ? "none" : "guard",
      reason: guard.approved ? "guard approved; judges skipped (skip_judge)" : (guard.reason ?? "denied"),
      guard,
      skippedJudges: true,
      judges: [],
      latencyMs: performance.now() - t,
    };
    return Promise.resolve(decision);
  };
}

function approve(p: ToolCallProposal): Promise<ToolCallDecision> {
  return Promise.resolve({
    toolCallId: p.toolCallId,
    allowed: true,
    blocked_by: "none",
    reason: "approved",
    guard: { approved: true },
    skippedJudges: true,
    judges: [],
    latencyMs: 0,
  });
}

// The guard's own cost per call, over the bench's arguments, for the notes.
function timeGuard(): { p50: number } {
  const decide = guardDecide();
  const samples: number[] = [];
  for (let i = 0; i < 500; i++) {
    const t = performance.now();
    void decide(proposal("t", i));
    samples.push(performance.now() - t);
  }
  return { p50: percentile(samples, 50) };
}

type Kind = "echo" | "guard" | "bare";
/** One measurement of `kind` at `rate` calls/s for `seconds`. */
type Measure = (kind: Kind, rate: number, seconds: number) => Promise<LoadResult>;

/** Latencies of the interleaved rounds at RATE (after a warm-up), and how late the load thread sent. */
async function rounds(measure: Measure): Promise<{ gate: number[]; bare: number[]; echo: number[]; lags: number[] }> {
  for (const kind of ["guard", "bare", "echo"] as const) await measure(kind, RATE, 1);
  const out = { gate: [] as number[], bare: [] as number[], echo: [] as number[], lags: [] as number[] };
  const take = (into: number[], r: LoadResult): void => {
    into.push(...r.latencies);
    out.lags.push(...r.lags);
  };
  for (let r = 0; r < ROUNDS; r++) {
    take(out.echo, await measure("echo", RATE, SECONDS));
    take(out.gate, await measure("guard", RATE, SECONDS));
    take(out.bare, await measure("bare", RATE, SECONDS));
  }
  return out;
}

/** The highest rate `kind` sustains with p99 under the limit (doubling from 500, then one step between). */
async function maxRate(measure: Measure, kind: Kind): Promise<number> {
  let best = 0;
  for (let rate = 500; rate <= 64_000; rate *= 2) {
    const { latencies, achieved } = await measure(kind, rate, SECONDS);
    if (percentile(latencies, 99) >= P99_LIMIT_MS || achieved < rate * 0.95) {
      const mid = (best + rate) / 2;
      if (best > 0) {
        const m = await measure(kind, mid, SECONDS);
        if (percentile(m.latencies, 99) < P99_LIMIT_MS && m.achieved >= mid * 0.95) best = mid;
      }
      break;
    }
    best = rate;
  }
  return best;
}

/** What the gate suite measured, as its rows. */
interface GateFigures {
  gate: number[];
  bare: number[];
  echo: number[];
  lags: number[];
  decides: number;
  guardP50: number;
  gateMax: number;
  bareMax: number;
  echoMax: number;
}

/** The suite's rows: round trip p50/p99 against the echo, and the highest rates. */
function gateRows(f: GateFigures): BenchResult[] {
  const { gate, echo } = f;
  const us = (ms: number): string => (ms * 1000).toFixed(0);
  const added = (p: number): string => us(percentile(gate, p) - percentile(echo, p));
  const n = `${gate.length} calls each, ${ROUNDS} interleaved rounds of ${SECONDS} s, open loop paced by a sleeping thread (sends late by p50 ${us(percentile(f.lags, 50))} µs, p99 ${us(percentile(f.lags, 99))} µs), latency from the actual send; the gate (real guard) added p50 ${added(50)} µs, p99 ${added(99)} µs to the echo; ${f.decides} decides for ${f.decides} distinct calls; decisions stored in JetStream; the guard alone took p50 ${f.guardP50.toFixed(3)} ms per call in this run`;
  const row = (name: string, samples: number[], p: number, target: number): BenchResult => {
    const value = percentile(samples, p);
    const baseline = percentile(echo, p);
    return {
      name,
      baselineName: "bare NATS request/reply echo",
      baseline,
      value,
      unit: "ms",
      ratio: value / baseline,
      target: `ratio <= ${target}`,
      met: value / baseline <= target,
      notes: n,
    };
  };
  const rateRow = (name: string, value: number, notes?: string): BenchResult => ({
    name,
    baselineName: "echo max rate, p99 < 5 ms",
    baseline: f.echoMax,
    value,
    unit: "calls/s",
    ratio: f.echoMax > 0 ? value / f.echoMax : 0,
    target: "report (>= 1,000)",
    met: value >= 1000,
    ...(notes !== undefined ? { notes } : {}),
  });
  return [
    row("gate round trip p50 (real guard, skip_judge, 1,000 calls/s)", gate, 50, 1.5),
    row("gate round trip p99 (real guard, skip_judge, 1,000 calls/s)", gate, 99, 2),
    row("gate round trip p50 (decide approves at once, 1,000 calls/s)", f.bare, 50, 1.5),
    row("gate round trip p99 (decide approves at once, 1,000 calls/s)", f.bare, 99, 2),
    rateRow(
      "gate max rate with p99 < 5 ms (real guard)",
      f.gateMax,
      `rates tried doubling from 500 for ${SECONDS} s each, one step back between the last pass and the first failure`,
    ),
    rateRow("gate max rate with p99 < 5 ms (decide approves at once)", f.bareMax),
  ];
}

/** Measures the gate against the echo; exported for a quick run with fewer rounds. */
export async function runGateBench(): Promise<BenchResult[]> {
  const server = await startNats();
  const conns: NatsConnection[] = [];
  let load: LoadThread | undefined;
  try {
    const gateNc = await connect({ servers: server.url });
    const echoNc = await connect({ servers: server.url });
    conns.push(gateNc, echoNc);
    // Calls whose id starts with "g" go through the real guard; the others are approved at
    // once, which isolates the cost of the transport, codec, cache and decision store.
    const guard = guardDecide();
    // GAVEL_BENCH_GATE_CALL_LOG=0: without recording each call in GAVEL_CALLS (ADR 0076), which the controller does by default.
    const callLog = process.env.GAVEL_BENCH_GATE_CALL_LOG === "0" ? {} : { callLog: {} };
    const service = await ToolCallService.start(gateNc, {
      decide: (p) => (p.toolCallId.startsWith("g") ? guard(p) : approve(p)),
      ...callLog,
    });
    // The baseline answers on this thread too, like the gate.
    echoNc.subscribe("bench.echo", { callback: (err, m) => void (err === null && m.respond(m.data)) });
    await echoNc.flush();
    load = await LoadThread.start(server.url);
    const lt = load;
    let runId = 0;
    const measure: Measure = (kind, rate, seconds) =>
      lt.run({ kind: kind === "echo" ? "echo" : "gate", rate, seconds, run: `${kind === "guard" ? "g" : "a"}${runId++}` });
    // Warm-up (the guard's JIT first, in-process), then interleaved rounds at the target rate.
    for (let i = 0; i < 5000; i++) void guard(proposal("warm", i));
    const latencies = await rounds(measure);
    const decides = service.stats.decides;
    const guardP50 = timeGuard().p50;
    const gateMax = await maxRate(measure, "guard");
    const bareMax = await maxRate(measure, "bare");
    const echoMax = await maxRate(measure, "echo");
    await service.stop();
    return gateRows({ ...latencies, decides, guardP50, gateMax, bareMax, echoMax });
  } finally {
    await load?.stop();
    for (const c of conns) await c.close().catch(() => undefined);
    await server.stop();
  }
}

export const suite: BenchSuite = { name: "gate", needs: ["nats"], run: runGateBench };
