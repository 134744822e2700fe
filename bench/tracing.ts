// Tracing overhead on the gate round trip: the same guard-only tool call (real guard, real gate,
// skip_judge tool) through the tool-call service with tracing off, and with tracing on (the
// worker's traceparent in the header, an execute_tool span per call exported over OTLP to a real
// Jaeger), interleaved in the same run at 1,000 calls/s.
import { readFile } from "node:fs/promises";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createGate } from "../src/gate/gate.js";
import { compilePolicy } from "../src/gate/guard/policy.js";
import { formatTraceparent } from "../src/telemetry/trace-context.js";
import { tracingFromEnv, type Tracing } from "../src/telemetry/tracing.js";
// The chart's nats-server version (test/harness/build-nats.sh) when built, as on the cluster; else Debian's.
import { startNats } from "../test/harness/nats.js";
import { ToolCallService } from "../src/gate/tool-call.js";
import { startJaeger, type Jaeger } from "../test/harness/jaeger.js";
import { engineIterations } from "./engine.js";
import { LoadThread } from "./gate.js";
import { tracingRows } from "./tracing-rows.js";
import type { BenchResult, BenchSuite } from "./types.js";

const RATE = 1000;
const SECONDS = Number(process.env.GAVEL_BENCH_GATE_SECONDS ?? "1");
// 12 rounds: a round's ratio swings by +-0.1 on this 2-core machine, more than the effect (docs/benchmarks.md).
const ROUNDS = Number(process.env.GAVEL_BENCH_GATE_ROUNDS ?? "12");
const LOOP_ITERATIONS = 2000;
/** USER_HZ: the unit of /proc/PID/stat's CPU times on Linux. */
const CLOCK_TICKS_PER_S = 100;

/** A process's CPU time (user + system) in microseconds, from /proc; 0 when it cannot be read. */
async function processCpuMicros(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  const stat = await readFile(`/proc/${String(pid)}/stat`, "utf8").catch(() => "");
  // Fields after the ")" that ends the command name: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S) * 1e6 || 0;
}

/**
 * The outer loop (engine + local driver, in-memory workloads): iterations per second with every
 * Execution traced (a span per iteration, validator and judge, exported) and untraced, interleaved.
 */
async function loopRates(tracing: Tracing): Promise<{ loopOff: number[]; loopOn: number[] }> {
  await engineIterations(500, tracing);
  await engineIterations(500);
  const loopOff: number[] = [];
  const loopOn: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const [into, t] of [
      [loopOff, undefined],
      [loopOn, tracing],
    ] as const) {
      // The traced round's spans are exported before the untraced round starts, not during it.
      await tracing.flush();
      const t0 = performance.now();
      const n = await engineIterations(LOOP_ITERATIONS, t);
      into.push(n / ((performance.now() - t0) / 1000));
    }
  }
  return { loopOff, loopOn };
}

/** Measures the gate with tracing on against the same gate with it off. */
export async function runTracingBench(): Promise<BenchResult[]> {
  const jaeger: Jaeger = await startJaeger();
  const server = await startNats();
  const conns: NatsConnection[] = [];
  let load: LoadThread | undefined;
  try {
    // This process is the composition root: the SDK reads its settings from process.env.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = jaeger.otlpEndpoint;
    process.env.OTEL_SERVICE_NAME = "gavel-bench";
    const tracing = await tracingFromEnv(process.env, { name: "gavel-bench" });
    if (tracing === undefined) throw new Error("tracing did not start");
    const policy = compilePolicy([]);
    const options = {
      policyStore: { get: () => policy },
      agent: { spec: { tools: ["fs.read", "fs.list"] } },
      judgeRunner: () => Promise.reject(new Error("no judge in this bench")),
    };
    const off = createGate(options);
    const on = createGate({ ...options, tracing });
    const gateNc = await connect({ servers: server.url });
    conns.push(gateNc);
    // Calls whose id starts with "t" are decided by the traced gate.
    const service = await ToolCallService.start(gateNc, { decide: (p, ctx) => (p.toolCallId.startsWith("t") ? on : off).decide(p, ctx) });
    load = await LoadThread.start(server.url);
    const lt = load;
    const traceParent = formatTraceparent({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true });
    let runId = 0;
    // This process's CPU in each kind of round: the gate, and the load thread's client (the same
    // in both but for the traceparent header). A traced round's spans that are still buffered
    // are exported by the flush before the next untraced round, counted with the traced rounds.
    // Jaeger's CPU likewise (it ingests on the same two cores).
    const cpu = { on: 0, off: 0, jaegerOn: 0, jaegerOff: 0 };
    const measure = async (traced: boolean) => {
      const before = process.cpuUsage();
      const jaegerBefore = await processCpuMicros(jaeger.pid);
      const { latencies } = await lt.run({
        kind: "gate",
        rate: RATE,
        seconds: SECONDS,
        run: `${traced ? "t" : "o"}${runId++}`,
        ...(traced ? { traceParent } : {}),
      });
      if (traced) await tracing.flush();
      const used = process.cpuUsage(before);
      cpu[traced ? "on" : "off"] += used.user + used.system;
      cpu[traced ? "jaegerOn" : "jaegerOff"] += (await processCpuMicros(jaeger.pid)) - jaegerBefore;
      return latencies;
    };
    for (const traced of [true, false]) await measure(traced);
    Object.assign(cpu, { on: 0, off: 0, jaegerOn: 0, jaegerOff: 0 });
    const offSamples: number[] = [];
    const onSamples: number[] = [];
    // A second untraced series in the same rounds, for this machine's noise floor: how far two
    // series of the same untraced gate differ (an A/A comparison), beside the traced one.
    const againSamples: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      offSamples.push(...(await measure(false)));
      onSamples.push(...(await measure(true)));
      againSamples.push(...(await lt.run({ kind: "gate", rate: RATE, seconds: SECONDS, run: `o${runId++}` })).latencies);
    }
    await service.stop();

    const { loopOff, loopOn } = await loopRates(tracing);
    await tracing.flush();
    const exported = (await jaeger.trace("4bf92f3577b34da6a3ce929d0e0e4736", 1)).spans.length;
    await tracing.shutdown();
    return tracingRows({
      rate: RATE,
      seconds: SECONDS,
      rounds: ROUNDS,
      loopIterations: LOOP_ITERATIONS,
      on: onSamples,
      off: offSamples,
      again: againSamples,
      cpu,
      exported,
      loopOff,
      loopOn,
    });
  } finally {
    await load?.stop();
    for (const c of conns) await c.close().catch(() => undefined);
    await server.stop();
    await jaeger.stop();
  }
}

export const suite: BenchSuite = { name: "tracing", needs: ["nats"], run: runTracingBench };
