// The load pod's schedule (bench/gate-cluster-pod.ts): interleaved rounds of echo and gate at
// each rate of the plan, then a ladder of rising rates up to the last one whose p99 stays under
// the plan's limit, for each kind on its own.
import { percentile, type LoadResult } from "./load.js";
import type { LadderStep, PodPlan, RateResult, Series } from "./gate-cluster-pod.js";

/** One measurement: `kind` at `rate` calls/s for `seconds`. */
export type Measure = (kind: "echo" | "gate", rate: number, seconds: number) => Promise<LoadResult>;

/** p50/p99 of samples (ms) and their number. */
export const series = (samples: readonly number[]): Series => ({
  p50: percentile(samples, 50),
  p99: percentile(samples, 99),
  n: samples.length,
});

/** Measures echo and gate at each rate, `plan.rounds` times, alternating which goes first. */
export async function measureRounds(plan: PodPlan, measure: Measure, log: (msg: string) => void): Promise<RateResult[]> {
  const samples = new Map(plan.rates.map((r) => [r, { echo: [] as number[], gate: [] as number[], lag: [] as number[] }]));
  for (let round = 0; round < plan.rounds; round++) {
    for (const rate of plan.rates) {
      const s = samples.get(rate);
      if (s === undefined) continue;
      // Alternate which goes first, so that neither always follows the other.
      for (const kind of round % 2 === 0 ? (["echo", "gate"] as const) : (["gate", "echo"] as const)) {
        const r = await measure(kind, rate, plan.seconds);
        s[kind].push(...r.latencies);
        s.lag.push(...r.lags);
        log(
          `round ${round + 1} ${kind} ${rate}/s: p50 ${percentile(r.latencies, 50).toFixed(3)} ms, p99 ${percentile(r.latencies, 99).toFixed(3)} ms`,
        );
      }
    }
  }
  return [...samples].map(([rate, s]) => ({ rate, echo: series(s.echo), gate: series(s.gate), lag: series(s.lag) }));
}

/** Climbs the plan's ladder for echo and gate each, until a step's p99 passes the limit or its rate is not reached. */
export async function climbLadder(
  plan: PodPlan,
  measure: Measure,
  log: (msg: string) => void,
): Promise<{ ladder: LadderStep[]; maxRate: { echo: number; gate: number } }> {
  const ladder: LadderStep[] = [];
  const maxRate = { echo: 0, gate: 0 };
  const failed = { echo: false, gate: false };
  for (const rate of plan.ladder) {
    for (const kind of ["echo", "gate"] as const) {
      if (failed[kind]) continue;
      // At least 600 calls per step, so that its p99 is not the largest few samples.
      const r = await measure(kind, rate, Math.max(plan.ladderSeconds, 600 / rate));
      const p99 = percentile(r.latencies, 99);
      const passed = p99 < plan.p99LimitMs && r.achieved >= rate * 0.95;
      ladder.push({ rate, kind, p99, achieved: r.achieved, passed });
      log(`ladder ${kind} ${rate}/s: p99 ${p99.toFixed(3)} ms, issued ${r.achieved.toFixed(0)}/s${passed ? "" : " (fails)"}`);
      if (passed) maxRate[kind] = rate;
      else failed[kind] = true;
    }
    if (failed.echo && failed.gate) break;
  }
  return { ladder, maxRate };
}
