// The replay's comparison: a run recorded through the real gate under one GuardPolicy, replayed
// against the same policy (nothing changes), a stricter one (the calls it would now deny, and a
// later call a sequence contract no longer sees the prior of), a looser one, and one that asks
// a person; and the recorded-run file read back, with bad lines named by file, line and field.
import { describe, expect, it } from "vitest";
import type { ToolCallProposal } from "../api/protocol.js";
import type { Agent, GuardPolicySpec, JsonObject } from "../api/types.js";
import { createGate, type JudgeRunner } from "./gate.js";
import { compilePolicy } from "./guard/policy.js";
import { PolicyStore } from "./guard/policy-store.js";
import { parseRecordedRun, RECORDED_RUN_FORMAT, recordedRunText, type RecordedRunHeader } from "./recorded-run.js";
import { outcomeText, replayCalls, type RecordedCall } from "./replay.js";

const agent: Pick<Agent, "spec"> = { spec: { tools: ["fs.read", "fs.write", "cmd.run", "http.get"] } };
const base: GuardPolicySpec = {
  sequence_contracts: [{ name: "read_before_write", requires_prior: "fs.read", triggers_for: "fs.write", within_steps: 5 }],
};
const judgeSays =
  (score: number): JudgeRunner =>
  () =>
    Promise.resolve({ result: { score, confidence: 1, reasoning: "ok" }, child: "j-1" });

/** The calls of one iteration, decided by the real gate under `spec` as the tool-call service would (its history: the allowed calls before). */
async function record(
  calls: [string, JsonObject][],
  spec: GuardPolicySpec,
  a: Pick<Agent, "spec"> = agent,
  judgeRunner: JudgeRunner = judgeSays(0.9),
): Promise<RecordedCall[]> {
  const store = new PolicyStore();
  store.update([{ name: "p", namespace: "team", spec }]);
  const gate = createGate({ policyStore: store, agent: a, judgeRunner });
  const out: RecordedCall[] = [];
  for (const [i, [tool, args]] of calls.entries()) {
    const proposal: ToolCallProposal = {
      namespace: "team",
      execution: "ex",
      iteration: 1,
      step: i + 1,
      toolCallId: `c${i + 1}`,
      tool,
      args,
    };
    const context = {
      iteration: {
        calls: (from: number, before: number) =>
          out
            .filter((c) => c.proposal.step >= from && c.proposal.step < before)
            .map((c) => ({ ...c.proposal, allowed: c.decision.allowed })),
        violations: [],
      },
    };
    const o = gate.decide(proposal, context);
    out.push({ proposal, decision: "judged" in o ? await o.judged() : o });
  }
  return out;
}

const RUN: [string, JsonObject][] = [
  ["fs.read", { path: "/workspace/a.txt" }],
  ["cmd.run", { command: "curl -s https://example.com/install.sh" }],
  ["cmd.run", { command: "rm -rf /" }],
  ["fs.write", { path: "/workspace/b.txt", content: "x" }],
  ["http.get", { url: "https://example.com" }],
];

const policy = (spec: GuardPolicySpec) => compilePolicy([{ name: "p", namespace: "team", spec }]);

describe("replayCalls", () => {
  it("lists no change when the policy is the one the run was recorded under", async () => {
    const calls = await record(RUN, base);
    expect(calls.map((c) => c.decision.allowed)).toEqual([true, true, false, true, true]);
    const replayed = replayCalls(calls, { agent, policy: policy(base) });
    expect(replayed.filter((c) => c.changed)).toEqual([]);
    expect(replayed.map((c) => outcomeText(c.replayed))).toEqual([
      "allowed",
      "allowed",
      "denied by guard (destructive_pattern)",
      "allowed",
      "allowed",
    ]);
  });

  it("lists the calls a stricter policy would deny, with the guard's reason, and the later call whose prior is now denied", async () => {
    const calls = await record(RUN, base);
    const stricter: GuardPolicySpec = {
      ...base,
      revoked_tools: [{ tool: "http.get", reason: "no egress" }],
      adaptive_rules: [
        { name: "no_curl", match_field: "args", pattern: "curl", action: "deny", reason: "no downloads" },
        { name: "no_workspace_a", match_field: "args", pattern: "a\\.txt", action: "deny", reason: "a.txt is off limits" },
      ],
    };
    const changed = replayCalls(calls, { agent, policy: policy(stricter) }).filter((c) => c.changed);
    expect(changed.map((c) => [c.step, c.tool, outcomeText(c.recorded), outcomeText(c.replayed)])).toEqual([
      [1, "fs.read", "allowed", "denied by guard (adaptive_rule)"],
      [2, "cmd.run", "allowed", "denied by guard (adaptive_rule)"],
      // The read it needs is now denied, so the sequence contract no longer sees it.
      [4, "fs.write", "allowed", "denied by guard (sequence_contract)"],
      [5, "http.get", "allowed", "denied by guard (revocation)"],
    ]);
    expect(changed[1]?.why).toBe("adaptive_rule: no_curl");
    expect(changed[2]?.why).toContain("read_before_write");
  });

  it("lists a call a looser policy lets through, and what it was denied for", async () => {
    const calls = await record(
      [
        ["fs.write", { path: "/workspace/b.txt", content: "x" }],
        ["fs.read", { path: "/workspace/a.txt" }],
      ],
      base,
    );
    expect(calls[0]?.decision.blocked_by).toBe("guard");
    const replayed = replayCalls(calls, { agent, policy: policy({}) });
    expect(replayed.map((c) => [c.changed, outcomeText(c.replayed)])).toEqual([
      [true, "allowed"],
      [false, "allowed"],
    ]);
    expect(replayed[0]?.why).toMatch(/^the guard now lets it through \(it was denied by sequence_contract: /);
  });

  it("says a person would now be asked when a policy's approval covers the tool, and keeps recorded judges' verdicts", async () => {
    const judged: Pick<Agent, "spec"> = {
      spec: { ...agent.spec, execution: { tool_validation: [{ type: "semantic", judge_agent: "sec", min_score: 0.7 }] } },
    };
    const calls = await record(RUN.slice(0, 2), base, judged, judgeSays(0.9));
    const replayed = replayCalls(calls, { agent: judged, policy: policy({ ...base, approval: { "cmd.run": "always" } }) });
    expect(replayed.map((c) => [c.tool, c.changed, outcomeText(c.replayed)])).toEqual([
      ["fs.read", false, "allowed"],
      ["cmd.run", true, "asks a person (always)"],
    ]);
    expect(replayed[1]?.why).toBe("approval for cmd.run is now always");
  });

  it("leaves a call the guard newly lets through to its judges, which it does not run", async () => {
    const judged: Pick<Agent, "spec"> = {
      spec: { ...agent.spec, execution: { tool_validation: [{ type: "semantic", judge_agent: "sec" }] } },
    };
    const calls = await record(
      [["cmd.run", { command: "curl https://example.com" }]],
      { adaptive_rules: [{ name: "c", match_field: "args", pattern: "curl", action: "deny", reason: "no curl" }] },
      judged,
    );
    expect(calls[0]?.decision.judges).toEqual([]);
    const [r] = replayCalls(calls, { agent: judged, policy: policy({}) });
    expect(r && outcomeText(r.replayed)).toBe("to judges (not re-run)");
    expect(r?.changed).toBe(true);
  });
});

describe("recorded-run files", () => {
  const header: RecordedRunHeader = {
    format: RECORDED_RUN_FORMAT,
    namespace: "team",
    execution: "ex",
    run: "0b6e6c4a-1",
    agent: {
      name: "worker",
      spec: agent.spec,
    },
    exportedAt: "2026-12-07T21:00:00.000Z",
  };

  it("reads back what it wrote, and the replay of the read calls equals the replay of the recorded ones", async () => {
    const calls = await record(RUN, base);
    const back = parseRecordedRun(recordedRunText(header, calls), "run.jsonl");
    expect(back.header).toEqual(header);
    expect(back.calls).toEqual(calls);
  });

  it("names the file, the line and the field of a bad line", async () => {
    const [call] = await record(RUN.slice(0, 1), base);
    const good = recordedRunText(header, call === undefined ? [] : [call]).split("\n");
    expect(() => parseRecordedRun("", "f.jsonl")).toThrow(/^f\.jsonl: empty/);
    expect(() => parseRecordedRun('{"format":"x"}\n', "f.jsonl")).toThrow('f.jsonl:1: format must be "gavel.recorded-run/v1", not "x"');
    expect(() => parseRecordedRun(`${JSON.stringify({ ...header, run: "" })}\n`, "f.jsonl")).toThrow("f.jsonl:1: header field run");
    expect(() => parseRecordedRun(`${good[0]}\nnot json\n`, "f.jsonl")).toThrow(/^f\.jsonl:2: not a JSON object/);
    const line = JSON.parse(good[1] ?? "{}") as { proposal: { tool?: unknown } };
    delete line.proposal.tool;
    expect(() => parseRecordedRun(`${good[0]}\n\n${JSON.stringify(line)}\n`, "f.jsonl")).toThrow(/^f\.jsonl:3: proposal: .*tool/);
  });
});
