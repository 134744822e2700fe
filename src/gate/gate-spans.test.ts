// The gate's spans as the real OpenTelemetry SDK exports them (OTLP/HTTP JSON to a receiver on
// loopback): built off the call's path (docs/adr/0049), with every name, parent and attribute
// that docs/tracing.md promises, and never an argument value.
import { describe, expect, it } from "vitest";
import { tracingToReceiverPerFile, type ReceivedSpan } from "../../test/harness/otlp-receiver.js";
import type { ToolCallProposal } from "../api/protocol.js";
import { formatTraceparent } from "../telemetry/trace-context.js";
import { createGate, type IterationContext } from "./gate.js";
import { PolicyStore } from "./guard/policy-store.js";

const SECRET = "PASSWORD_segreto_otlp_73";
const PARENT = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true };
const CTX: IterationContext = { iteration: { calls: () => [], violations: [] }, traceParent: formatTraceparent(PARENT) };

const proposal = (step: number, tool: string, args: ToolCallProposal["args"]): ToolCallProposal => ({
  namespace: "team-a",
  execution: "ex-1",
  iteration: 2,
  step,
  toolCallId: `call-${step}`,
  tool,
  args,
});

describe("the gate's spans through the OpenTelemetry SDK", () => {
  const t = tracingToReceiverPerFile();

  const named = (name: string): ReceivedSpan => {
    const s = t.receiver.spans.find((x) => x.name === name);
    if (s === undefined) throw new Error(`no span ${name} among ${t.receiver.spans.map((x) => x.name).join(", ")}`);
    return s;
  };

  it("exports execute_tool per decided call under the proposal's traceparent, invoke_agent per judge, the verdict as an event", async () => {
    const gate = createGate({
      policyStore: new PolicyStore(),
      agent: {
        spec: {
          tools: ["fs.read", "http.post", "cmd.run"],
          execution: { tool_validation: [{ type: "semantic", judge_agent: "sec", min_score: 0.5 }] },
        },
      },
      judgeRunner: () =>
        Promise.resolve({ result: { score: 0.9, confidence: 1, reasoning: `fine to send ${SECRET}` }, child: "ex-1-tv-sec" }),
      tracing: t.tracing,
    });
    const read = gate.decide(proposal(1, "fs.read", { path: `/workspace/${SECRET}.txt`, options: { limit: 10 } }), CTX);
    expect(read).toMatchObject({ allowed: true, skippedJudges: true });
    const blocked = gate.decide(proposal(2, "cmd.run", { command: `rm -rf / ${SECRET}` }), CTX);
    expect(blocked).toMatchObject({ allowed: false, blocked_by: "guard" });
    const judged = gate.decide(proposal(3, "http.post", { url: "https://example.com", auth: { password: SECRET } }), CTX);
    expect("judged" in judged && (await judged.judged())).toMatchObject({ allowed: true });
    await t.tracing.flush();

    const common = { traceId: PARENT.traceId, parentSpanId: PARENT.spanId, kind: 2 };
    const base = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.type": "function",
      "k8s.namespace.name": "team-a",
      "gavel.execution.name": "ex-1",
      "gavel.iteration": 2,
    };
    expect(named("execute_tool fs.read")).toMatchObject({
      ...common,
      attributes: {
        ...base,
        "gen_ai.tool.name": "fs.read",
        "gen_ai.tool.call.id": "call-1",
        "gavel.tool.step": 1,
        "gavel.tool.arg_keys": ["options", "options.limit", "path"],
        "gavel.guard.decision": "allowed",
        "gavel.guard.blocked_by": "none",
        "gavel.guard.decided_by": "guard",
        "gavel.guard.check": "none",
      },
    });
    expect(named("execute_tool cmd.run")).toMatchObject({
      ...common,
      attributes: {
        ...base,
        "gen_ai.tool.call.id": "call-2",
        "gavel.guard.decision": "blocked",
        "gavel.guard.blocked_by": "guard",
        "gavel.guard.decided_by": "guard",
        "gavel.guard.check": "destructive_pattern",
      },
    });
    const post = named("execute_tool http.post");
    expect(post).toMatchObject({
      ...common,
      attributes: {
        ...base,
        "gavel.tool.arg_keys": ["auth", "auth.password", "url"],
        "gavel.guard.decision": "allowed",
        "gavel.guard.decided_by": "judge",
        "gavel.guard.check": "none",
      },
    });
    expect(post.events).toMatchObject([
      {
        name: "gen_ai.evaluation.result",
        attributes: { "gen_ai.evaluation.name": "sec", "gen_ai.evaluation.score.value": 0.9, "gen_ai.evaluation.score.label": "pass" },
      },
    ]);
    const judge = named("invoke_agent sec");
    expect(judge).toMatchObject({
      traceId: PARENT.traceId,
      parentSpanId: post.spanId,
      kind: 1,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "sec",
        "gavel.judge.purpose": "tool_validation",
        "gavel.judge.child": "ex-1-tv-sec",
        "gavel.score": 0.9,
        "gavel.confidence": 1,
      },
    });
    // One clock for every span (src/telemetry/span-clock.ts): the judge's lies within the call's.
    expect(judge.start).toBeGreaterThanOrEqual(post.start);
    expect(post.end).toBeGreaterThanOrEqual(judge.end);
    for (const s of t.receiver.spans) expect(s.end).toBeGreaterThanOrEqual(s.start);
    expect(JSON.stringify(t.receiver.spans, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))).not.toContain(SECRET);
  });
});
