// Runs test/fixtures/bypass/corpus.json through the guard: every must-block attempt must be
// blocked, every benign call allowed, and every known miss must still be a miss (or unmarked).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../api/types.js";
import { agentScope } from "./context.js";
import { runGuard } from "./guard.js";
import { compilePolicy } from "./policy.js";

interface Attempt {
  id: string;
  tool: string;
  args: JsonObject;
  expect: "block" | "allow";
  category: string;
  known_miss?: boolean;
  note?: string;
}
const corpus = JSON.parse(readFileSync(new URL("../../../test/fixtures/bypass/corpus.json", import.meta.url), "utf8")) as {
  agent_tools: string[];
  attempts: Attempt[];
};

describe("bypass corpus", () => {
  const policy = compilePolicy([]);
  const scope = agentScope({ spec: { tools: corpus.agent_tools } });
  const results = corpus.attempts.map((a) => ({ a, d: runGuard({ tool: a.tool, args: a.args, step: 1 }, { policy, scope, history: [] }) }));

  it("has at least 50 attempts that must be blocked", () => {
    expect(results.filter((r) => r.a.expect === "block").length).toBeGreaterThanOrEqual(50);
  });

  it("blocks every must-block attempt, allows every benign call, and reports the blocked share", () => {
    const attacks = results.filter((r) => r.a.expect === "block");
    const blocked = attacks.filter((r) => !r.d.approved);
    const misses = attacks.filter((r) => r.d.approved);
    const share = blocked.length / attacks.length;
    console.log(
      `bypass corpus: ${blocked.length}/${attacks.length} blocked (${(share * 100).toFixed(1)}%); known misses: ${misses.map((m) => m.a.id).join(", ") || "none"}`,
    );
    expect(misses.filter((m) => m.a.known_miss !== true).map((m) => m.a.id)).toEqual([]);
    expect(results.filter((r) => r.a.expect === "allow" && !r.d.approved).map((r) => `${r.a.id}: ${r.d.reason ?? ""}`)).toEqual([]);
  });

  it("marks as known_miss only attempts that really get through", () => {
    expect(results.filter((r) => r.a.known_miss === true && !r.d.approved).map((r) => r.a.id)).toEqual([]);
  });

  it("blocks each attempt at the destructive_pattern check", () => {
    const wrong = results.filter((r) => !r.d.approved && r.d.check !== "destructive_pattern").map((r) => `${r.a.id}: ${r.d.check ?? ""}`);
    expect(wrong).toEqual([]);
  });
});
