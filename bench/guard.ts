// Guard alone: p50/p99 per call for a call with 10 nested string arguments under 10, 100 and
// 1,000 adaptive rules, against JSON.stringify of the same arguments measured in the same run.
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
    return { name: `rule_${i}`, match_field: "args" as const, pattern: shapes[i % shapes.length] as string, action: i % 10 === 0 ? ("flag" as const) : ("deny" as const), reason: "bench" };
  });
}

/** Per-call latencies in microseconds of fn and of baseline, interleaved call by call so both see the same machine. */
export function sampleInterleaved(fn: () => unknown, baseline: () => unknown, calls: number, warmup = Math.min(2000, calls)): { value: Quantiles; baseline: Quantiles } {
  for (let i = 0; i < warmup; i++) {
    fn();
    baseline();
  }
  const a = new Float64Array(calls);
  const b = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    let t = performance.now();
    fn();
    a[i] = (performance.now() - t) * 1000;
    t = performance.now();
    baseline();
    b[i] = (performance.now() - t) * 1000;
  }
  return { value: quantiles(a), baseline: quantiles(b) };
}

/** p50 and p99 of a sample. */
export interface Quantiles {
  p50: number;
  p99: number;
}

function quantiles(t: Float64Array): Quantiles {
  t.sort();
  return { p50: t[Math.floor(t.length * 0.5)] ?? 0, p99: t[Math.floor(t.length * 0.99)] ?? 0 };
}

/** Runs the guard bench; `calls` per configuration. */
export function guardBench(calls = 20_000): BenchResult[] {
  const scope = agentScope({ spec: { tools: ["cmd.run"] } });
  const results: BenchResult[] = [];
  for (const n of [10, 100, 1000]) {
    const policy = compilePolicy([{ name: "bench", spec: { adaptive_rules: benchRules(n) } }]);
    const ctx = { policy, scope, history: [] };
    const check = runGuard({ tool: "cmd.run", args: BENCH_ARGS, step: 1 }, ctx);
    if (!check.approved) throw new Error(`bench call was denied: ${check.reason ?? ""}`);
    const s = sampleInterleaved(() => runGuard({ tool: "cmd.run", args: BENCH_ARGS, step: 1 }, ctx), () => JSON.stringify(BENCH_ARGS), calls);
    for (const q of ["p50", "p99"] as const) {
      const target = n === 100 && q === "p99";
      results.push({
        name: `guard ${q}, 10 nested args, ${n} rules`,
        baselineName: `JSON.stringify(args) ${q}`,
        baseline: s.baseline[q],
        value: s.value[q],
        unit: "µs",
        ratio: s.value[q] / s.baseline[q],
        target: target ? "p99 < 50 µs" : "reported",
        met: target ? s.value[q] < 50 : true,
      });
    }
  }
  return results;
}

export const suite: BenchSuite = {
  name: "guard",
  needs: [],
  run: () => Promise.resolve(guardBench()),
};
