// The tree describe and the web view draw, from an Execution, its children and its Agent:
// validators against their thresholds, pending ones of a running iteration, judge verdicts
// and rejections, tool-call judges; never spec.input. And describe's text of that tree.
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { agent, children, execution, parent, ref, SECRET } from "../../test/fixtures/execution-tree.js";
import { judgeOutputs, rawTail, renderExecution } from "./describe.js";
import { buildExecutionView, decidedBy, mcpToolOf, treeOrder } from "../views/execution-view.js";

describe("buildExecutionView", () => {
  const view = buildExecutionView(parent, children, agent);

  it("Given a finished iteration, shows each validator's score and confidence against the Agent's thresholds, and its judges' verdicts", () => {
    const [first] = view.iterations;
    expect(first?.validators.map((v) => [v.index, v.state, v.score, v.minScore, v.minConfidence])).toEqual([
      [0, "passed", 1, 1, 0],
      [1, "failed", 0.4, 0.8, 0.5],
    ]);
    expect(first?.validators[1]?.judges).toEqual([
      expect.objectContaining({
        name: "run-i1-v1-checker",
        judge: "checker",
        phase: "Succeeded",
        score: 0.4,
        confidence: 0.9,
        reasoning: "sum subtracts",
        minScore: 0.8,
      }),
    ]);
  });

  it("Given the iteration being validated, lists the validator running and those still to come with their thresholds", () => {
    const second = view.iterations[1];
    expect(second?.feedback).toBe("sum subtracts");
    expect(second?.validators.map((v) => [v.index, v.type, v.state, v.minScore])).toEqual([
      [0, "exit_code", "passed", 1],
      [1, "semantic", "running", 0.8],
      [2, "regex", "pending", 1],
    ]);
    expect(second?.validators[1]?.judges.map((j) => [j.name, j.phase])).toEqual([["run-i2-v1-checker", "Running"]]);
  });

  it("groups tool_validation judges by tool call, with the rejection and why, and the entry's default threshold 0.7", () => {
    expect(view.iterations[1]?.toolCalls).toEqual([
      {
        id: "call-abc",
        judges: [
          expect.objectContaining({
            judge: "gatekeeper",
            phase: "Failed",
            rejection: "malformed_output",
            message: "no JSON object in the output",
            minScore: 0.7,
          }),
        ],
      },
    ]);
  });

  it("Given the status's tool calls, lists every decided call in step order with its outcome, check and reason, its judges under it", () => {
    const withCalls = structuredClone(parent);
    const second = withCalls.status?.iterations?.[1];
    if (second === undefined) throw new Error("fixture");
    second.toolCalls = {
      proposed: 3,
      allowed: 1,
      blockedByGuard: 1,
      blockedByJudge: 1,
      recent: [
        {
          step: 1,
          tool: "cmd.run",
          toolCallId: "call-rm",
          allowed: false,
          blockedBy: "guard",
          check: "destructive_pattern",
          reason: "destructive_pattern: rm -rf",
        },
        { step: 2, tool: "fs.list", toolCallId: "call-ls", allowed: true, blockedBy: "none" },
        {
          step: 3,
          tool: "fs.write",
          toolCallId: "call-abc",
          allowed: false,
          blockedBy: "judge",
          reason: "gatekeeper: malformed_output",
          judges: ["run-t-abc-gatekeeper"],
        },
      ],
    };
    const v = buildExecutionView(withCalls, children, agent);
    expect(v.iterations[1]?.toolCallCounts).toEqual({ proposed: 3, allowed: 1, blockedByGuard: 1, blockedByJudge: 1 });
    expect(v.iterations[1]?.toolCalls.map((c) => [c.step, c.tool, c.outcome, c.check, c.judges.length])).toEqual([
      [1, "cmd.run", "blocked by guard", "destructive_pattern", 0],
      [2, "fs.list", "allowed", undefined, 0],
      [3, "fs.write", "blocked by judge", undefined, 1],
    ]);
    const out = renderExecution(v, new Map(), [], Date.parse("2026-01-01T00:05:00Z"));
    expect(out).toContain("Tool calls: 3 proposed, 1 allowed, 1 blocked by the guard, 1 by judges");
    expect(out).toMatch(/step 1 {2}cmd\.run {2}blocked by guard \(destructive_pattern\) {2}call-rm\n\s+Why:\s+destructive_pattern: rm -rf/);
    expect(out).toMatch(/step 3 {2}fs\.write {2}blocked by judge {2}call-abc {2}judged by:/);
  });

  it("Given MCP calls, shows each one's server and tool, and for every decided call who decided", () => {
    const withCalls = structuredClone(parent);
    const second = withCalls.status?.iterations?.[1];
    if (second === undefined) throw new Error("fixture");
    second.toolCalls = {
      proposed: 3,
      allowed: 2,
      blockedByGuard: 1,
      blockedByJudge: 0,
      recent: [
        {
          step: 1,
          tool: "files.read_text_file",
          server: "files",
          toolCallId: "call-env",
          allowed: false,
          blockedBy: "guard",
          check: "destructive_pattern",
          reason: "secrets: reads files: a secret file [path]",
        },
        {
          step: 2,
          tool: "files.write_file",
          server: "files",
          toolCallId: "call-abc",
          allowed: true,
          blockedBy: "none",
          judges: ["run-t-abc-gatekeeper"],
        },
        { step: 3, tool: "fs.list", toolCallId: "call-ls", allowed: true, blockedBy: "none" },
      ],
    };
    const v = buildExecutionView(withCalls, children, agent);
    expect(v.iterations[1]?.toolCalls.map((c) => [c.step, c.server, c.tool, decidedBy(c)])).toEqual([
      [1, "files", "files.read_text_file", "guard: destructive_pattern"],
      [2, "files", "files.write_file", "judges"],
      [3, undefined, "fs.list", "guard"],
    ]);
    expect(mcpToolOf({ tool: "files.read_text_file", server: "files" })).toEqual({ server: "files", tool: "read_text_file" });
    expect(mcpToolOf({ tool: "fs.list" })).toBeUndefined();
    const out = renderExecution(v, new Map(), [], Date.parse("2026-01-01T00:05:00Z"));
    expect(out).toMatch(
      /step 1 {2}files\.read_text_file {2}blocked by guard \(destructive_pattern\) {2}call-env\n\s+Why:\s+secrets: reads files: a secret file \[path\]\n\s+MCP server:\s+files\n\s+MCP tool:\s+read_text_file\n\s+Decided by:\s+guard: destructive_pattern\n/,
    );
    expect(out).toMatch(
      /step 2 {2}files\.write_file {2}allowed {2}call-abc {2}judged by:\n\s+MCP server:\s+files\n\s+MCP tool:\s+write_file\n\s+Decided by:\s+judges\n/,
    );
    expect(out).toMatch(/step 3 {2}fs\.list {2}allowed {2}call-ls\n\s+Decided by:\s+guard\n/);
    expect(out).not.toMatch(/call-ls\n\s+MCP server/);
  });

  it("never carries spec.input (a judge's input holds the judged call's arguments)", () => {
    expect(JSON.stringify(view)).not.toContain(SECRET);
    expect(JSON.stringify(buildExecutionView(children[0] as Execution, [], undefined))).not.toContain(SECRET);
  });

  it("Given the Agent is gone, shows what the status holds and says thresholds are unknown", () => {
    const v = buildExecutionView(parent, children, undefined);
    expect(v.agentFound).toBe(false);
    expect(v.iterations[1]?.validators.map((x) => x.index)).toEqual([0]);
    expect(v.iterations[0]?.validators[1]?.minScore).toBeUndefined();
  });

  it("shows a child the parent's status does not name yet", () => {
    const late = execution("run-i2-v1-late", { phase: "Running" }, ref(2, 1), "checker");
    const v = buildExecutionView(parent, [...children, late], agent);
    expect(v.iterations[1]?.validators[1]?.judges.map((j) => j.name)).toEqual(["run-i2-v1-checker", "run-i2-v1-late"]);
  });

  it("shows a judge child's own verdict and whom it judges", () => {
    const v = buildExecutionView(children[0] as Execution, [], undefined);
    expect(v.parent).toEqual({ name: "run", purpose: "validation", iteration: 1, validatorIndex: 1 });
    expect(v.verdict).toEqual({ score: 0.4, confidence: 0.9, reasoning: "sum subtracts" });
  });
});

describe("treeOrder", () => {
  it("puts each judge child under its parent, by iteration and validator, and orphans at the top", () => {
    const orphan = execution("zz-orphan", undefined, { name: "gone", uid: "x", purpose: "validation", iteration: 1, validatorIndex: 0 });
    const order = treeOrder([children[2], orphan, children[1], parent, children[3], children[0]] as Execution[]);
    expect(order.map((x) => `${x.depth}:${x.ex.metadata.name}`)).toEqual([
      "0:other",
      "0:run",
      "1:run-i1-v1-checker",
      "1:run-t-abc-gatekeeper",
      "1:run-i2-v1-checker",
      "0:zz-orphan",
    ]);
  });
});

describe("renderExecution (gavel describe)", () => {
  const now = Date.parse("2026-01-01T00:05:00Z");
  const raw = new Map<string, string | undefined>([
    ["run-i1-v1-checker", 'thinking...\n{"score":0.4,"confidence":0.9,"reasoning":"sum subtracts"}\n'],
    ["run-i2-v1-checker", undefined],
  ]);
  const events = [
    {
      metadata: { name: "run.1" },
      involvedObject: { name: "run" },
      type: "Warning",
      reason: "ValidatorResult",
      message: '{"iteration":1,"index":1,"passed":false}',
      lastTimestamp: new Date("2026-01-01T00:01:00Z"),
      source: { component: "gavel-controller" },
    },
  ];
  const text = renderExecution(buildExecutionView(parent, children, agent), raw, events, now);

  it("shows each validator against its thresholds, each judge's verdict or rejection, and the end of its raw output", () => {
    expect(text).toMatch(/^Phase:\s+Running$/m);
    expect(text).toMatch(/^Iteration:\s+2 of at most 3$/m);
    expect(text).toContain("1  semantic  failed  score 0.40 <  0.80  confidence 0.90 >= 0.50");
    expect(text).toContain("checker  run-i1-v1-checker  Succeeded  score 0.40 <  0.80  confidence 0.90");
    expect(text).toContain('{"score":0.4,"confidence":0.9,"reasoning":"sum subtracts"}');
    expect(text).toContain("2  regex  pending  (min_score 1.00, min_confidence 0.00)");
    expect(text).toMatch(/gatekeeper  run-t-abc-gatekeeper  Failed  rejected: malformed_output\n\s+Why:\s+no JSON object in the output/);
    expect(text).toContain("call-abc  judged by:");
    expect(text).toMatch(/Warning\s+ValidatorResult\s+4m\s+gavel-controller/);
    expect(text).not.toContain(SECRET);
  });

  it("Given a judge whose pod log merged stderr into stdout, says why under the judge and in the child's own describe", () => {
    const why =
      "stderr is merged into stdout: gavel does not know the program of image example/judge:1 (no spec.runtime.command, no command in its runtime table entry, not an image gavel builds), so its pod ran it without gavel-launch; declare spec.runtime.command to keep them apart";
    const merged = structuredClone(children);
    const judge = merged[0] as Execution;
    if (judge.status === undefined) throw new Error("fixture");
    judge.status.rawOutput = {
      stdout: 'warning: on stderr\n{"score":0.4,"confidence":0.9,"reasoning":"sum subtracts"}\n',
      stderr: "",
      exitCode: 0,
      stdoutBytes: 78,
      truncated: false,
      streamsMerged: why,
    };
    const v = buildExecutionView(parent, merged, agent);
    expect(v.iterations[0]?.validators[1]?.judges[0]?.streamsMerged).toBe(why);
    expect(v.iterations[1]?.validators[1]?.judges[0]?.streamsMerged).toBeUndefined();
    // No pod and no stored result: the tails the status keeps are shown, then why they are merged.
    const out = renderExecution(v, judgeOutputs(merged, new Map()), [], now);
    expect(out).toMatch(
      /checker {2}run-i1-v1-checker {2}Succeeded .*\n\s+Reasoning:\s+sum subtracts\n\s+Raw output:\n\s+warning: on stderr\n\s+\{"score":0\.4.*\n\s+Streams:\s+stderr is merged into stdout: gavel does not know the program of image example\/judge:1/,
    );
    expect(out.match(/Streams:/g)).toHaveLength(1);
    const own = renderExecution(buildExecutionView(judge, [], undefined), judgeOutputs([judge], new Map()), [], now);
    expect(own).toMatch(
      /^Raw output:\n {2}warning: on stderr\n.*\n^Streams:\s+stderr is merged into stdout: gavel does not know the program of image example\/judge:1/m,
    );
    expect(own).not.toContain(SECRET);
  });

  it("shows a judge's pod log or stored result first, the status's tails only when neither is there, and <not kept> without any", () => {
    const kept = structuredClone(children);
    const judge = kept[0] as Execution;
    if (judge.status === undefined) throw new Error("fixture");
    judge.status.rawOutput = { stdout: "from the status\n", stderr: "", exitCode: 0, stdoutBytes: 16, truncated: false };
    expect(judgeOutputs(kept, new Map([["run-i1-v1-checker", "from the pod\n"]])).get("run-i1-v1-checker")).toBe("from the pod\n");
    expect(judgeOutputs(kept, new Map()).get("run-i1-v1-checker")).toBe("from the status\n");
    const none = judgeOutputs(children, new Map());
    expect(none.get("run-i1-v1-checker")).toBeUndefined();
    expect(renderExecution(buildExecutionView(parent, children, agent), none, [], now)).toMatch(
      /run-i1-v1-checker .*\n.*\n\s+Raw output: <not kept>/,
    );
  });

  it("keeps the end of a long raw output, where the verdict is", () => {
    const long = `${"x".repeat(2000)}\nverdict line`;
    const tail = rawTail(long);
    expect(tail).toMatch(/^… \(\d+ more characters before\)/);
    expect(tail.endsWith("verdict line")).toBe(true);
    expect(tail.length).toBeLessThan(700);
  });
});
