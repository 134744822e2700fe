// Keeps the guard bench honest: its call is approved (so it measures the whole chain) and
// every configuration reports a positive p50/p99 against the same-run baseline.
import { describe, expect, it } from "vitest";
import { agentScope } from "../src/gate/guard/context.js";
import { argumentViews } from "../src/gate/guard/argument-views.js";
import { runGuard } from "../src/gate/guard/guard.js";
import { compilePolicy } from "../src/gate/guard/policy.js";
import { BENCH_ARGS, benchRules, corpusBench, corpusCommands, guardBench } from "./guard.js";

describe("guard bench", () => {
  it("measures a call with 10 nested string values that every rule set approves", () => {
    const strings = argumentViews(BENCH_ARGS).filter((v) => JSON.stringify(BENCH_ARGS).includes(JSON.stringify(v)));
    expect(strings.length).toBeGreaterThanOrEqual(10);
    for (const n of [10, 100, 1000]) {
      const policy = compilePolicy([{ name: "b", spec: { adaptive_rules: benchRules(n) } }]);
      expect(
        runGuard(
          { tool: "cmd.run", args: BENCH_ARGS, step: 1 },
          { policy, scope: agentScope({ spec: { tools: ["cmd.run"] } }), history: [] },
        ).approved,
      ).toBe(true);
    }
  });

  it("reports the mean per call over the threat corpus", () => {
    expect(corpusCommands()?.length).toBeGreaterThanOrEqual(600);
    const [row] = corpusBench(1);
    expect(row).toMatchObject({ unit: "µs", target: "reported", met: true });
    expect(row?.value).toBeGreaterThan(0);
  });

  it("reports p50 and p99 for 10, 100 and 1,000 rules", () => {
    const rows = guardBench(300);
    expect(rows.map((r) => r.name)).toEqual(
      [10, 100, 1000].flatMap((n) => [`guard p50, 10 nested args, ${n} rules`, `guard p99, 10 nested args, ${n} rules`]),
    );
    for (const r of rows) {
      expect(r.value).toBeGreaterThan(0);
      expect(r.baseline).toBeGreaterThan(0);
    }
  });

  it("uses rules that do fire on their own inputs (the rules are not vacuous)", () => {
    const policy = compilePolicy([{ name: "b", spec: { adaptive_rules: benchRules(100) } }]);
    const d = runGuard(
      { tool: "cmd.run", args: { c: "forbidden_cmd_4 --now" }, step: 1 },
      { policy, scope: agentScope({ spec: { tools: ["cmd.run"] } }), history: [] },
    );
    expect(d).toMatchObject({ approved: false, reason: "adaptive_rule: rule_4" });
  });
});
