// One shape for every denial a worker is told (guard, judge, person), and what the gate offers
// instead when it knows: the Agent's tools, its volumes' paths, a tool's command allowlist.
import { describe, expect, it } from "vitest";
import type { ToolCallDecision } from "../api/protocol.js";
import type { Agent } from "../api/types.js";
import { createGate } from "./gate.js";
import { agentScope } from "./guard/context.js";
import { PolicyStore } from "./guard/policy-store.js";
import { guardAlternatives, refusalOf, refusalText } from "./refusal.js";

const agent: Pick<Agent, "spec"> = {
  spec: {
    tools: ["fs.read", "fs.write", { name: "cmd.run", allowlist: ["npm test", "ls"] }],
    volumes: [
      { name: "workspace", mount_path: "/workspace", size: "16Mi" },
      { name: "cache", mount_path: "/cache/", size: "16Mi" },
    ],
  },
} as Pick<Agent, "spec">;
const gate = createGate({ policyStore: new PolicyStore(), agent, judgeRunner: () => Promise.reject(new Error("no judges here")) });
let step = 0;
const decide = (tool: string, args: Record<string, string>): ToolCallDecision => {
  const out = gate.decide(
    { namespace: "t", execution: "ex", iteration: 1, step: ++step, toolCallId: `c-${step}`, tool, args },
    { iteration: { calls: () => [], violations: [] } },
  );
  if ("judged" in out) throw new Error("expected a guard decision");
  return out;
};

describe("refusals the model can act on", () => {
  it("a tool outside spec.tools: the guard's capability check, and the tools the Agent may call instead", () => {
    const d = decide("http.get", { url: "https://example.com" });
    const r = refusalOf("http.get", d);
    expect(r).toMatchObject({
      denied: true,
      tool: "http.get",
      blocked_by: "guard",
      by: "guard:capability",
      check: "capability",
      instead: { tools: ["fs.read", "fs.write", "cmd.run"] },
    });
    expect(refusalText(r)).toBe(
      [
        "Tool call denied by the guard (capability check): capability_boundary: missing tool:http.get",
        "Allowed instead: the tools fs.read, fs.write, cmd.run.",
        "The call was not executed.",
      ].join("\n"),
    );
  });

  it("a file tool's path outside every volume: the volumes' paths; a secret inside the workspace: nothing to offer", () => {
    const outside = refusalOf("fs.read", decide("fs.read", { path: "/etc/shadow" }));
    expect(outside).toMatchObject({ blocked_by: "guard", check: "destructive_pattern", instead: { paths: ["/workspace", "/cache/"] } });
    expect(refusalText(outside)).toContain("Allowed instead: paths under /workspace, /cache/.");
    const inside = refusalOf("fs.read", decide("fs.read", { path: "/workspace/.env" }));
    expect(inside.check).toBe("destructive_pattern");
    expect(inside.instead).toBeUndefined();
    expect(refusalText(inside)).not.toContain("Allowed instead");
  });

  it("a denied command of a tool with an allowlist: the allowlist", () => {
    const r = refusalOf("cmd.run", decide("cmd.run", { command: "rm -rf /" }));
    expect(r).toMatchObject({ check: "destructive_pattern", instead: { commands: ["npm test", "ls"] } });
    expect(refusalText(r)).toContain('Allowed instead: commands starting "npm test", "ls".');
  });

  it("a judge's and a person's denial: who, why, each failed judge's reasoning; nothing offered that is not known", () => {
    const judged: ToolCallDecision = {
      toolCallId: "x",
      allowed: false,
      blocked_by: "judge",
      reason: "judge sec rejected",
      guard: { approved: true },
      skippedJudges: false,
      judges: [
        { judge: "sec", child: "c1", passed: false, result: { score: 0.2, confidence: 0.9, reasoning: "writes outside the task" } },
        { judge: "style", child: "c2", passed: true, result: { score: 0.9, confidence: 0.9, reasoning: "fine" } },
      ],
      latencyMs: 1,
    };
    const j = refusalOf("fs.write", judged);
    expect(j).toEqual({
      denied: true,
      tool: "fs.write",
      blocked_by: "judge",
      by: "judge:sec",
      reason: "judge sec rejected",
      judges: [{ judge: "sec", score: 0.2, confidence: 0.9, reasoning: "writes outside the task" }],
    });
    expect(refusalText(j)).toContain("- judge sec: score 0.2, confidence 0.9: writes outside the task");
    const person = refusalOf("fs.write", {
      ...judged,
      blocked_by: "approval",
      reason: "denied by alice: not today",
      approval: { name: "a", outcome: "denied", decidedBy: "alice", reason: "not today" },
      judges: [],
    });
    expect(person).toMatchObject({ blocked_by: "approval", by: "user:alice" });
    expect(refusalText(person)).toBe("Tool call denied by alice: not today\nThe call was not executed.");
    const late = refusalOf("fs.write", {
      ...judged,
      blocked_by: "approval",
      reason: "approval timed out: ...",
      approval: { name: "a", outcome: "timed_out" },
    });
    expect(late.by).toBe("approval:timed_out");
  });

  it("offers nothing for a call the guard allowed or denied for another check", () => {
    const scope = agentScope(agent);
    expect(guardAlternatives("fs.read", {}, { approved: true }, scope, agent)).toBeUndefined();
    expect(
      guardAlternatives("fs.read", {}, { approved: false, check: "revocation", reason: "tool_revoked: x" }, scope, agent),
    ).toBeUndefined();
  });
});
