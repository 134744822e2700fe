// The gate's decision chain with a judge runner that is a plain function: guard first,
// skip_judge, judges in order with tool_validation thresholds, policy_violations, idempotency.
import { createHash, generateKeyPairSync } from "node:crypto";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, GradientResult, JsonObject, SemanticValidatorSpec } from "../api/types.js";
import { createLogger } from "../telemetry/logger.js";
import { formatTraceparent } from "../telemetry/trace-context.js";
import { recordingTracing } from "../telemetry/tracing.js";
import { decisionEvent, eventAudit, guardNotes, jsonLinesAudit } from "./audit.js";
import { createGate, type Gate, type IterationContext, type JudgeRunner, type JudgeRunResult } from "./gate.js";
import { PolicyStore } from "./guard/policy-store.js";
import { signRegistration } from "./guard/signature.js";

const verdict = (score: number, confidence = 1, reasoning = "ok"): GradientResult => ({ score, confidence, reasoning });

function agentWith(
  toolValidation: SemanticValidatorSpec[],
  tools: Agent["spec"]["tools"] = ["fs.read", "fs.write", "cmd.run", "fs.delete"],
): Pick<Agent, "spec"> {
  return { spec: { tools, execution: { tool_validation: toolValidation } } };
}
let seq = 0;
function proposal(tool: string, args: JsonObject, extra: Partial<ToolCallProposal> = {}): ToolCallProposal {
  seq++;
  return { namespace: "team-a", execution: "ex-1", iteration: 1, step: seq, toolCallId: `call-${seq}`, tool, args, ...extra };
}
/** A judge runner that answers from a table by judge name and records its calls. */
function scripted(answers: Record<string, JudgeRunResult | ((p: ToolCallProposal) => JudgeRunResult)>) {
  const calls: { judge: string; tool: string; violations: readonly string[]; index: number }[] = [];
  const run: JudgeRunner = (entry, p, violations, index) => {
    calls.push({ judge: entry.judge_agent, tool: p.tool, violations, index });
    const a = answers[entry.judge_agent];
    if (a === undefined) return Promise.reject(new Error(`no answer for ${entry.judge_agent}`));
    return Promise.resolve(typeof a === "function" ? a(p) : a);
  };
  return { run, calls };
}
const sem = (judge: string, extra: Partial<SemanticValidatorSpec> = {}): SemanticValidatorSpec => ({
  type: "semantic",
  judge_agent: judge,
  ...extra,
});

/**
 * What the tool-call service does around a gate, reduced to one process: remembers each
 * iteration's decided calls, runs the judged remainder, audits the decision once.
 */
function served(gate: Gate) {
  const decided = new Map<string, { step: number; tool: string; allowed: boolean; blocked_by: string }[]>();
  const decide = async (p: ToolCallProposal): Promise<ToolCallDecision> => {
    const key = `${p.namespace}/${p.execution}/${p.iteration}`;
    const calls = decided.get(key) ?? [];
    const ctx: IterationContext = {
      iteration: {
        calls: (from, before) => calls.filter((c) => c.step >= from && c.step < before),
        violations: [...new Set(calls.filter((c) => c.blocked_by === "guard").map((c) => c.tool))],
      },
    };
    const outcome = gate.decide(p, ctx);
    const d = "judged" in outcome ? await outcome.judged() : outcome;
    decided.set(key, [...calls, { step: p.step, tool: p.tool, allowed: d.allowed, blocked_by: d.blocked_by }]);
    await gate.record(p, d);
    return d;
  };
  return { decide };
}

describe("gate", () => {
  it("blocks at the guard without asking a judge, and lists the tool in later policy_violations", async () => {
    const j = scripted({ sec: { result: verdict(0.9), child: "ex-1-tv-1" } });
    const gate = served(createGate({ policyStore: new PolicyStore(), agent: agentWith([sem("sec")]), judgeRunner: j.run }));
    const blocked = await gate.decide(proposal("cmd.run", { command: "rm -rf /" }));
    expect(blocked).toMatchObject({ allowed: false, blocked_by: "guard", guard: { check: "destructive_pattern" }, judges: [] });
    expect(j.calls).toEqual([]);
    const ok = await gate.decide(proposal("fs.write", { path: "/workspace/a", content: "x" }));
    expect(ok).toMatchObject({ allowed: true, blocked_by: "none", skippedJudges: false });
    expect(ok.judges).toEqual([{ judge: "sec", child: "ex-1-tv-1", passed: true, result: verdict(0.9) }]);
    expect(j.calls).toEqual([{ judge: "sec", tool: "fs.write", violations: ["cmd.run"], index: 0 }]);
    // another iteration starts with no violations
    await gate.decide(proposal("fs.write", { path: "/workspace/b" }, { iteration: 2 }));
    expect(j.calls[1]?.violations).toEqual([]);
  });

  it("skips the judges for skip_judge tools but still runs the guard", async () => {
    const j = scripted({ sec: { result: verdict(0.9), child: "c" } });
    const gate = served(createGate({ policyStore: new PolicyStore(), agent: agentWith([sem("sec")]), judgeRunner: j.run }));
    expect(await gate.decide(proposal("fs.read", { path: "/workspace/a" }))).toMatchObject({
      allowed: true,
      skippedJudges: true,
      judges: [],
    });
    expect(await gate.decide(proposal("fs.read", { path: "~/.ssh/id_rsa" }))).toMatchObject({ allowed: false, blocked_by: "guard" });
    expect(j.calls).toEqual([]);
  });

  it("judges a tool whose Agent says skip_judge: true unless a GuardPolicy lets it skip (hot-reloaded)", async () => {
    const j = scripted({ sec: { result: verdict(0.9), child: "c" } });
    const store = new PolicyStore();
    const gate = served(
      createGate({ policyStore: store, agent: agentWith([sem("sec")], [{ name: "cmd.run", skip_judge: true }]), judgeRunner: j.run }),
    );
    expect(await gate.decide(proposal("cmd.run", { command: "make" }))).toMatchObject({
      allowed: true,
      skippedJudges: false,
      judges: [{ judge: "sec" }],
    });
    store.update([{ name: "default", namespace: "gavel-system", spec: { skip_judge: { "cmd.run": true } } }]);
    expect(await gate.decide(proposal("cmd.run", { command: "make" }))).toMatchObject({ allowed: true, skippedJudges: true, judges: [] });
    expect(j.calls).toHaveLength(1);
  });

  it("applies tool_validation thresholds: default min_score 0.7, min_confidence 0.0, explicit values win", async () => {
    const decideWith = async (entry: SemanticValidatorSpec, r: GradientResult) => {
      const gate = served(
        createGate({
          policyStore: new PolicyStore(),
          agent: agentWith([entry]),
          judgeRunner: scripted({ sec: { result: r, child: "c" } }).run,
        }),
      );
      return gate.decide(proposal("fs.write", { path: "/workspace/a" }));
    };
    expect((await decideWith(sem("sec"), verdict(0.7, 0))).allowed).toBe(true);
    const low = await decideWith(sem("sec"), verdict(0.69, 1, "too broad"));
    expect(low).toMatchObject({ allowed: false, blocked_by: "judge" });
    expect(low.reason).toBe("judge sec: score 0.69 is below min_score 0.70. too broad");
    expect((await decideWith(sem("sec", { min_score: 0.9 }), verdict(0.85))).allowed).toBe(false);
    expect((await decideWith(sem("sec", { min_confidence: 0.5 }), verdict(0.95, 0.4))).reason).toMatch(
      /confidence 0.40 is below min_confidence 0.50/,
    );
  });

  it("runs judges in order and the first rejection blocks; rejections and thrown errors block", async () => {
    const j = scripted({
      a: { result: verdict(0.8), child: "ca" },
      b: { rejection: "timed_out", detail: "no verdict within 300s", child: "cb" },
      c: { result: verdict(1), child: "cc" },
    });
    const gate = served(
      createGate({ policyStore: new PolicyStore(), agent: agentWith([sem("a"), sem("b"), sem("c")]), judgeRunner: j.run }),
    );
    const d = await gate.decide(proposal("cmd.run", { command: "npm test" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "judge", reason: "judge b: rejected (timed_out): no verdict within 300s" });
    expect(d.judges.map((x) => [x.judge, x.passed, x.rejection])).toEqual([
      ["a", true, undefined],
      ["b", false, "timed_out"],
    ]);
    expect(j.calls.map((c) => c.judge)).toEqual(["a", "b"]);
    const broken = served(createGate({ policyStore: new PolicyStore(), agent: agentWith([sem("missing")]), judgeRunner: j.run }));
    expect(await broken.decide(proposal("cmd.run", { command: "ls" }))).toMatchObject({
      allowed: false,
      blocked_by: "judge",
      judges: [{ rejection: "failed" }],
    });
  });

  it("answers at once from the guard, and leaves judging to whoever runs the judged remainder (the claimant)", async () => {
    let runs = 0;
    const gate = createGate({
      policyStore: new PolicyStore(),
      agent: agentWith([sem("slow")]),
      judgeRunner: () => {
        runs++;
        return Promise.resolve({ result: verdict(0.9), child: "c1" });
      },
    });
    const empty: IterationContext = { iteration: { calls: () => [], violations: [] } };
    const denied = gate.decide(proposal("cmd.run", { command: "rm -rf /" }), empty);
    expect(denied).toMatchObject({ allowed: false, blocked_by: "guard" });
    const judged = gate.decide(proposal("cmd.run", { command: "make" }), empty);
    expect("judged" in judged).toBe(true);
    expect(runs).toBe(0);
    if (!("judged" in judged)) return;
    expect(await judged.judged()).toMatchObject({ allowed: true, judges: [{ child: "c1", passed: true }] });
    expect(runs).toBe(1);
  });

  it("check 2 compares a registered tool's hash with the one its proposal carries (the worker's live code)", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const registered = createHash("sha256").update("fs.write v1").digest("hex");
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: {
          tool_registry: [
            {
              tool: "fs.write",
              sha256: registered,
              signature: signRegistration(privateKey.export({ type: "pkcs8", format: "pem" }).toString(), "fs.write", registered),
            },
          ],
          trusted_keys: [{ name: "ops", public_key: publicKey.export({ type: "spki", format: "pem" }).toString() }],
        },
      },
    ]);
    const gate = served(createGate({ policyStore: store, agent: agentWith([]), judgeRunner: scripted({}).run }));
    const write = { path: "/workspace/a", content: "x" };
    expect(await gate.decide(proposal("fs.write", write, { toolHash: registered }))).toMatchObject({ allowed: true });
    expect(
      await gate.decide(proposal("fs.write", write, { toolHash: createHash("sha256").update("fs.write v2").digest("hex") })),
    ).toMatchObject({
      allowed: false,
      blocked_by: "guard",
      guard: { check: "hash" },
      reason: "hash_mismatch: fs.write",
    });
    expect((await gate.decide(proposal("fs.write", write))).reason).toBe("hash_mismatch: fs.write (no live hash of its code)");
    // A tool not in tool_registry is not hash-checked, with or without a hash.
    expect(await gate.decide(proposal("fs.read", { path: "/workspace/a" }, { toolHash: "0".repeat(64) }))).toMatchObject({ allowed: true });
    expect(await gate.decide(proposal("fs.read", { path: "/workspace/a" }))).toMatchObject({ allowed: true });
  });

  it("feeds allowed calls into the sequence-contract history of the iteration", async () => {
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: { sequence_contracts: [{ name: "read_before_delete", requires_prior: "fs.read", triggers_for: "fs.delete" }] },
      },
    ]);
    const gate = served(createGate({ policyStore: store, agent: agentWith([]), judgeRunner: scripted({}).run }));
    expect((await gate.decide(proposal("fs.delete", { path: "/workspace/a" }))).reason).toBe("sequence_contract: read_before_delete");
    await gate.decide(proposal("fs.read", { path: "/workspace/a" }));
    expect((await gate.decide(proposal("fs.delete", { path: "/workspace/a" }))).allowed).toBe(true);
  });

  it("publishes each decision as a toolcall.decision event without values; a failing sink never changes a decision", async () => {
    const events: { type: string; execution: string; data: Record<string, unknown> }[] = [];
    const gate = served(
      createGate({
        policyStore: new PolicyStore(),
        agent: agentWith([]),
        judgeRunner: scripted({}).run,
        audit: eventAudit((type, execution, data) => {
          events.push({ type, execution, data });
          return Promise.resolve();
        }),
      }),
    );
    await gate.decide(proposal("fs.read", { path: "/workspace/top-secret-plan.txt" }));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: "toolcall.decision",
      execution: "ex-1",
      data: { tool: "fs.read", arg_keys: ["path"], allowed: true },
    });
    expect(JSON.stringify(events)).not.toContain("top-secret-plan");
    const broken = served(
      createGate({
        policyStore: new PolicyStore(),
        agent: agentWith([]),
        judgeRunner: scripted({}).run,
        audit: { record: () => Promise.reject(new Error("disk full")) },
      }),
    );
    expect(await broken.decide(proposal("fs.read", { path: "/workspace/a" }))).toMatchObject({ allowed: true });
    expect(await broken.decide(proposal("cmd.run", { command: "rm -rf /" }))).toMatchObject({ allowed: false, blocked_by: "guard" });
  });

  it("carries the adaptive rules' flags into the audit line, the decision event and the log (the call allowed); a plain allowed call is not at info", async () => {
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: {
          adaptive_rules: [
            { name: "watch_writes", match_field: "tool", pattern: "^fs\\.write$", action: "flag", reason: "measure writes" },
          ],
        },
      },
    ]);
    const lines: string[] = [];
    const logs: string[] = [];
    const sink = (into: string[]) =>
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          into.push(chunk.toString());
          cb();
        },
      });
    const events: Record<string, unknown>[] = [];
    const gate = served(
      createGate({
        policyStore: store,
        agent: agentWith([]),
        judgeRunner: scripted({}).run,
        audit: {
          record: (r) => {
            void jsonLinesAudit(sink(lines)).record(r);
            events.push(decisionEvent(r));
          },
        },
        logger: createLogger({ destination: sink(logs), level: "info" }),
      }),
    );
    expect(await gate.decide(proposal("fs.write", { path: "/workspace/a", content: "x" }))).toMatchObject({
      allowed: true,
      guard: { flags: ["watch_writes"] },
    });
    await gate.decide(proposal("fs.read", { path: "/workspace/a" }));
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ tool: "fs.write", allowed: true, flags: ["watch_writes"] });
    expect(events[0]).toMatchObject({ tool: "fs.write", allowed: true, flags: ["watch_writes"] });
    expect(events[1]).not.toHaveProperty("flags");
    // The log line names the run, the iteration and the call (issue 12: structured fields), not the arguments.
    const line = JSON.parse(logs.find((l) => l.includes("fs.write")) ?? "{}") as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 30,
      msg: "tool call decided",
      execution: "team-a/ex-1",
      iteration: 1,
      flags: ["watch_writes"],
      arg_keys: ["content", "path"],
    });
    expect(line.toolCallId).toMatch(/^call-\d+$/);
    // A plain allowed call is logged at debug only (counted in gavel_tool_calls_total).
    expect(logs.filter((l) => l.includes("tool call decided")).map((l) => (JSON.parse(l) as { tool: string }).tool)).toEqual(["fs.write"]);
  });

  it("rules in warn and dryrun mode: the call is allowed, the audit and the event say what they would have denied", async () => {
    const store = new PolicyStore("gavel-system", [
      {
        name: "default",
        namespace: "gavel-system",
        spec: {
          adaptive_rules: [
            {
              name: "no_writes",
              match_field: "tool",
              pattern: "^fs\\.write$",
              action: "deny",
              reason: "candidate",
              enforcementAction: "warn",
            },
            {
              name: "no_workspace",
              match_field: "args",
              pattern: "/workspace/",
              action: "deny",
              reason: "measured",
              enforcementAction: "dryrun",
            },
          ],
        },
      },
    ]);
    const events: Record<string, unknown>[] = [];
    const gate = served(
      createGate({
        policyStore: store,
        agent: agentWith([]),
        judgeRunner: scripted({}).run,
        audit: { record: (r) => void events.push(decisionEvent(r)) },
      }),
    );
    expect(await gate.decide(proposal("fs.write", { path: "/workspace/a", content: "x" }))).toMatchObject({
      allowed: true,
      guard: { approved: true, warnings: ["adaptive_rule: no_writes"], dryrun: ["adaptive_rule: no_workspace"] },
    });
    expect(events[0]).toMatchObject({ allowed: true, warnings: ["adaptive_rule: no_writes"], dryrun: ["adaptive_rule: no_workspace"] });
    expect(guardNotes(events[0] ?? {})).toBe(" [warned: adaptive_rule: no_writes]");
  });

  it("keeps a secret argument out of the audit line, the decision's reason and the logs", async () => {
    const secret = "PASSWORD_segreto_9f83c1";
    const lines: string[] = [];
    const sink = (into: string[]) =>
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          into.push(chunk.toString());
          cb();
        },
      });
    const logs: string[] = [];
    const j = scripted({
      sec: (p) => ({
        result: verdict(0.1, 1, `refusing to send ${JSON.stringify((p.args.auth as JsonObject).password)} anywhere`),
        child: "c",
      }),
    });
    const gate = served(
      createGate({
        policyStore: new PolicyStore(),
        agent: agentWith([sem("sec")], ["http.post", "fs.read"]),
        judgeRunner: j.run,
        audit: jsonLinesAudit(sink(lines)),
        logger: createLogger({ destination: sink(logs), level: "debug" }),
      }),
    );
    const judged = await gate.decide(proposal("http.post", { url: "https://example.com", auth: { password: secret, user: "bob" } }));
    const guarded = await gate.decide(proposal("fs.read", { path: `/root/.ssh/${secret}` }));
    expect(judged).toMatchObject({ allowed: false, blocked_by: "judge" });
    expect(guarded).toMatchObject({ allowed: false, blocked_by: "guard" });
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0] ?? "{}") as { arg_keys: string[]; tool: string };
    expect(first).toMatchObject({ tool: "http.post", arg_keys: ["auth", "auth.password", "auth.user", "url"] });
    for (const text of [...lines, ...logs, judged.reason, guarded.reason, JSON.stringify(guarded.guard)])
      expect(text).not.toContain(secret);
    expect(logs.length).toBeGreaterThan(0);
    expect(judged.reason).toContain("[arg value]");
  });

  it("traces each decided call as execute_tool under the proposal's traceparent, each judge as invoke_agent; never an argument value", async () => {
    const secret = "PASSWORD_segreto_trace_51";
    const tracing = recordingTracing();
    const j = scripted({
      sec: (p) => ({
        result: verdict(0.9, 1, `fine to send ${JSON.stringify((p.args.auth as JsonObject).password)}`),
        child: "ex-1-tv-sec",
      }),
    });
    const gate = createGate({
      policyStore: new PolicyStore(),
      agent: agentWith([sem("sec")], ["http.post", "cmd.run"]),
      judgeRunner: j.run,
      tracing,
    });
    const parent = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true };
    const ctx: IterationContext = { iteration: { calls: () => [], violations: [] }, traceParent: formatTraceparent(parent) };
    const judged = gate.decide(proposal("http.post", { url: "https://example.com", auth: { password: secret } }), ctx);
    expect("judged" in judged && (await judged.judged())).toMatchObject({ allowed: true });
    expect(gate.decide(proposal("cmd.run", { command: `rm -rf / ${secret}` }), ctx)).toMatchObject({ allowed: false, blocked_by: "guard" });
    const [post, judge, cmd] = tracing.spans;
    expect(post).toMatchObject({
      name: "execute_tool http.post",
      parent,
      ended: true,
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "http.post",
        "gen_ai.tool.type": "function",
        "gavel.guard.decision": "allowed",
        "gavel.guard.decided_by": "judge",
        "gavel.guard.check": "none",
        "gavel.tool.arg_keys": ["auth", "auth.password", "url"],
      },
    });
    expect(judge).toMatchObject({
      name: "invoke_agent sec",
      parent: post?.ref,
      ended: true,
      attributes: { "gen_ai.agent.name": "sec", "gavel.judge.child": "ex-1-tv-sec", "gavel.score": 0.9 },
    });
    expect(post?.events).toEqual([
      {
        name: "gen_ai.evaluation.result",
        attributes: { "gen_ai.evaluation.name": "sec", "gen_ai.evaluation.score.value": 0.9, "gen_ai.evaluation.score.label": "pass" },
      },
    ]);
    expect(cmd).toMatchObject({
      name: "execute_tool cmd.run",
      parent,
      ended: true,
      attributes: { "gavel.guard.decision": "blocked", "gavel.guard.decided_by": "guard", "gavel.guard.check": "destructive_pattern" },
    });
    expect(JSON.stringify(tracing.spans)).not.toContain(secret);
  });
});
