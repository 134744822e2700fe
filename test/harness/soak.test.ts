// The soak's pure parts: its seeded kill moments, its per-call counts of the store's records,
// and the set it runs (docs/soak.md).
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import type { ToolCallRecord } from "../../src/gate/tool-call.js";
import type { RecordWatch } from "./decision-records.js";
import { decisionsPerCall, lastRecords, seededRandom } from "./soak.js";
import { agentOf, soakExecutionsYaml, soakSetupYaml } from "./soak-set.js";

const facts = { fingerprint: "f", iteration: 1, tool: "cmd.run" };
const claim = (step: number): ToolCallRecord => ({ ...facts, step, kind: "claim", gate: "g", write: "w" });
const decision = (step: number): ToolCallRecord => ({
  ...facts,
  step,
  kind: "decision",
  gate: "g",
  write: "w",
  decision: {
    toolCallId: `c${step}`,
    allowed: true,
    blocked_by: "none",
    reason: "",
    guard: {} as never,
    skippedJudges: false,
    judges: [],
    latencyMs: 1,
  },
});
const watchOf = (entries: [string, ToolCallRecord][]): RecordWatch => ({
  records: entries.map(([, r]) => r),
  subjects: entries.map(([s]) => s),
  storedAt: entries.map(() => 0),
  stop: () => Promise.resolve(),
});

describe("seededRandom", () => {
  it("gives the same moments for the same seed, others for another, all in [0, 1)", () => {
    const a = Array.from({ length: 20 }, seededRandom(42));
    expect(Array.from({ length: 20 }, seededRandom(42))).toEqual(a);
    expect(Array.from({ length: 20 }, seededRandom(43))).not.toEqual(a);
    expect(a.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(a).size).toBe(20);
  });
});

describe("decisionsPerCall and lastRecords", () => {
  const subject = (call: string, execution = "soak-0") => `gavel.decisions.ns.${execution}.uid-1.${call}`;
  const watch = watchOf([
    [subject("a"), claim(1)],
    [subject("a"), decision(1)],
    [subject("b"), claim(2)],
    [subject("b"), decision(2)],
    [subject("b"), decision(2)],
    [subject("c"), claim(3)],
    [subject("d", "soak-1"), decision(1)],
  ]);

  it("counts the decisions stored for each call: a call decided twice has 2, a claim never decided 0", () => {
    expect(Object.fromEntries(decisionsPerCall(watch))).toEqual({ "ns/soak-0/a": 1, "ns/soak-0/b": 2, "ns/soak-0/c": 0, "ns/soak-1/d": 1 });
  });

  it("keeps the last record of each call of one Execution", () => {
    expect(lastRecords(watch, "ns", "soak-0").map((r) => [r.step, r.kind])).toEqual([
      [1, "decision"],
      [2, "decision"],
      [3, "claim"],
    ]);
  });
});

describe("the soak set", () => {
  it("is two Agents of cold judges, the example's policy and the rule judge, then N Executions, every third of the failing Agent", () => {
    const setup = parseAllDocuments(soakSetupYaml()).map(
      (d) => d.toJSON() as { kind: string; metadata: { name: string; annotations?: object } },
    );
    expect(setup.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      "Agent/soak-pass",
      "Agent/soak-fail",
      "GuardPolicy/guarded-tools",
      "Agent/rule-judge",
    ]);
    expect(setup[0]?.metadata.annotations).toEqual({ "gavel.dev/warm-judges": "0" });
    const runs = parseAllDocuments(soakExecutionsYaml(4)).map((d) => d.toJSON() as { spec: { agentRef: { name: string } } });
    expect(runs.map((r) => r.spec.agentRef.name)).toEqual([agentOf(0), agentOf(1), "soak-fail", agentOf(3)]);
  });
});
