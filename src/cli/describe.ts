// `gavel describe execution NAME`: the whole tree of one Execution from the API server, as
// `kubectl describe` lays objects out: its phase and score, each iteration with the worker's
// exit, each validator's score and confidence against its thresholds, each judge child's
// verdict or rejection with the end of its raw output (and, when its pod log merged them, why
// its stdout holds its stderr too), tool-call judges, conditions and the
// recent Events. Agents and GuardPolicies are described by their spec and status.
import type * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { Agent, Execution, GuardPolicy, ToolApproval } from "../api/types.js";
import { UsageError, type Command } from "./command.js";
import {
  buildExecutionView,
  decidedBy,
  isFinished,
  mcpToolOf,
  type ExecutionView,
  type IterationView,
  type JudgeView,
  type ValidatorView,
} from "../views/execution-view.js";
import { typedError } from "../errors.js";
import { parseFlags } from "./flags.js";
import { childrenOf, connectKube, findObject, getObject, KUBE_FLAGS, type Kube } from "../views/kube.js";
import { workloadOutput } from "./outputs.js";
import { AGENTS, EXECUTIONS } from "../views/resources.js";
import { resolveResource } from "./resources.js";
import { age, fixed2, humanDuration, oneLine, renderTable } from "../views/table.js";

/** How much of a judge's raw output describe shows (the end of it: where the verdict is). */
const RAW_TAIL_CHARS = 600;
const EVENTS_SHOWN = 20;

/** Lines with a left margin. */
class Out {
  readonly lines: string[] = [];
  line(indent: number, text: string): void {
    for (const l of text.split("\n")) this.lines.push(`${" ".repeat(indent)}${l}`.trimEnd());
  }
  /** "Key:   value" rows, values aligned. */
  fields(indent: number, rows: [string, string | undefined][]): void {
    const shown = rows.filter((r): r is [string, string] => r[1] !== undefined && r[1] !== "");
    const width = Math.max(0, ...shown.map(([k]) => k.length + 1));
    for (const [k, v] of shown) this.line(indent, `${`${k}:`.padEnd(width + 2)}${v}`);
  }
}

function when(ts: string | undefined, now: number): string | undefined {
  return ts === undefined ? undefined : `${ts} (${age(ts, now)} ago)`;
}

function took(start: string | undefined, end: string | undefined): string {
  if (start === undefined || end === undefined) return "";
  return humanDuration(Date.parse(end) - Date.parse(start));
}

/** "0.80 >= 0.70" style comparison against a threshold, when the threshold is known. */
function against(value: number | undefined, min: number | undefined): string {
  if (value === undefined) return "";
  if (min === undefined) return fixed2(value);
  return `${fixed2(value)} ${value >= min ? ">=" : "< "} ${fixed2(min)}`;
}

/** The last lines of a raw output, up to RAW_TAIL_CHARS. */
export function rawTail(text: string): string {
  const trimmed = text.replace(/\s+$/, "");
  if (trimmed.length <= RAW_TAIL_CHARS) return trimmed;
  const cut = trimmed.slice(-RAW_TAIL_CHARS);
  const nl = cut.indexOf("\n");
  return `… (${trimmed.length - cut.length + (nl >= 0 ? nl + 1 : 0)} more characters before)\n${nl >= 0 ? cut.slice(nl + 1) : cut}`;
}

function judgeLines(out: Out, indent: number, j: JudgeView, raw: Map<string, string | undefined>): void {
  const verdict =
    j.rejection !== undefined
      ? `rejected: ${j.rejection}`
      : j.score !== undefined
        ? `score ${against(j.score, j.minScore)}  confidence ${fixed2(j.confidence)}`
        : "";
  out.line(indent, `${j.judge}  ${j.name}  ${j.phase}  ${verdict}`.trimEnd());
  if (j.reasoning !== undefined && j.reasoning !== "") out.fields(indent + 2, [["Reasoning", oneLine(j.reasoning, 400)]]);
  if (j.rejection !== undefined && j.message !== undefined) out.fields(indent + 2, [["Why", oneLine(j.message, 400)]]);
  const text = raw.get(j.name);
  if (text !== undefined) {
    out.line(indent + 2, "Raw output:");
    out.line(indent + 4, text === "" ? "<empty>" : rawTail(text));
  } else if (isFinished(j.phase)) {
    out.line(indent + 2, "Raw output: <not kept>");
  }
  if (j.streamsMerged !== undefined) out.fields(indent + 2, [["Streams", oneLine(j.streamsMerged, 400)]]);
}

function validatorLines(out: Out, v: ValidatorView, raw: Map<string, string | undefined>): void {
  const head =
    v.state === "pending" || v.state === "running"
      ? `${v.index}  ${v.type}  ${v.state}${v.minScore !== undefined ? `  (min_score ${fixed2(v.minScore)}, min_confidence ${fixed2(v.minConfidence)})` : ""}`
      : `${v.index}  ${v.type}  ${v.state}  score ${against(v.score, v.minScore)}  confidence ${against(v.confidence, v.minConfidence)}`;
  out.line(6, head);
  if (v.reasoning !== undefined && v.reasoning !== "") out.fields(9, [["Reasoning", oneLine(v.reasoning, 400)]]);
  for (const s of v.signals ?? []) out.line(9, `signal ${s.category} ${fixed2(s.score)}: ${oneLine(s.message, 200)}`);
  if (v.judges.length > 0) {
    out.line(9, "Judges:");
    for (const j of v.judges) judgeLines(out, 11, j, raw);
  }
}

/** The head fields of an Execution: names, parent, phase, score, iteration, times, message. */
function executionFields(out: Out, view: ExecutionView, now: number): void {
  const p = view.parent;
  out.fields(0, [
    ["Name", view.name],
    ["Namespace", view.namespace],
    ["Agent", `${view.agent}${view.agentFound ? "" : " (not found: thresholds unknown)"}`],
    [
      "Parent",
      p !== undefined
        ? `${p.name} (${p.purpose}, iteration ${p.iteration}, ${p.purpose === "tool_validation" ? `tool_validation entry ${p.validatorIndex}, tool call ${p.toolCallId ?? "?"}` : `validator ${p.validatorIndex}`})`
        : undefined,
    ],
    ["Phase", view.phase],
    ["Score", view.score !== undefined ? fixed2(view.score) : undefined],
    [
      "Iteration",
      view.iteration !== undefined
        ? `${view.iteration}${view.maxIterations !== undefined ? ` of at most ${view.maxIterations}` : ""}`
        : undefined,
    ],
    ["Created", when(view.creationTimestamp, now)],
    ["Started", when(view.startTime, now)],
    [
      "Completed",
      view.completionTime !== undefined ? `${view.completionTime} (took ${took(view.startTime, view.completionTime)})` : undefined,
    ],
    ["Message", view.message !== undefined ? oneLine(view.message, 600) : undefined],
  ]);
}

/** A judge child's own part: its verdict or rejection and its raw output. */
function judgeChildLines(out: Out, view: ExecutionView, raw: Map<string, string | undefined>): void {
  if (view.verdict !== undefined) {
    out.line(0, "Verdict:");
    out.fields(2, [
      ["Score", fixed2(view.verdict.score)],
      ["Confidence", fixed2(view.verdict.confidence)],
      ["Reasoning", oneLine(view.verdict.reasoning, 600)],
    ]);
  }
  if (view.rejection !== undefined) out.fields(0, [["Rejection", view.rejection]]);
  if (view.parent !== undefined) {
    const text = raw.get(view.name);
    out.line(0, "Raw output:");
    out.line(2, text === undefined ? "<not kept>" : text === "" ? "<empty>" : rawTail(text));
  }
  if (view.streamsMerged !== undefined) out.fields(0, [["Streams", oneLine(view.streamsMerged, 400)]]);
}

/** An iteration's tool calls: the counts, then each decided call with why and its judges. */
function toolCallLines(out: Out, it: IterationView, raw: Map<string, string | undefined>): void {
  if (it.toolCalls.length === 0 && it.toolCallCounts === undefined) return;
  const c = it.toolCallCounts;
  out.line(
    4,
    c !== undefined
      ? `Tool calls: ${c.proposed} proposed, ${c.allowed} allowed, ${c.blockedByGuard} blocked by the guard, ${c.blockedByJudge} by judges`
      : "Tool calls:",
  );
  for (const call of it.toolCalls) {
    const decided =
      call.step !== undefined
        ? `step ${call.step}  ${call.tool ?? ""}  ${call.outcome ?? ""}${call.check !== undefined ? ` (${call.check})` : ""}  `
        : "";
    out.line(6, `${decided}${call.id}${call.judges.length > 0 ? "  judged by:" : ""}`);
    if (call.reason !== undefined) out.fields(9, [["Why", oneLine(call.reason, 300)]]);
    const mcp = mcpToolOf(call);
    if (mcp !== undefined)
      out.fields(9, [
        ["MCP server", mcp.server],
        ["MCP tool", mcp.tool],
      ]);
    if (call.outcome !== undefined) out.fields(9, [["Decided by", decidedBy(call)]]);
    for (const j of call.judges) judgeLines(out, 9, j, raw);
  }
}

/** One iteration: its worker, feedback, validators and tool calls. */
function iterationLines(out: Out, it: IterationView, raw: Map<string, string | undefined>): void {
  const worker = it.exitCode !== undefined ? `worker exited ${it.exitCode}` : it.phase === "Running" ? "worker running" : "";
  out.line(
    2,
    `${it.number}  ${it.phase}  ${worker}${it.completionTime !== undefined ? `  took ${took(it.startTime, it.completionTime)}` : ""}`.trimEnd(),
  );
  if (it.feedback !== undefined) out.fields(4, [["Feedback", oneLine(it.feedback, 400)]]);
  if (it.validators.length > 0) {
    out.line(4, "Validators:");
    for (const v of it.validators) validatorLines(out, v, raw);
  }
  toolCallLines(out, it, raw);
}

/** The Conditions and Events tables (Events: the last EVENTS_SHOWN). */
function conditionAndEventLines(out: Out, view: ExecutionView, events: k8s.CoreV1Event[], now: number): void {
  out.line(0, "Conditions:");
  if (view.conditions.length === 0) out.line(2, "<none>");
  else {
    out.line(
      2,
      renderTable(
        ["Type", "Status", "Reason", "Age", "Message"],
        view.conditions.map((c) => [c.type, c.status, c.reason, age(c.lastTransitionTime, now), oneLine(c.message, 200)]),
      ).trimEnd(),
    );
  }
  out.line(0, "Events:");
  if (events.length === 0) out.line(2, "<none>");
  else {
    const shown = events.slice(-EVENTS_SHOWN);
    out.line(
      2,
      renderTable(
        ["Type", "Reason", "Age", "From", "Message"],
        shown.map((e) => [
          e.type ?? "",
          e.reason ?? "",
          age(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp, now),
          e.source?.component ?? e.reportingComponent ?? "",
          oneLine(e.message, 200),
        ]),
      ).trimEnd(),
    );
  }
}

/** The describe text of an Execution's view, with the judges' raw outputs (by child name) and Events. */
export function renderExecution(view: ExecutionView, raw: Map<string, string | undefined>, events: k8s.CoreV1Event[], now: number): string {
  const out = new Out();
  executionFields(out, view, now);
  judgeChildLines(out, view, raw);
  if (view.iterations.length > 0) {
    out.line(0, "Iterations:");
    for (const it of view.iterations) iterationLines(out, it, raw);
  }
  conditionAndEventLines(out, view, events, now);
  return `${out.lines.join("\n")}\n`;
}

/** The recent Events about one Execution, oldest first. */
async function eventsOf(kube: Kube, namespace: string, ex: Execution): Promise<k8s.CoreV1Event[]> {
  try {
    const list = await kube.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=Execution,involvedObject.name=${ex.metadata.name}`,
    });
    const uid = ex.metadata.uid;
    const mine = list.items.filter((e) => uid === undefined || e.involvedObject.uid === undefined || e.involvedObject.uid === uid);
    const t = (e: k8s.CoreV1Event) => new Date(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? 0).getTime();
    return mine.sort((a, b) => t(a) - t(b) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  } catch (err) {
    throw typedError(err, `listing the Events of execution "${ex.metadata.name}"`);
  }
}

/** Everything describe shows about one Execution, read from the API server. */
export async function describeExecution(kube: Kube, namespace: string, name: string, now = Date.now()): Promise<string> {
  const ex = await getObject<Execution>(kube, EXECUTIONS, namespace, name);
  const [children, agent, events] = await Promise.all([
    childrenOf(kube, namespace, name),
    findObject<Agent>(kube, AGENTS, namespace, ex.spec.agentRef.name),
    eventsOf(kube, namespace, ex),
  ]);
  const view = buildExecutionView(ex, children, agent);
  const judged = ex.spec.parent !== undefined ? [ex] : children;
  const read = new Map<string, string | undefined>();
  await Promise.all(
    judged.map(async (child) => read.set(child.metadata.name, (await workloadOutput(kube, namespace, child.metadata.name))?.stdout)),
  );
  return renderExecution(view, judgeOutputs(judged, read), events, now);
}

/**
 * Each judge child's output by name: what its pod's log or stored result holds (`read`), else
 * the tails of it its status keeps (status.rawOutput.stdout), else undefined (not kept).
 */
export function judgeOutputs(judged: readonly Execution[], read: ReadonlyMap<string, string | undefined>): Map<string, string | undefined> {
  return new Map(judged.map((c) => [c.metadata.name, read.get(c.metadata.name) ?? c.status?.rawOutput?.stdout]));
}

/** Agents, GuardPolicies and ToolApprovals: metadata, the spec as YAML, an approval's status, conditions. */
function renderOther(obj: Agent | GuardPolicy | ToolApproval, now: number): string {
  const out = new Out();
  out.fields(0, [
    ["Name", obj.metadata.name],
    ["Namespace", obj.metadata.namespace],
    ["Kind", obj.kind],
    [
      "Labels",
      Object.entries(obj.metadata.labels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(", ") || "<none>",
    ],
    ["Created", when(obj.metadata.creationTimestamp, now)],
  ]);
  if (obj.kind === "GuardPolicy" && obj.status?.counts !== undefined) {
    out.line(0, "Loaded:");
    out.fields(
      2,
      Object.entries(obj.status.counts).map(([k, v]) => [k, String(v)]),
    );
  }
  out.line(0, "Spec:");
  out.line(2, stringify(obj.spec).trimEnd());
  if (obj.kind === "ToolApproval") {
    out.line(0, "Status:");
    out.line(2, obj.status === undefined ? "<none>" : stringify(obj.status).trimEnd());
  }
  out.line(0, "Conditions:");
  const conditions = obj.status?.conditions ?? [];
  if (conditions.length === 0) out.line(2, "<none>");
  else
    out.line(
      2,
      renderTable(
        ["Type", "Status", "Reason", "Age", "Message"],
        conditions.map((c) => [c.type, c.status, c.reason, age(c.lastTransitionTime, now), oneLine(c.message, 200)]),
      ).trimEnd(),
    );
  return `${out.lines.join("\n")}\n`;
}

export const describeCommand: Command = {
  name: "describe",
  summary: "show one Execution's tree: iterations, validators, judges' verdicts, tool calls, conditions, events",
  usage:
    "gavel describe execution|agent|guardpolicy|toolapproval (ex|ag|gp|ta) NAME [NAME...] [-n NS] [--kubeconfig FILE] [--context NAME]",
  async run(argv, io) {
    const parsed = parseFlags({ args: argv, allowPositionals: true, options: KUBE_FLAGS });
    const [what, ...names] = parsed.positionals;
    if (what === undefined) throw new UsageError("name a resource type: execution (ex), agent (ag) or guardpolicy (gp)");
    const r = resolveResource(what);
    if (names.length === 0) throw new UsageError(`name the ${r.kind} to describe`);
    const kube = connectKube(parsed.values, io);
    const texts: string[] = [];
    for (const name of names) {
      texts.push(
        r.kind === "Execution"
          ? await describeExecution(kube, kube.namespace, name)
          : renderOther(await getObject<Agent | GuardPolicy | ToolApproval>(kube, r, kube.namespace, name), Date.now()),
      );
    }
    io.stdout.write(texts.join("\n\n"));
    return 0;
  },
};
