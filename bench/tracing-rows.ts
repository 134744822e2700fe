// The tracing bench's rows (bench/tracing.ts): the traced gate round trip against the untraced
// one at p50 and p99, the noise floor of two untraced series, and the outer loop traced and not.
import { percentile } from "./load.js";
import type { BenchResult } from "./types.js";

/** What the tracing bench measured. */
export interface TracingSamples {
  rate: number;
  seconds: number;
  rounds: number;
  loopIterations: number;
  /** Round-trip latencies (ms): traced, untraced, and a second untraced series in the same rounds. */
  on: number[];
  off: number[];
  again: number[];
  /** CPU (µs) of this process and of Jaeger over the traced and the untraced rounds. */
  cpu: { on: number; off: number; jaegerOn: number; jaegerOff: number };
  /** Spans of the bench's trace found in Jaeger at the end. */
  exported: number;
  /** Outer-loop iterations per second per round, untraced and traced. */
  loopOff: number[];
  loopOn: number[];
}

/** Two series of the same untraced gate, same rounds (an A/A comparison): this machine's noise floor for the traced rows. */
function noiseFloor(again: number[], off: number[], p: number, rounds: number): BenchResult {
  const value = percentile(again, p);
  const baseline = percentile(off, p);
  return {
    name: `gate round trip p${p}, tracing off against tracing off (noise floor, 1,000 calls/s)`,
    baselineName: "the same gate, tracing off, the other series",
    baseline,
    value,
    unit: "ms",
    ratio: value / baseline,
    target: "reported",
    met: true,
    notes: `an A/A comparison: a third series of the untraced gate in the same ${rounds} rounds (${again.length} calls); a traced ratio within this one's distance from 1 cannot be told from noise on this machine`,
  };
}

/** The bench's rows from what it measured. */
export function tracingRows(m: TracingSamples): BenchResult[] {
  const { on: onSamples, off: offSamples, cpu, exported, loopOff, loopOn } = m;
  const us = (ms: number): string => (ms * 1000).toFixed(0);
  const notes = `${onSamples.length} calls each, ${m.rounds} interleaved rounds of ${m.seconds} s at ${m.rate} calls/s; traced calls carry a traceparent header and each makes an execute_tool span exported over OTLP/HTTP (batched) to Jaeger all-in-one on loopback (${exported} spans of the bench's trace there at the end); added p50 ${us(percentile(onSamples, 50) - percentile(offSamples, 50))} µs, p99 ${us(percentile(onSamples, 99) - percentile(offSamples, 99))} µs; this process's CPU per call (gate + load thread) ${(cpu.on / onSamples.length).toFixed(0)} µs traced, ${(cpu.off / offSamples.length).toFixed(0)} µs untraced; Jaeger's ${(cpu.jaegerOn / onSamples.length).toFixed(0)} and ${(cpu.jaegerOff / offSamples.length).toFixed(0)} µs`;
  const row = (p: number): BenchResult => {
    const value = percentile(onSamples, p);
    const baseline = percentile(offSamples, p);
    // Issue 12's target: traced >= 0.9x the untraced speed, i.e. at most 1/0.9 the latency.
    return {
      name: `gate round trip p${p}, tracing on (1,000 calls/s)`,
      baselineName: "the same gate, tracing off",
      baseline,
      value,
      unit: "ms",
      ratio: value / baseline,
      target: "ratio <= 1.11 (>= 0.9x speed)",
      met: value / baseline <= 1 / 0.9,
      notes,
    };
  };
  const median = (xs: number[]): number => percentile(xs, 50);
  const perIteration = (rate: number): number => 1e6 / rate;
  return [
    row(50),
    row(99),
    noiseFloor(m.again, offSamples, 50, m.rounds),
    noiseFloor(m.again, offSamples, 99, m.rounds),
    {
      name: "outer loop with tracing on (engine + local driver, in-memory workloads)",
      baselineName: "the same loop, tracing off",
      baseline: median(loopOff),
      value: median(loopOn),
      unit: "iterations/s",
      ratio: median(loopOn) / median(loopOff),
      target: "ratio >= 0.9",
      met: median(loopOn) / median(loopOff) >= 0.9,
      notes: `${m.rounds} interleaved rounds of ${m.loopIterations} iterations (Executions of 10, 3 validators, a judge each); each traced iteration makes an iteration, 3 validator and a judge span with 4 evaluation events; added ${(perIteration(median(loopOn)) - perIteration(median(loopOff))).toFixed(0)} µs per iteration`,
    },
  ];
}
