import { describe, expect, it } from "vitest";
import { EventStream } from "../transport/event-stream.js";
import { applyEvent, emptyTree, renderTree } from "./tree.js";

const ev = (type: string, data: Record<string, unknown>) =>
  EventStream.event({ namespace: "local", root: "demo", execution: "demo", type, data });

describe("execution tree", () => {
  it("folds a refine-then-succeed run into iterations, validators, judges and tool calls", () => {
    const t = emptyTree("demo");
    for (const e of [
      ev("execution.started", { agent: "writer" }),
      ev("iteration.started", { iteration: 1 }),
      ev("toolcall.proposed", { iteration: 1, step: 0, tool: "cmd.run" }),
      ev("toolcall.decision", {
        iteration: 1,
        step: 0,
        tool: "cmd.run",
        allowed: false,
        blocked_by: "guard",
        check: "destructive_patterns",
        reason: "destructive_pattern: rm -rf /",
      }),
      ev("toolcall.decision", {
        iteration: 1,
        step: 1,
        tool: "fs.write",
        allowed: true,
        blocked_by: "none",
        flags: ["watch_writes"],
        reason: "approved by the guard",
      }),
      ev("worker.finished", { iteration: 1, exitCode: 0 }),
      ev("validator.started", { iteration: 1, index: 0, type: "json_schema" }),
      ev("validator.result", {
        iteration: 1,
        index: 0,
        passed: false,
        score: 0,
        confidence: 1,
        reasoning: "/status must be equal to one of the allowed values",
      }),
      ev("iteration.finished", { iteration: 1, outcome: "refining" }),
      ev("iteration.started", { iteration: 2, feedback: "json_schema failed: /status" }),
      ev("worker.finished", { iteration: 2, exitCode: 0 }),
      ev("validator.started", { iteration: 2, index: 0, type: "semantic" }),
      ev("judge.spawned", { iteration: 2, index: 0, judge: "rule-judge", child: "demo-i2-v0-rule-judge", purpose: "validation" }),
      ev("judge.finished", { child: "demo-i2-v0-rule-judge", score: 0.9, confidence: 1 }),
      ev("validator.result", { iteration: 2, index: 0, passed: true, score: 0.9, confidence: 1, reasoning: "ok" }),
      ev("iteration.finished", { iteration: 2, outcome: "passed" }),
      ev("execution.phase", { phase: "Succeeded", score: 0.9 }),
    ])
      applyEvent(t, e);

    expect(t.phase).toBe("Succeeded");
    expect(t.iterations.map((i) => i.state)).toEqual(["refining", "passed"]);
    expect(t.iterations[0]?.toolCalls[0]).toMatchObject({ allowed: false, blockedBy: "guard", check: "destructive_patterns" });
    expect(t.iterations[1]?.validators[0]?.judges[0]).toMatchObject({ state: "done", score: 0.9 });

    const text = renderTree(t).join("\n");
    expect(text).toContain("✓ execution demo (agent writer)  Succeeded  score 0.90");
    expect(text).toContain("blocked by guard (destructive_patterns): destructive_pattern: rm -rf /");
    expect(text).toContain("tool call 1 fs.write  allowed [flagged: watch_writes]");
    expect(text).toContain("feedback: json_schema failed: /status");
    expect(text).toContain("✓ judge rule-judge (demo-i2-v0-rule-judge) score 0.90 confidence 1.00");
  });

  it("names an MCP call's server beside its tool (the decision event's mcp), a built-in's not", () => {
    const t = emptyTree("mcp");
    for (const e of [
      ev("iteration.started", { iteration: 1 }),
      ev("toolcall.proposed", { iteration: 1, step: 1, tool: "files.read_text_file" }),
      ev("toolcall.decision", {
        iteration: 1,
        step: 1,
        tool: "files.read_text_file",
        allowed: false,
        blocked_by: "guard",
        check: "destructive_pattern",
        reason: "secrets: reads files: a secret file [path]",
        mcp: { server: "files", tool: "read_text_file", digest: "ab", pinned: true },
      }),
      ev("toolcall.decision", {
        iteration: 1,
        step: 2,
        tool: "fs.read",
        allowed: false,
        blocked_by: "guard",
        check: "destructive_pattern",
        reason: "secrets: reads files: a secret file [path]",
      }),
    ])
      applyEvent(t, e);
    expect(t.iterations[0]?.toolCalls.map((c) => [c.step, c.tool, c.server])).toEqual([
      [1, "files.read_text_file", "files"],
      [2, "fs.read", undefined],
    ]);
    const text = renderTree(t, 0, { width: 200 }).join("\n");
    expect(text).toContain(
      "tool call 1 files.read_text_file (MCP server files)  blocked by guard (destructive_pattern): secrets: reads files",
    );
    expect(text).toContain("tool call 2 fs.read  blocked by guard (destructive_pattern)");
  });

  it("shows a spinner on running nodes and clips long lines", () => {
    const t = emptyTree("x");
    applyEvent(t, ev("iteration.started", { iteration: 1 }));
    applyEvent(t, ev("worker.finished", { iteration: 1, exitCode: 0 }));
    applyEvent(t, ev("validator.started", { iteration: 1, index: 0, type: "regex" }));
    applyEvent(t, ev("validator.result", { iteration: 1, index: 0, passed: false, score: 0, confidence: 1, reasoning: "y".repeat(500) }));
    const lines = renderTree(t, 3, { width: 80 });
    expect(lines[0]?.startsWith("⠸ execution x")).toBe(true);
    expect(lines.every((l) => l.length <= 80)).toBe(true);
  });
});
