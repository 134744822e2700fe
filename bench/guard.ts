// Guard alone: p50/p99 per call for a call with 10 nested string arguments under 10, 100 and
// 1,000 adaptive rules, against JSON.stringify of the same arguments measured in the same run;
// the notes say how many calls a garbage collection ran in and how much a call allocates.
import { existsSync, readFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { JsonObject } from "../src/api/types.js";
import type { GuardPolicySpec } from "../src/api/types.js";
import { agentScope } from "../src/gate/guard/context.js";
import { runGuard } from "../src/gate/guard/guard.js";
import { compilePolicy } from "../src/gate/guard/policy.js";
import type { BenchResult, BenchSuite } from "./types.js";

/** A tool call with 10 string values nested up to four levels deep (none matches a rule). */
export const BENCH_ARGS: JsonObject = {
  path: "/workspace/project/src/parser/tokenizer.ts",
  command: "npm test -- --run src/parser",
  options: {
    include: ["src/**/*.ts", "test/**/*.ts"],
    exclude: { dirs: ["node_modules", "dist/cache"], note: "generated files are skipped" },
    depth: 3,
  },
  env: { NODE_ENV: "test", REPORTER: "dot" },
  intent: "refactor the tokenizer and run its tests",
};

/** n adaptive rules in the shapes operators write: words, paths, case-insensitive names. */
export function benchRules(n: number): NonNullable<GuardPolicySpec["adaptive_rules"]> {
  return Array.from({ length: n }, (_, i) => {
    const shapes = [
      String.raw`\bforbidden_cmd_${i}\s+--[a-z]+`,
      String.raw`^/mnt/volume-${i}(/|$)`,
      String.raw`(?i)internal-host-${i}\.corp\.example`,
      String.raw`token_[0-9a-f]{8}_${i}`,
    ];
    return {
      name: `rule_${i}`,
      match_field: "args" as const,
      pattern: shapes[i % shapes.length] as string,
      action: i % 10 === 0 ? ("flag" as const) : ("deny" as const),
      reason: "bench",
    };
  });
}

/** Per-call samples of fn and of its baseline, interleaved, with the time each fn call started. */
export interface Samples {
  /** fn's latency per call, µs. */
  value: Float64Array;
  baseline: Float64Array;
  /** performance.now() at the start of each fn call, ms. */
  start: Float64Array;
  batch: number;
}

/**
 * Per-call latencies in microseconds of fn and of baseline, interleaved call by call so both
 * see the same machine, after a warm-up. Nothing runs between calls but the clock reads (no
 * forced collection, no heap reads: both were tried and raised the p99 they meant to explain).
 */
export function sampleInterleaved(
  fn: () => unknown,
  baseline: () => unknown,
  calls: number,
  warmup = Math.min(5000, calls),
  batch = Math.min(1000, calls),
): Samples {
  for (let i = 0; i < warmup; i++) {
    fn();
    baseline();
  }
  const value = new Float64Array(calls);
  const base = new Float64Array(calls);
  const start = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    let t = performance.now();
    start[i] = t;
    fn();
    value[i] = (performance.now() - t) * 1000;
    t = performance.now();
    baseline();
    base[i] = (performance.now() - t) * 1000;
  }
  return { value, baseline: base, start, batch };
}

/** A garbage collection as a PerformanceObserver reported it, ms on the performance.now() clock. */
export interface GcWindow {
  start: number;
  end: number;
}

/** What disturbed a sample: calls a collection overlapped, and the p99 over each batch. */
export interface Disturbance {
  /** fn calls that a reported collection overlapped (undefined: collections not observed). */
  gcHit?: number;
  /** p99 of fn over the calls no collection overlapped. */
  p99NoGc?: number;
  /** Median over batches of each batch's p99: robust to one batch disturbed by another process. */
  batchP99Median: number;
  batches: number;
}

/** Attributes collections to the calls they overlapped and takes the p99 of each batch. */
export function disturbance(s: Samples, gcs?: readonly GcWindow[]): Disturbance {
  const p99s: number[] = [];
  for (let i = 0; i < s.value.length; i += s.batch) p99s.push(quantiles(s.value.slice(i, i + s.batch)).p99);
  p99s.sort((x, y) => x - y);
  const out: Disturbance = { batchP99Median: p99s[Math.floor(p99s.length / 2)] ?? 0, batches: p99s.length };
  if (gcs === undefined) return out;
  const clean: number[] = [];
  let hit = 0;
  for (let i = 0; i < s.value.length; i++) {
    const from = s.start[i] as number;
    const to = from + (s.value[i] as number) / 1000;
    if (gcs.some((g) => g.start < to && g.end > from)) hit++;
    else clean.push(s.value[i] as number);
  }
  return { ...out, gcHit: hit, p99NoGc: quantiles(Float64Array.from(clean)).p99 };
}

/**
 * Bytes allocated per call of fn: heap growth over a run too short to trigger a collection,
 * after a full one (the least of seven runs). Needs gc(), which is exposed at run time if node was not started with
 * --expose-gc; undefined if that fails.
 */
export function bytesPerCall(fn: () => unknown, calls = 200): number | undefined {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      gc = runInNewContext("gc") as () => void;
    } catch {
      return undefined;
    }
  }
  // The least growth of several runs: anything else the heap gains meanwhile (code, feedback)
  // only adds, so the minimum is the closest to the calls' own garbage.
  let least: number | undefined;
  for (let attempt = 0; attempt < 7; attempt++) {
    gc();
    const before = getHeapStatistics().used_heap_size;
    for (let i = 0; i < calls; i++) fn();
    const grown = getHeapStatistics().used_heap_size - before;
    if (grown >= 0) least = Math.min(least ?? Infinity, grown / calls);
  }
  return least;
}

/** p50 and p99 of a sample. */
export interface Quantiles {
  p50: number;
  p99: number;
}

function quantiles(t: Float64Array): Quantiles {
  const sorted = Float64Array.from(t).sort();
  return { p50: sorted[Math.floor(sorted.length * 0.5)] ?? 0, p99: sorted[Math.floor(sorted.length * 0.99)] ?? 0 };
}

/** One configuration's samples and allocation. */
interface Run {
  rules: number;
  samples: Samples;
  bytes: number | undefined;
}

/** Samples the guard under 10, 100 and 1,000 rules; `calls` per configuration. */
function sampleGuard(calls: number): Run[] {
  const scope = agentScope({ spec: { tools: ["cmd.run"] } });
  const runs: Run[] = [];
  for (const n of [10, 100, 1000]) {
    const policy = compilePolicy([{ name: "bench", spec: { adaptive_rules: benchRules(n) } }]);
    const ctx = { policy, scope, history: [] };
    const call = (): unknown => runGuard({ tool: "cmd.run", args: BENCH_ARGS, step: 1 }, ctx);
    const check = runGuard({ tool: "cmd.run", args: BENCH_ARGS, step: 1 }, ctx);
    if (!check.approved) throw new Error(`bench call was denied: ${check.reason ?? ""}`);
    runs.push({ rules: n, samples: sampleInterleaved(call, () => JSON.stringify(BENCH_ARGS), calls), bytes: undefined });
  }
  // Allocation is measured after all timing: its forced collections stay out of the samples.
  for (const r of runs) {
    const policy = compilePolicy([{ name: "bench", spec: { adaptive_rules: benchRules(r.rules) } }]);
    const ctx = { policy, scope, history: [] };
    r.bytes = bytesPerCall(() => runGuard({ tool: "cmd.run", args: BENCH_ARGS, step: 1 }, ctx));
  }
  return runs;
}

function toResults(runs: Run[], gcs?: readonly GcWindow[]): BenchResult[] {
  const results: BenchResult[] = [];
  for (const { rules: n, samples, bytes } of runs) {
    const value = quantiles(samples.value);
    const baseline = quantiles(samples.baseline);
    const d = disturbance(samples, gcs);
    const notes =
      `${samples.value.length} calls after a warm-up; ` +
      (d.gcHit === undefined ? "" : `${d.gcHit} overlapped a garbage collection (p99 without them ${(d.p99NoGc ?? 0).toFixed(1)} µs); `) +
      `median of the p99s of ${d.batches} batches ${d.batchP99Median.toFixed(1)} µs` +
      (bytes === undefined ? "" : `; ~${Math.round(bytes)} bytes allocated per call`);
    for (const q of ["p50", "p99"] as const) {
      const target = n === 100 && q === "p99";
      results.push({
        name: `guard ${q}, 10 nested args, ${n} rules`,
        baselineName: `JSON.stringify(args) ${q}`,
        baseline: baseline[q],
        value: value[q],
        unit: "µs",
        ratio: value[q] / baseline[q],
        target: target ? "p99 < 50 µs" : "reported",
        met: target ? value[q] < 50 : true,
        notes,
      });
    }
  }
  return results;
}

/** Runs the guard bench; `calls` per configuration (collections are not attributed: see guardBenchObserved). */
export function guardBench(calls = 20_000): BenchResult[] {
  return toResults(sampleGuard(calls));
}

/** The guard bench with each garbage collection (PerformanceObserver "gc" entries) attributed to the calls it overlapped. */
export async function guardBenchObserved(calls = 20_000): Promise<BenchResult[]> {
  const gcs: GcWindow[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  observer.observe({ entryTypes: ["gc"] });
  try {
    const runs = sampleGuard(calls);
    // Entries are delivered asynchronously: let the observer's callback run.
    await new Promise((resolve) => setTimeout(resolve, 50));
    return toResults(runs, gcs);
  } finally {
    observer.disconnect();
  }
}

/** The threat corpus's commands (test/fixtures/threats/corpus.json), found from this module up; undefined where it is not shipped. */
export function corpusCommands(): string[] | undefined {
  for (let dir = new URL(".", import.meta.url); dir.pathname !== "/"; dir = new URL("..", dir)) {
    const file = new URL("test/fixtures/threats/corpus.json", dir);
    if (!existsSync(file)) continue;
    const c = JSON.parse(readFileSync(file, "utf8")) as { dangerous: { command: string }[]; everyday: { command: string }[] };
    return [...c.dangerous, ...c.everyday].map((e) => e.command);
  }
  return undefined;
}

/**
 * The mean time per call over the threat corpus (every dangerous and everyday command once per
 * round, `rounds` rounds after one warm-up round) at 100 rules, against JSON.stringify of the
 * same arguments; and the slowest command's mean.
 */
export function corpusBench(rounds = 5): BenchResult[] {
  const commands = corpusCommands();
  if (commands === undefined) return [];
  const policy = compilePolicy([{ name: "bench", spec: { adaptive_rules: benchRules(100) } }]);
  const ctx = { policy, scope: agentScope({ spec: { tools: ["cmd.run"] } }), history: [] };
  const calls = commands.map((command) => ({ command }));
  const per = new Float64Array(calls.length);
  let guardTotal = 0;
  let baseTotal = 0;
  for (let r = 0; r <= rounds; r++) {
    for (let i = 0; i < calls.length; i++) {
      const args = calls[i] as JsonObject;
      let t = performance.now();
      runGuard({ tool: "cmd.run", args, step: 1 }, ctx);
      const g = performance.now() - t;
      t = performance.now();
      JSON.stringify(args);
      const b = performance.now() - t;
      if (r === 0) continue;
      per[i] = (per[i] ?? 0) + g;
      guardTotal += g;
      baseTotal += b;
    }
  }
  const n = calls.length * rounds;
  const mean = (guardTotal / n) * 1000;
  const base = (baseTotal / n) * 1000;
  const slowest = (Math.max(...per) / rounds) * 1000;
  return [
    {
      name: `guard mean per call, threat corpus (${calls.length} commands), 100 rules`,
      baselineName: "JSON.stringify(args) mean",
      baseline: base,
      value: mean,
      unit: "µs",
      ratio: mean / base,
      target: "reported",
      met: true,
      notes: `${rounds} rounds after a warm-up round; the slowest command's mean ${slowest.toFixed(0)} µs (the corpus holds multi-line scripts of up to ${Math.max(...commands.map((c) => c.length))} characters)`,
    },
  ];
}

export const suite: BenchSuite = {
  name: "guard",
  needs: [],
  run: async () => [...(await guardBenchObserved()), ...corpusBench()],
};
