// The web view's HTML from the shared ExecutionView: score bars against thresholds, judges with
// score, confidence and reasoning, tool calls with who decided; agent-written text escaped;
// never spec.input. And the request routes and the server-sent event framing.
import { describe, expect, it } from "vitest";
import type { Execution } from "../api/types.js";
import { agent, children, parent, SECRET } from "../../test/fixtures/execution-tree.js";
import { buildExecutionView } from "../views/execution-view.js";
import { decidedBy } from "../views/execution-view.js";
import { esc, paragraph, renderExecutionFragment, renderListFragment, renderPage, scoreBar } from "./html.js";
import { sseEvent } from "./live-stream.js";
import { routeOf } from "./routes.js";

const HOSTILE = `</p><script>alert("x")</script><img src=x onerror='alert(1)'>`;
const now = Date.parse("2026-01-01T00:05:00Z");

// The fixture's run, with agent-written text that tries to open markup, and decided tool calls.
const run = structuredClone(parent);
const st = run.status as NonNullable<Execution["status"]>;
st.message = HOSTILE;
const [i1, i2] = st.iterations ?? [];
if (i1?.validators?.[1] === undefined || i2 === undefined) throw new Error("fixture");
i1.validators[1].reasoning = HOSTILE;
i2.toolCalls = {
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
    {
      step: 4,
      tool: "files.read_text_file",
      server: "files",
      toolCallId: "call-mcp",
      allowed: false,
      blockedBy: "guard",
      check: "destructive_pattern",
      reason: "secrets: reads files: a secret file [path]",
    },
  ],
};
const kids = structuredClone(children);
const verdict = kids[0]?.status?.verdict;
if (verdict === undefined) throw new Error("fixture");
verdict.reasoning = `sum subtracts ${HOSTILE}`;

const html = renderExecutionFragment(buildExecutionView(run, kids, agent), "/", now);

/** The elements of a class, as the HTML text between its opening tag and the next element of that class. */
function sections(text: string, cls: string): string[] {
  return text.split(new RegExp(`(?=<li class="${cls}[ "])`)).slice(1);
}

describe("esc", () => {
  it("escapes every character that could open markup or leave an attribute", () => {
    expect(esc(`<a href="x" title='y'>&</a>`)).toBe("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
    expect(esc(undefined)).toBe("");
    expect(esc(0.5)).toBe("0.5");
  });
});

describe("scoreBar", () => {
  it("draws the score's fill and the threshold's tick as SVG attributes, and says the comparison", () => {
    const bar = scoreBar("score", 0.4, 0.8);
    expect(bar).toContain('class="score score-fail"');
    expect(bar).toContain('<rect class="fill" x="0" y="0" width="40" height="10"/>');
    expect(bar).toContain('<line class="threshold" x1="80" x2="80"');
    expect(bar).toContain("0.40 &lt; 0.80");
    expect(bar).not.toContain("style=");
    expect(scoreBar("score", 0.9, 0.8)).toContain("score-pass");
    expect(scoreBar("score", undefined, 0.8)).toContain("no score yet");
    // A verdict outside [0, 1] is said as written and drawn at the edge.
    expect(scoreBar("score", 1.7, 0.8)).toContain('width="100"');
  });
});

describe("renderExecutionFragment", () => {
  it("shows each iteration (newest first) with its validators' score bars against the Agent's thresholds", () => {
    const iterations = sections(html, "iteration");
    expect(iterations.map((s) => /data-iteration="(\d+)"/.exec(s)?.[1])).toEqual(["2", "1"]);
    const [second, first] = iterations;
    const v1 = sections(first ?? "", "validator")[1] ?? "";
    expect(v1).toContain('data-state="failed"');
    expect(v1).toContain('data-score="0.4" data-min="0.8"');
    expect(v1).toContain("0.40 &lt; 0.80");
    expect(v1).toContain("confidence 0.90 (min 0.50)");
    // The iteration being validated: the semantic validator is running, its judge judging.
    const running = sections(second ?? "", "validator")[1] ?? "";
    expect(running).toContain('data-state="running"');
    expect(running).toContain("validating…");
    expect(running).toContain('data-child="run-i2-v1-checker"');
    expect(running).toContain("judging…");
    expect(sections(second ?? "", "validator")[2]).toContain('data-state="pending"');
  });

  it("shows each judge child with its score against the threshold, confidence and reasoning, linked to its own page", () => {
    const judge = sections(html, "judge").find((s) => s.includes('data-child="run-i1-v1-checker"')) ?? "";
    expect(judge).toContain('href="/namespaces/team/executions/run-i1-v1-checker"');
    expect(judge).toContain('data-score="0.4" data-min="0.8"');
    expect(judge).toContain("confidence 0.90");
    expect(judge).toContain("sum subtracts &lt;/p&gt;&lt;script&gt;");
  });

  it("lists the tool calls with their outcome and who decided: the guard's check or the judges", () => {
    const rows = html.split('<tr class="toolcall ').slice(1);
    expect(
      rows.map((r) => /<td class="tool">([^<]*)<\/td><td class="outcome">([^<]*)<\/td><td class="decided-by">([^<]*)</.exec(r)?.slice(1)),
    ).toEqual([
      ["cmd.run", "blocked by guard", "guard: destructive_pattern"],
      ["fs.list", "allowed", "guard"],
      ["fs.write", "blocked by judge", "judges"],
      ["files.read_text_file", "blocked by guard", "guard: destructive_pattern"],
    ]);
    expect(html).toContain("3 proposed, 1 allowed, 1 blocked by the guard, 1 by judges");
    expect(html).toContain('data-child="run-t-abc-gatekeeper"');
    expect(html).toContain("rejected: malformed_output");
  });

  it("shows each call's server: an MCP call's server, `built-in` for gavel's own tools", () => {
    const rows = html.split('<tr class="toolcall ').slice(1);
    expect(rows.map((r) => /<td class="server">([^<]*)<\/td><td class="tool">([^<]*)</.exec(r)?.slice(1))).toEqual([
      ["built-in", "cmd.run"],
      ["built-in", "fs.list"],
      ["built-in", "fs.write"],
      ["files", "files.read_text_file"],
    ]);
    expect(html).toContain("<th>server</th><th>tool</th>");
  });

  it("escapes agent-written text everywhere and never shows spec.input", () => {
    expect(html).not.toMatch(/<script|<img|onerror='/);
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect(html).not.toContain(SECRET);
    const child = renderExecutionFragment(buildExecutionView(kids[0] as Execution, [], undefined), "/", now);
    expect(child).toContain('href="/namespaces/team/executions/run"');
    expect(child).not.toContain(SECRET);
    expect(child).not.toMatch(/<script|<img/);
  });
});

describe("paragraph", () => {
  it("shows short text as it is, and folds long text (a judge's test output) behind its first line, escaped, whole", () => {
    expect(paragraph("reasoning", "reasoning", "exit 0")).toBe('<p class="reasoning"><span class="label">reasoning</span> exit 0</p>');
    const tap = `score 0.50: 1/2 pass\n${"not ok 1 - adds <two> numbers\n".repeat(20)}`;
    const folded = paragraph("reasoning", "reasoning", tap);
    expect(folded).toMatch(/^<details class="reasoning folded"><summary><span class="label">reasoning<\/span> score 0\.50: 1\/2 pass… /);
    expect(folded).toContain(`(${tap.length} characters)`);
    expect(folded.match(/adds &lt;two&gt; numbers/g)).toHaveLength(20);
    expect(folded).not.toContain("<two>");
    expect(paragraph("feedback", "feedback", "a\nb\nc\nd")).toContain("<details");
  });
});

describe("decidedBy", () => {
  it("names the guard's check for a call it decided, the judges for one they judged", () => {
    expect(decidedBy({ id: "a", outcome: "allowed", check: "adaptive_rule", judges: [] })).toBe("guard: adaptive_rule");
    expect(
      decidedBy({ id: "a", outcome: "allowed", judges: [{ name: "j", judge: "g", purpose: "tool_validation", phase: "Succeeded" }] }),
    ).toBe("judges");
    expect(decidedBy({ id: "a", judges: [{ name: "j", judge: "g", purpose: "tool_validation", phase: "Running" }] })).toBe(
      "judges (deciding)",
    );
  });
});

describe("renderListFragment", () => {
  it("lists the namespace's Executions as `gavel get ex -o wide` does, judge children under their run, names linked", () => {
    const list = renderListFragment("team", [kids[1], run, kids[0]] as Execution[], "/ui/", now);
    const rows = list.split("<tr class=").slice(1);
    expect(rows.map((r) => /data-name="([^"]+)"/.exec(r)?.[1])).toEqual(["run", "run-i1-v1-checker", "run-i2-v1-checker"]);
    expect(rows[0]).toContain('<a href="/ui/namespaces/team/executions/run">run</a>');
    expect(rows[1]).toContain('"depth-1"');
    expect(rows[1]).toContain("<td>0.40/0.90</td>");
    expect(list).not.toContain("<script");
    expect(renderListFragment("team", [], "/", now)).toContain("No Executions in namespace team.");
  });
});

describe("renderPage", () => {
  it("loads only its own script and style (the CSP forbids inline ones) and names its stream", () => {
    const page = renderPage(`t${HOSTILE}`, "/ui/", "<p>x</p>", "/ui/stream/namespaces/team/executions/run");
    expect(page).toContain('<script src="/ui/assets/ui.js" defer></script>');
    expect(page).toContain('data-stream="/ui/stream/namespaces/team/executions/run"');
    expect(page.match(/<script/g)).toHaveLength(1);
    expect(page).toContain('<aside class="activity" id="activity-log" hidden>');
  });
});

describe("routeOf", () => {
  it("parses pages, streams and JSON under the base, and refuses names that cannot exist", () => {
    expect(routeOf("")).toEqual({ kind: "root" });
    expect(routeOf("namespaces/team/executions")).toEqual({ kind: "list", namespace: "team", stream: false });
    expect(routeOf("stream/namespaces/team/executions/run-1.a")).toEqual({
      kind: "execution",
      namespace: "team",
      name: "run-1.a",
      stream: true,
    });
    expect(routeOf("api/namespaces/team/executions/run")).toEqual({ kind: "json", namespace: "team", name: "run" });
    expect(routeOf("assets/ui.css")).toEqual({ kind: "asset", file: "ui.css" });
    for (const bad of [
      "namespaces/Team/executions",
      "namespaces/team/executions/..",
      "namespaces/team/executions/a/b",
      "namespaces/team/agents/x",
      "api/namespaces/team/executions",
      "namespaces/%E0%A4%A/executions",
      "assets/../x",
    ]) {
      expect(routeOf(bad), bad).toEqual({ kind: "unknown" });
    }
  });
});

describe("sseEvent", () => {
  it("puts every line of the data on its own data: field, whatever its line ending", () => {
    expect(sseEvent("view", "a\nb\r\nc\rd")).toBe("event: view\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  });
});
