// The approval tier of the gate with an Approver that is a plain function: when a person is
// asked (the Agent's tools[].approval raised by GuardPolicy approval), never after a guard
// denial, what the decision says for each answer, and the digest that binds it to the call.
import { describe, expect, it } from "vitest";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, ApprovalTrigger, JsonObject } from "../api/types.js";
import {
  approvalRule,
  callDigest,
  judgeUncertainty,
  repeatDigest,
  shownArguments,
  type ApprovalAnswer,
  type ApprovalRequest,
} from "./approval.js";
import { createGate, type JudgeRunner } from "./gate.js";
import { agentScope } from "./guard/context.js";
import { PolicyStore } from "./guard/policy-store.js";

let seq = 0;
function proposal(tool: string, args: JsonObject): ToolCallProposal {
  seq++;
  return { namespace: "team-a", execution: "ex-1", iteration: 1, step: seq, toolCallId: `call-${seq}`, tool, args };
}
const noCalls = { iteration: { calls: () => [], violations: [] } };
const judgeSays =
  (score: number): JudgeRunner =>
  () =>
    Promise.resolve({ result: { score, confidence: 1, reasoning: score < 0.7 ? "too broad" : "fine" }, child: "j-1" });

/** A gate whose approver answers `answer` and records what it was asked. */
function gateWith(
  tools: Agent["spec"]["tools"],
  o: { answer?: ApprovalAnswer; judges?: boolean; score?: number; store?: PolicyStore } = {},
) {
  const asked: ApprovalRequest[] = [];
  const gate = createGate({
    policyStore: o.store ?? new PolicyStore(),
    agent: { spec: { tools, execution: { tool_validation: o.judges === true ? [{ type: "semantic", judge_agent: "sec" }] : [] } } },
    judgeRunner: judgeSays(o.score ?? 0.9),
    ...(o.answer !== undefined
      ? {
          approver: (r: ApprovalRequest) => {
            asked.push(r);
            return Promise.resolve(o.answer as ApprovalAnswer);
          },
        }
      : {}),
  });
  const decide = async (p: ToolCallProposal): Promise<ToolCallDecision> => {
    const out = gate.decide(p, noCalls);
    return "judged" in out ? out.judged() : out;
  };
  return { decide, asked };
}

describe("approval rule", () => {
  it("is the Agent's tools[].approval raised, never lowered, by the GuardPolicies' approval (by tool or '*'), with its timeout and onTimeout", () => {
    const scope = agentScope({
      spec: { tools: [{ name: "cmd.run", approval: "on_judge_reject", approval_timeout: "90s", approval_on_timeout: "fail" }, "fs.write"] },
    });
    const none = new Map<string, Set<ApprovalTrigger>>();
    const floors = (entries: [string, ApprovalTrigger][]) => new Map(entries.map(([t, m]) => [t, new Set([m])]));
    expect(approvalRule("cmd.run", scope, { approval: none })).toEqual({
      mode: "on_judge_reject",
      modes: new Set(["on_judge_reject"]),
      timeoutMs: 90_000,
      onTimeout: "fail",
      margin: 0.1,
    });
    expect(approvalRule("fs.write", scope, { approval: none })).toEqual({
      mode: "never",
      modes: new Set(),
      timeoutMs: 300_000,
      onTimeout: "deny",
      margin: 0.1,
    });
    expect(approvalRule("fs.write", scope, { approval: floors([["*", "on_judge_reject"]]) }).mode).toBe("on_judge_reject");
    expect(approvalRule("cmd.run", scope, { approval: floors([["cmd.run", "always"]]) }).mode).toBe("always");
    // A policy's on_judge_reject does not lower an Agent's always.
    const always = agentScope({ spec: { tools: [{ name: "fs.write", approval: "always" }] } });
    expect(approvalRule("fs.write", always, { approval: floors([["fs.write", "on_judge_reject"]]) }).mode).toBe("always");
    // An Agent's on_uncertain and a policy's on_judge_reject both hold: each asks on its own.
    const unsure = agentScope({ spec: { tools: [{ name: "fs.write", approval: "on_uncertain", min_agreement_confidence: 0.8 }] } });
    const both = approvalRule("fs.write", unsure, { approval: floors([["*", "on_judge_reject"]]) });
    expect([...both.modes].sort()).toEqual(["on_judge_reject", "on_uncertain"]);
    expect(both.minAgreement).toBe(0.8);
  });

  it("GuardPolicy approval: every policy's trigger adds to the others'; a bad value is a compile error naming the field", () => {
    const store = new PolicyStore();
    store.update([
      { name: "default", namespace: "gavel-system", spec: { approval: { "cmd.run": "on_judge_reject", "*": "on_flag" } } },
      { name: "team", namespace: "team-a", spec: { approval: { "cmd.run": "always", "*": "on_uncertain" } } },
    ]);
    const p = store.get("team-a");
    expect([...(p.approval?.get("cmd.run") ?? [])].sort()).toEqual(["always", "on_judge_reject"]);
    expect([...(p.approval?.get("*") ?? [])].sort()).toEqual(["on_flag", "on_uncertain"]);
    // An Agent that says never still gets the operators' triggers: on_flag and on_uncertain for every tool.
    const rule = approvalRule("fs.write", agentScope({ spec: { tools: [{ name: "fs.write", approval: "never" }] } }), p);
    expect([rule.mode, [...rule.modes].sort()]).toEqual(["on_flag", ["on_flag", "on_uncertain"]]);
    const bad = new PolicyStore();
    expect(() => bad.update([{ name: "bad", namespace: "team-a", spec: { approval: { "cmd.run": "sometimes" as "always" } } }])).toThrow(
      'approval.cmd.run must be one of always, on_judge_reject, on_flag, on_uncertain, not "sometimes"',
    );
  });
});

describe("GuardPolicy bounds of on_uncertain", () => {
  it("approval_margin and min_agreement_confidence are the least an Agent's tool can use: the strictest of the Agent's and every policy's (by tool or '*'); a bad value names the field", () => {
    const store = new PolicyStore();
    store.update([
      {
        name: "default",
        namespace: "gavel-system",
        spec: { approval_margin: { "*": 0.2 }, min_agreement_confidence: { "fs.write": 0.7 } },
      },
      { name: "team", namespace: "team-a", spec: { approval_margin: { "fs.write": 0.15 }, min_agreement_confidence: { "*": 0.9 } } },
    ]);
    const p = store.get("team-a");
    const rule = (tool: Record<string, unknown>) =>
      approvalRule("fs.write", agentScope({ spec: { tools: [{ name: "fs.write", approval: "on_uncertain", ...tool }] } }), p);
    // The Agent narrows the margin to 0.05 and lowers the agreement to 0.5: the operators' 0.2 and 0.9 hold.
    expect(rule({ approval_margin: 0.05, min_agreement_confidence: 0.5 })).toMatchObject({ margin: 0.2, minAgreement: 0.9 });
    // Asking for more is the Agent's to do.
    expect(rule({ approval_margin: 0.4, min_agreement_confidence: 0.95 })).toMatchObject({ margin: 0.4, minAgreement: 0.95 });
    expect(rule({})).toMatchObject({ margin: 0.2, minAgreement: 0.9 });
    // No policy: the Agent's own, or the default margin and no agreement bound.
    expect(approvalRule("fs.write", agentScope({ spec: { tools: ["fs.write"] } }), new PolicyStore().get("team-a"))).toMatchObject({
      margin: 0.1,
    });
    expect(approvalRule("fs.write", agentScope({ spec: { tools: ["fs.write"] } }), new PolicyStore().get("team-a")).minAgreement).toBe(
      undefined,
    );
    const bad = new PolicyStore();
    expect(() => bad.update([{ name: "bad", namespace: "team-a", spec: { approval_margin: { "cmd.run": 1.5 } } }])).toThrow(
      "approval_margin.cmd.run must be a number from 0 to 1",
    );
  });

  it("the gate asks about a score the Agent's narrowed margin would let through, once a policy widens it", async () => {
    const store = new PolicyStore();
    store.update([{ name: "team", namespace: "team-a", spec: { approval_margin: { "fs.write": 0.2 } } }]);
    const tools = [{ name: "fs.write", approval: "on_uncertain" as const, approval_margin: 0.01 }];
    const answer = { name: "a", outcome: "denied" as const, decidedBy: "bob", reason: "too close" };
    // 0.85 against min_score 0.7: outside the Agent's 0.01, inside the policy's 0.2.
    const alone = gateWith(tools, { judges: true, score: 0.85, answer });
    expect((await alone.decide(proposal("fs.write", { path: "/workspace/a" }))).allowed).toBe(true);
    expect(alone.asked).toHaveLength(0);
    const bounded = gateWith(tools, { judges: true, score: 0.85, answer, store });
    expect(await bounded.decide(proposal("fs.write", { path: "/workspace/a" }))).toMatchObject({ allowed: false, blocked_by: "approval" });
    expect(bounded.asked[0]?.findings).toBe("judge sec's score 0.85 is within 0.20 of its min_score 0.70");
  });
});

describe("gate with an approver", () => {
  it("always: a call the guard allows waits for the person, who is told the call, its digest and why; approved runs, told by whom", async () => {
    const g = gateWith([{ name: "fs.write", approval: "always" }, "fs.read"], {
      answer: { name: "a-1", outcome: "approved", decidedBy: "alice", reason: "ok" },
    });
    const p = proposal("fs.write", { path: "/workspace/a", content: "x" });
    const d = await g.decide(p);
    expect(d).toMatchObject({ allowed: true, blocked_by: "none", approval: { outcome: "approved", decidedBy: "alice" } });
    expect(d.reason).toBe("approved by alice: ok (approved by the guard)");
    expect(g.asked).toHaveLength(1);
    expect(g.asked[0]).toMatchObject({ trigger: "always", digest: callDigest(p), timeoutMs: 300_000, onTimeout: "deny" });
    // A tool without approval is not asked about.
    expect((await g.decide(proposal("fs.read", { path: "/workspace/a" }))).approval).toBeUndefined();
    expect(g.asked).toHaveLength(1);
  });

  it("never asks about a call the guard denied (the non-negotiable core)", async () => {
    const g = gateWith([{ name: "cmd.run", approval: "always" }], { answer: { name: "a", outcome: "approved", decidedBy: "alice" } });
    const d = await g.decide(proposal("cmd.run", { command: "rm -rf /" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "guard" });
    expect(g.asked).toHaveLength(0);
  });

  it("on_judge_reject: asks only when a judge rejected; the person's denial and a timeout are told distinctly", async () => {
    const passed = gateWith([{ name: "fs.write", approval: "on_judge_reject" }], {
      judges: true,
      score: 0.9,
      answer: { name: "a", outcome: "denied" },
    });
    expect((await passed.decide(proposal("fs.write", { path: "/workspace/a" }))).allowed).toBe(true);
    expect(passed.asked).toHaveLength(0);
    const denied = gateWith([{ name: "fs.write", approval: "on_judge_reject" }], {
      judges: true,
      score: 0.2,
      answer: { name: "a-2", outcome: "denied", decidedBy: "bob", reason: "not now" },
    });
    const d = await denied.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(d).toMatchObject({
      allowed: false,
      blocked_by: "approval",
      reason: "denied by bob: not now",
      judges: [{ judge: "sec", passed: false }],
    });
    expect(denied.asked[0]?.trigger).toBe("on_judge_reject");
    expect(denied.asked[0]?.pending.reason).toContain("judge sec");
    const late = gateWith([{ name: "fs.write", approval: "always", approval_timeout: "20s", approval_on_timeout: "fail" }], {
      answer: { name: "a-3", outcome: "timed_out" },
    });
    const t = await late.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(t).toMatchObject({ allowed: false, blocked_by: "approval", approval: { outcome: "timed_out", failIteration: true } });
    expect(t.reason).toBe("approval timed out: nobody decided ToolApproval a-3 within 20s (onTimeout: fail, the iteration fails)");
  });

  it("a standing decision (--for-execution) of an identical earlier call: told as the person's, naming the approval it stands on", async () => {
    const g = gateWith([{ name: "fs.write", approval: "always" }], {
      answer: { name: "a-1", outcome: "denied", decidedBy: "bob", reason: "never this", standing: true },
    });
    const d = await g.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "approval", approval: { standing: true, name: "a-1" } });
    expect(d.reason).toBe("denied by bob: never this (standing decision for this execution, ToolApproval a-1)");
    expect(g.asked[0]?.repeatDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("on_flag: asks about a call the guard flagged without denying (even without judges), not about one it passed quietly", async () => {
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: { adaptive_rules: [{ name: "watch_env", match_field: "args", pattern: "\\.env", action: "flag", reason: "env files" }] },
      },
    ]);
    const g = gateWith([{ name: "fs.write", approval: "on_flag" }], {
      store,
      answer: { name: "a", outcome: "approved", decidedBy: "bob" },
    });
    expect((await g.decide(proposal("fs.write", { path: "/workspace/notes.md" }))).allowed).toBe(true);
    expect(g.asked).toHaveLength(0);
    const d = await g.decide(proposal("fs.write", { path: "/workspace/x.env.example" }));
    expect(d).toMatchObject({ allowed: true, approval: { outcome: "approved" } });
    expect(g.asked.map((r) => r.trigger)).toEqual(["on_flag"]);
    expect(g.asked[0]?.findings).toContain("the guard flagged: ");
  });

  it("a GuardPolicy's on_flag asks about a flagged call of an Agent that says never, and denies it when nobody answers", async () => {
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: {
          adaptive_rules: [{ name: "watch_env", match_field: "args", pattern: "\\.env", action: "flag", reason: "env files" }],
          approval: { "*": "on_flag" },
        },
      },
    ]);
    const g = gateWith([{ name: "fs.write", approval: "never" }], { store, answer: { name: "a", outcome: "timed_out" } });
    expect((await g.decide(proposal("fs.write", { path: "/workspace/notes.md" }))).allowed).toBe(true);
    const d = await g.decide(proposal("fs.write", { path: "/workspace/.env" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "approval", approval: { outcome: "timed_out" } });
    expect(g.asked.map((r) => r.trigger)).toEqual(["on_flag"]);
  });

  it("on_uncertain: asks when a judge's score is within approval_margin of its min_score (either side), not when it is clear", async () => {
    const ask = (score: number, margin?: number) =>
      gateWith([{ name: "fs.write", approval: "on_uncertain", ...(margin !== undefined ? { approval_margin: margin } : {}) }], {
        judges: true,
        score,
        answer: { name: "a", outcome: "denied", decidedBy: "bob", reason: "too close" },
      });
    const clear = ask(0.95);
    expect((await clear.decide(proposal("fs.write", { path: "/workspace/a" }))).allowed).toBe(true);
    expect(clear.asked).toHaveLength(0);
    const narrowPass = ask(0.75);
    const d = await narrowPass.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "approval", reason: "denied by bob: too close" });
    expect(narrowPass.asked[0]?.trigger).toBe("on_uncertain");
    expect(narrowPass.asked[0]?.findings).toBe("judge sec's score 0.75 is within 0.10 of its min_score 0.70");
    // A narrow rejection goes to the person too (who may overturn it); a clear one does not.
    const narrowReject = ask(0.65);
    await narrowReject.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(narrowReject.asked).toHaveLength(1);
    const clearReject = ask(0.2);
    expect((await clearReject.decide(proposal("fs.write", { path: "/workspace/a" }))).blocked_by).toBe("judge");
    expect(clearReject.asked).toHaveLength(0);
    const wider = ask(0.95, 0.3);
    await wider.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(wider.asked).toHaveLength(1);
  });

  it("on_uncertain: judges whose agreement is below min_agreement_confidence", () => {
    const v = (judge: string, score: number) => ({ judge, child: "", passed: true, result: { score, confidence: 1, reasoning: "" } });
    expect(judgeUncertainty([v("a", 0.95), v("b", 0.9)], [0.7, 0.7], { margin: 0.1, minAgreement: 0.8 })).toBeUndefined();
    expect(judgeUncertainty([v("a", 1), v("b", 0.71)], [0.5, 0.5], { margin: 0.1, minAgreement: 0.8 })).toBe(
      "the judges' agreement 0.71 is below min_agreement_confidence 0.80",
    );
    // Without min_agreement_confidence only the margin counts.
    expect(judgeUncertainty([v("a", 1), v("b", 0.71)], [0.5, 0.5], { margin: 0.1 })).toBeUndefined();
  });

  it("withdrawn (the run ended while the call waited): denied with why, never told as a person's denial or a timeout", async () => {
    const g = gateWith([{ name: "fs.write", approval: "always" }], {
      answer: { name: "a-4", outcome: "withdrawn", reason: "the run ended (Cancelled)" },
    });
    const d = await g.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "approval", approval: { outcome: "withdrawn" } });
    expect(d.reason).toBe("approval withdrawn: the run ended (Cancelled) while ToolApproval a-4 waited for a person");
    expect(d.approval?.failIteration).toBeUndefined();
  });

  it("without an approver (local mode) a call that needs a person is denied, fail closed", async () => {
    const g = gateWith([{ name: "fs.write", approval: "always" }]);
    const d = await g.decide(proposal("fs.write", { path: "/workspace/a" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "approval" });
    expect(d.reason).toContain("cannot ask a person");
  });
});

describe("call digest", () => {
  it("changes with any argument, the step or the tool's code; the arguments shown are cut, not the digest's", () => {
    const p = { ...proposal("fs.write", { path: "/workspace/a", content: "one" }), step: 1 };
    const base = callDigest(p);
    expect(base).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(callDigest({ ...p })).toBe(base);
    expect(callDigest({ ...p, args: { path: "/workspace/a", content: "two" } })).not.toBe(base);
    expect(callDigest({ ...p, step: 2 })).not.toBe(base);
    expect(callDigest({ ...p, toolHash: "ab".repeat(32) })).not.toBe(base);
    // The same call later in the run (another iteration or step) has the same repeatDigest: what --for-execution covers.
    const again = repeatDigest(p);
    expect(repeatDigest({ ...p, step: 7, iteration: 2, toolCallId: "other" })).toBe(again);
    expect(repeatDigest({ ...p, args: { path: "/workspace/a", content: "two" } })).not.toBe(again);
    expect(repeatDigest({ ...p, execution: "ex-2" })).not.toBe(again);
    expect(repeatDigest({ ...p, toolHash: "ab".repeat(32) })).not.toBe(again);
    const long = "x".repeat(5000);
    expect(shownArguments({ a: [long], b: { c: long }, n: 1 })).toEqual({
      a: [`${"x".repeat(1021)}...`],
      b: { c: `${"x".repeat(1021)}...` },
      n: 1,
    });
  });
});
