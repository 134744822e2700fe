// The live execution tree of `gavel run` and `gavel events`: a reducer that folds gavel
// events into a tree (iterations → validators → judge children → verdicts, and the tool
// calls with their decisions) and a renderer that draws it, with spinners while running.
import type { GavelEvent } from "../api/events.js";
import { guardNotes } from "../gate/audit.js";

export interface JudgeNode {
  child: string;
  judge: string;
  state: "running" | "done";
  score?: number;
  confidence?: number;
  rejection?: string;
}

export interface ValidatorNode {
  index: number;
  type: string;
  state: "running" | "passed" | "failed";
  score?: number;
  confidence?: number;
  reasoning?: string;
  judges: JudgeNode[];
}

export interface ToolCallNode {
  step: number;
  tool: string;
  /** The MCP server whose tool it is (the decision event's mcp.server, ADR 0051); absent for a built-in. */
  server?: string;
  allowed?: boolean;
  blockedBy?: string;
  check?: string;
  reason?: string;
  /** Adaptive rules with action flag that matched the call (it was still allowed). */
  flags?: string[];
  /** What rules in warn mode would have denied. */
  warnings?: string[];
  judges: JudgeNode[];
}

export interface IterationNode {
  number: number;
  state: "running" | "validating" | "passed" | "refining" | "failed";
  exitCode?: number;
  feedback?: string;
  validators: ValidatorNode[];
  toolCalls: ToolCallNode[];
}

export interface ExecutionTree {
  execution: string;
  agent?: string;
  phase: string;
  score?: number;
  message?: string;
  iterations: IterationNode[];
}

/** An empty tree for one execution. */
export function emptyTree(execution: string): ExecutionTree {
  return { execution, phase: "Pending", iterations: [] };
}

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function iteration(tree: ExecutionTree, n: number): IterationNode {
  let it = tree.iterations.find((i) => i.number === n);
  if (!it) {
    it = { number: n, state: "running", validators: [], toolCalls: [] };
    tree.iterations.push(it);
  }
  return it;
}

function findJudge(tree: ExecutionTree, child: string): JudgeNode | undefined {
  for (const it of tree.iterations) {
    for (const v of it.validators) for (const j of v.judges) if (j.child === child) return j;
    for (const t of it.toolCalls) for (const j of t.judges) if (j.child === child) return j;
  }
  return undefined;
}

type EventData = GavelEvent["data"];

/** The iteration an event names (0 when it names none). */
const iterationOf = (tree: ExecutionTree, d: EventData): IterationNode => iteration(tree, num(d.iteration) ?? 0);

/** A judge child spawned: under its validator, or under the tool call it judges. */
function judgeSpawned(tree: ExecutionTree, d: EventData): void {
  const node: JudgeNode = { child: str(d.child) ?? "?", judge: str(d.judge) ?? "?", state: "running" };
  const it = iterationOf(tree, d);
  if (d.purpose === "tool_validation") it.toolCalls.find((t) => t.step === num(d.step))?.judges.push(node);
  else it.validators.find((v) => v.index === num(d.index))?.judges.push(node);
}

/** A tool call decided (added when its proposal was not seen). */
function toolCallDecided(tree: ExecutionTree, d: EventData): void {
  const it = iterationOf(tree, d);
  let tc = it.toolCalls.find((t) => t.step === num(d.step));
  if (!tc) {
    tc = { step: num(d.step) ?? it.toolCalls.length, tool: str(d.tool) ?? "?", judges: [] };
    it.toolCalls.push(tc);
  }
  const mcp = d.mcp;
  if (typeof mcp === "object" && mcp !== null && !Array.isArray(mcp)) tc.server = str((mcp as EventData).server);
  tc.allowed = d.allowed === true;
  tc.blockedBy = str(d.blocked_by);
  tc.check = str(d.check);
  tc.reason = str(d.reason);
  if (Array.isArray(d.flags) && d.flags.length > 0) tc.flags = d.flags.map(String);
  if (Array.isArray(d.warnings) && d.warnings.length > 0) tc.warnings = d.warnings.map(String);
}

/** What each event type does to the tree. */
const APPLY: Record<string, (tree: ExecutionTree, d: EventData) => void> = {
  "execution.started": (tree, d) => {
    tree.agent = str(d.agent);
    tree.phase = "Running";
  },
  "execution.phase": (tree, d) => {
    tree.phase = str(d.phase) ?? tree.phase;
    tree.score = num(d.score) ?? tree.score;
    tree.message = str(d.message) ?? tree.message;
  },
  "iteration.started": (tree, d) => {
    iterationOf(tree, d).feedback = str(d.feedback);
  },
  "worker.finished": (tree, d) => {
    const it = iterationOf(tree, d);
    it.exitCode = num(d.exitCode);
    it.state = "validating";
  },
  "validator.started": (tree, d) => {
    const it = iterationOf(tree, d);
    it.validators.push({ index: num(d.index) ?? it.validators.length, type: str(d.type) ?? "?", state: "running", judges: [] });
  },
  "validator.result": (tree, d) => {
    const v = iterationOf(tree, d).validators.find((x) => x.index === num(d.index));
    if (!v) return;
    v.state = d.passed === true ? "passed" : "failed";
    v.score = num(d.score);
    v.confidence = num(d.confidence);
    v.reasoning = str(d.reasoning);
  },
  "iteration.finished": (tree, d) => {
    const outcome = str(d.outcome);
    iterationOf(tree, d).state = outcome === "passed" ? "passed" : outcome === "refining" ? "refining" : "failed";
  },
  "judge.spawned": judgeSpawned,
  "judge.finished": (tree, d) => {
    const j = findJudge(tree, str(d.child) ?? "");
    if (!j) return;
    j.state = "done";
    j.score = num(d.score);
    j.confidence = num(d.confidence);
    j.rejection = str(d.rejection);
  },
  "toolcall.proposed": (tree, d) => {
    const it = iterationOf(tree, d);
    it.toolCalls.push({ step: num(d.step) ?? it.toolCalls.length, tool: str(d.tool) ?? "?", judges: [] });
  },
  "toolcall.decision": toolCallDecided,
};

/** Folds one event into the tree (mutates and returns it); unknown events are ignored. */
export function applyEvent(tree: ExecutionTree, e: GavelEvent): ExecutionTree {
  if (Object.hasOwn(APPLY, e.type)) APPLY[e.type]?.(tree, e.data);
  return tree;
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** Renders the tree as lines; `frame` animates the spinners of running nodes. */
export function renderTree(tree: ExecutionTree, frame = 0, opts: { color?: boolean; width?: number } = {}): string[] {
  const spin = SPINNER[frame % SPINNER.length] ?? "*";
  const c = (code: string, s: string) => (opts.color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const ok = c("32", "✓");
  const bad = c("31", "✗");
  const score = (s?: number) => (s === undefined ? "" : s.toFixed(2));
  const width = opts.width ?? 120;
  const clip = (s: string) => (s.length > width ? `${s.slice(0, width - 1)}…` : s);
  const oneLine = (s?: string) => (s ?? "").replace(/\s+/g, " ").trim();
  const judgeLine = (j: JudgeNode) =>
    j.state === "running"
      ? `${spin} judge ${j.judge} (${j.child}) running`
      : j.rejection
        ? `${bad} judge ${j.judge} (${j.child}) rejected: ${j.rejection}`
        : `${(j.score ?? 0) > 0 ? ok : bad} judge ${j.judge} (${j.child}) score ${score(j.score)} confidence ${score(j.confidence)}`;

  const lines: string[] = [];
  const running = !["Succeeded", "Failed", "Cancelled", "TimedOut"].includes(tree.phase);
  const head = running ? spin : tree.phase === "Succeeded" ? ok : bad;
  lines.push(
    `${head} execution ${tree.execution}${tree.agent ? ` (agent ${tree.agent})` : ""}  ${tree.phase}${tree.score !== undefined ? `  score ${score(tree.score)}` : ""}`,
  );
  tree.iterations.forEach((it, i) => {
    const last = i === tree.iterations.length - 1;
    const pre = last ? "   " : "│  ";
    const mark = it.state === "running" || it.state === "validating" ? spin : it.state === "passed" ? ok : bad;
    const what = it.state === "running" ? "worker running" : it.exitCode !== undefined ? `worker exited ${it.exitCode}` : "";
    lines.push(`${last ? "└─" : "├─"} ${mark} iteration ${it.number}  ${what}  ${it.state}`);
    if (it.feedback) lines.push(clip(`${pre}   feedback: ${oneLine(it.feedback)}`));
    const rows: string[][] = [];
    for (const tc of it.toolCalls) {
      const m = tc.allowed === undefined ? spin : tc.allowed ? ok : bad;
      const verdict =
        (tc.allowed === undefined
          ? "deciding"
          : tc.allowed
            ? "allowed"
            : `blocked by ${tc.blockedBy ?? "?"}${tc.check ? ` (${tc.check})` : ""}: ${oneLine(tc.reason)}`) +
        guardNotes({ flags: tc.flags, warnings: tc.warnings });
      rows.push([
        `${m} tool call ${tc.step} ${tc.tool}${tc.server !== undefined ? ` (MCP server ${tc.server})` : ""}  ${verdict}`,
        ...tc.judges.map(judgeLine),
      ]);
    }
    for (const v of it.validators) {
      const m = v.state === "running" ? spin : v.state === "passed" ? ok : bad;
      const detail =
        v.state === "running"
          ? "running"
          : `score ${score(v.score)} confidence ${score(v.confidence)}${v.state === "failed" ? `: ${oneLine(v.reasoning)}` : ""}`;
      rows.push([`${m} validator ${v.index} ${v.type}  ${detail}`, ...v.judges.map(judgeLine)]);
    }
    rows.forEach((row, r) => {
      const lastRow = r === rows.length - 1;
      lines.push(clip(`${pre}${lastRow ? "└─" : "├─"} ${row[0] ?? ""}`));
      row.slice(1).forEach((sub, s) => {
        lines.push(clip(`${pre}${lastRow ? "   " : "│  "}${s === row.length - 2 ? "└─" : "├─"} ${sub}`));
      });
    });
  });
  if (!running && tree.message) lines.push(clip(`   ${oneLine(tree.message)}`));
  return lines;
}
