// The web view's HTML, rendered on the server from the same ExecutionView `gavel describe`
// draws (src/cli/execution-view.ts): the list of a namespace's Executions and one Execution's
// tree. Every value that reaches the page goes through `esc` (agents and judges write the
// reasoning, messages and feedback shown), and score bars are SVG attributes, not inline
// styles, so the page's Content-Security-Policy can forbid inline scripts and styles alike.
import type { Execution } from "../api/types.js";
import { cells, columns } from "../views/rows.js";
import {
  decidedBy,
  isFinished,
  treeOrder,
  type ExecutionView,
  type IterationView,
  type JudgeView,
  type ToolCallView,
  type ValidatorView,
} from "../views/execution-view.js";
import { EXECUTIONS } from "../views/resources.js";
import { age, fixed2, humanDuration } from "../views/table.js";

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text made safe for an HTML element's content or a quoted attribute value. */
export function esc(value: string | number | undefined): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/** Where the pages of one namespace live under the view's base path. */
export function namespacePath(base: string, namespace: string): string {
  return `${base}namespaces/${encodeURIComponent(namespace)}/executions`;
}

/** The page of one Execution. */
export function executionPath(base: string, namespace: string, name: string): string {
  return `${namespacePath(base, namespace)}/${encodeURIComponent(name)}`;
}

/** Clamps a score into [0, 1] for drawing (a verdict outside it is shown as written, drawn at the edge). */
function unit(n: number): number {
  return Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0;
}

/**
 * A score bar: the score's fill, the threshold's tick, and the comparison as text. `passes`
 * colours it (undefined: not decided yet).
 */
export function scoreBar(label: string, score: number | undefined, min: number | undefined): string {
  const pct = score === undefined ? 0 : Math.round(unit(score) * 1000) / 10;
  const state = score === undefined ? "none" : min === undefined ? "plain" : score >= min ? "pass" : "fail";
  const tick = min === undefined ? "" : `<line class="threshold" x1="${unit(min) * 100}" x2="${unit(min) * 100}" y1="0" y2="10"/>`;
  const text =
    score === undefined
      ? "no score yet"
      : min === undefined
        ? fixed2(score)
        : `${fixed2(score)} ${score >= min ? "≥" : "<"} ${fixed2(min)}`;
  return (
    `<span class="score score-${state}" data-score="${esc(score)}" data-min="${esc(min)}">` +
    `<span class="score-label">${esc(label)}</span>` +
    `<svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="meter" aria-label="${esc(label)}" aria-valuemin="0" aria-valuemax="1" aria-valuenow="${esc(score)}">` +
    `<rect class="track" x="0" y="0" width="100" height="10"/><rect class="fill" x="0" y="0" width="${pct}" height="10"/>${tick}</svg>` +
    `<span class="score-text">${esc(text)}</span></span>`
  );
}

function phaseBadge(phase: string): string {
  return `<span class="phase phase-${esc(phase.toLowerCase())}">${esc(phase)}</span>`;
}

function took(start: string | undefined, end: string | undefined): string {
  return start === undefined || end === undefined ? "" : humanDuration(Date.parse(end) - Date.parse(start));
}

/** Text longer than this (or of more lines) is folded: its first line shown, the rest behind a <details>. */
const FOLD_CHARS = 240;
const FOLD_LINES = 3;

/** A labelled paragraph of agent-written text; long text (a judge's test output) folded so the tree stays readable. */
export function paragraph(cls: string, label: string, text: string | undefined): string {
  if (text === undefined || text === "") return "";
  const lines = text.split("\n");
  if (text.length <= FOLD_CHARS && lines.length <= FOLD_LINES)
    return `<p class="${cls}"><span class="label">${esc(label)}</span> ${esc(text)}</p>`;
  const first = (lines[0] ?? "").slice(0, 160);
  return `<details class="${cls} folded"><summary><span class="label">${esc(label)}</span> ${esc(first)}… <span class="more">(${text.length} characters)</span></summary><div class="full">${esc(text)}</div></details>`;
}

function judgeItem(j: JudgeView, base: string, namespace: string): string {
  const head =
    `<a class="judge-name" href="${esc(executionPath(base, namespace, j.name))}">${esc(j.name)}</a> ` +
    `<span class="judge-agent">judge ${esc(j.judge)}</span> ${phaseBadge(j.phase)}`;
  const verdict =
    j.score !== undefined
      ? `${scoreBar("score", j.score, j.minScore)}<span class="confidence">confidence ${esc(fixed2(j.confidence))}</span>`
      : j.rejection !== undefined
        ? `<span class="rejection">rejected: ${esc(j.rejection)}</span>`
        : isFinished(j.phase)
          ? ""
          : `<span class="waiting">judging…</span>`;
  return (
    `<li class="judge" data-child="${esc(j.name)}" data-phase="${esc(j.phase)}"><div class="row">${head}</div><div class="row">${verdict}</div>` +
    `${paragraph("reasoning", "reasoning", j.reasoning)}${j.rejection !== undefined ? paragraph("message", "why", j.message) : ""}</li>`
  );
}

function judgeList(judges: readonly JudgeView[], base: string, namespace: string): string {
  return judges.length === 0 ? "" : `<ul class="judges">${judges.map((j) => judgeItem(j, base, namespace)).join("")}</ul>`;
}

function validatorItem(v: ValidatorView, base: string, namespace: string): string {
  const bar =
    v.state === "pending" || v.state === "running"
      ? `<span class="waiting">${v.state === "running" ? "validating…" : "pending"}</span>`
      : "";
  const confidence =
    v.confidence !== undefined
      ? `<span class="confidence">confidence ${esc(fixed2(v.confidence))}${v.minConfidence !== undefined ? ` (min ${esc(fixed2(v.minConfidence))})` : ""}</span>`
      : "";
  const signals = (v.signals ?? []).map((s) => `<li>${esc(s.category)} ${esc(fixed2(s.score))}: ${esc(s.message)}</li>`).join("");
  return (
    `<li class="validator state-${v.state}" data-index="${v.index}" data-state="${v.state}">` +
    `<div class="row"><span class="validator-name">validator ${v.index} <b>${esc(v.type)}</b></span> <span class="state">${esc(v.state)}</span></div>` +
    `<div class="row">${v.score !== undefined || v.minScore !== undefined ? scoreBar("score", v.score, v.minScore) : ""}${confidence}${bar}</div>` +
    `${paragraph("reasoning", "reasoning", v.reasoning)}${signals !== "" ? `<ul class="signals">${signals}</ul>` : ""}` +
    `${judgeList(v.judges, base, namespace)}</li>`
  );
}

function toolCallRow(c: ToolCallView, base: string, namespace: string): string {
  const outcome = c.outcome ?? "deciding";
  const cls = outcome === "allowed" ? "allowed" : outcome.startsWith("blocked") ? "blocked" : "deciding";
  return (
    `<tr class="toolcall ${cls}" data-id="${esc(c.id)}"><td>${esc(c.step)}</td><td class="server">${esc(c.server ?? "built-in")}</td><td class="tool">${esc(c.tool ?? "")}</td>` +
    `<td class="outcome">${esc(outcome)}</td><td class="decided-by">${esc(decidedBy(c))}</td><td class="why">${esc(c.reason ?? "")}</td>` +
    `<td class="id">${esc(c.id)}</td></tr>` +
    (c.judges.length > 0 ? `<tr class="toolcall-judges"><td></td><td colspan="6">${judgeList(c.judges, base, namespace)}</td></tr>` : "")
  );
}

function iterationItem(it: IterationView, base: string, namespace: string): string {
  const worker = it.exitCode !== undefined ? `worker exited ${it.exitCode}` : it.phase === "Running" ? "worker running" : "";
  const c = it.toolCallCounts;
  const counts =
    c !== undefined
      ? `${c.proposed} proposed, ${c.allowed} allowed, ${c.blockedByGuard} blocked by the guard, ${c.blockedByJudge} by judges`
      : "";
  const calls =
    it.toolCalls.length > 0 || c !== undefined
      ? `<h3>Tool calls <span class="counts">${esc(counts)}</span></h3>` +
        (it.toolCalls.length > 0
          ? `<table class="toolcalls"><thead><tr><th>step</th><th>server</th><th>tool</th><th>outcome</th><th>decided by</th><th>why</th><th>call id</th></tr></thead><tbody>${it.toolCalls.map((t) => toolCallRow(t, base, namespace)).join("")}</tbody></table>`
          : "")
      : "";
  return (
    `<li class="iteration" data-iteration="${it.number}" data-phase="${esc(it.phase)}">` +
    `<h2>Iteration ${it.number} ${phaseBadge(it.phase)} <span class="worker">${esc(worker)}</span> <span class="took">${esc(took(it.startTime, it.completionTime))}</span></h2>` +
    paragraph("feedback", "feedback", it.feedback) +
    (it.validators.length > 0
      ? `<ul class="validators">${it.validators.map((v) => validatorItem(v, base, namespace)).join("")}</ul>`
      : "") +
    `${calls}</li>`
  );
}

/** The live part of an Execution's page: its header, iterations (newest first) and conditions. */
export function renderExecutionFragment(view: ExecutionView, base: string, now: number): string {
  const ns = view.namespace;
  const facts: [string, string][] = [
    ["agent", `${view.agent}${view.agentFound ? "" : " (not found: thresholds unknown)"}`],
    [
      "iteration",
      view.iteration !== undefined ? `${view.iteration}${view.maxIterations !== undefined ? ` of at most ${view.maxIterations}` : ""}` : "",
    ],
    ["created", view.creationTimestamp !== undefined ? `${age(view.creationTimestamp, now)} ago` : ""],
    ["took", took(view.startTime, view.completionTime)],
  ];
  const parent =
    view.parent !== undefined
      ? `<p class="parent">judges <a href="${esc(executionPath(base, ns, view.parent.name))}">${esc(view.parent.name)}</a> (${esc(view.parent.purpose)}, iteration ${view.parent.iteration}${view.parent.toolCallId !== undefined ? `, tool call ${esc(view.parent.toolCallId)}` : `, validator ${view.parent.validatorIndex}`})</p>`
      : "";
  const verdict =
    view.verdict !== undefined
      ? `<div class="verdict">${scoreBar("verdict", view.verdict.score, undefined)}<span class="confidence">confidence ${esc(fixed2(view.verdict.confidence))}</span>${paragraph("reasoning", "reasoning", view.verdict.reasoning)}</div>`
      : view.rejection !== undefined
        ? `<p class="rejection">rejected: ${esc(view.rejection)}</p>`
        : "";
  const conditions =
    view.conditions.length === 0
      ? ""
      : `<h3>Conditions</h3><table class="conditions"><thead><tr><th>type</th><th>status</th><th>reason</th><th>age</th><th>message</th></tr></thead><tbody>${view.conditions
          .map(
            (c) =>
              `<tr><td>${esc(c.type)}</td><td>${esc(c.status)}</td><td>${esc(c.reason)}</td><td>${esc(age(c.lastTransitionTime, now))}</td><td>${esc(c.message)}</td></tr>`,
          )
          .join("")}</tbody></table>`;
  return (
    `<section class="execution" data-name="${esc(view.name)}" data-phase="${esc(view.phase)}">` +
    `<header><h1>${esc(view.name)} ${phaseBadge(view.phase)}</h1>` +
    `<dl class="facts">${facts
      .filter(([, v]) => v !== "")
      .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`)
      .join("")}</dl>` +
    `${view.score !== undefined ? scoreBar("score", view.score, undefined) : ""}${paragraph("message", "message", view.message)}${parent}${verdict}</header>` +
    `<ol class="iterations" reversed>${[...view.iterations]
      .reverse()
      .map((it) => iterationItem(it, base, ns))
      .join("")}</ol>` +
    `${conditions}</section>`
  );
}

/** The live part of a namespace's page: its Executions as `gavel get ex` lists them, judge children under their runs. */
export function renderListFragment(namespace: string, items: Execution[], base: string, now: number): string {
  const header = columns(EXECUTIONS, true).filter((h) => h !== "PARENT");
  const rows = treeOrder(items).map(({ ex, depth }) => {
    const all = cells(EXECUTIONS, ex, true, now, 0);
    const [name, ...rest] = all;
    const values = rest.filter((_, i) => i !== 7); // PARENT: the tree shows it
    const link = `<a href="${esc(executionPath(base, namespace, name ?? ""))}">${esc(name)}</a>`;
    return `<tr class="depth-${Math.min(depth, 4)}" data-name="${esc(name)}" data-phase="${esc(ex.status?.phase ?? "Pending")}"><td class="name">${depth > 0 ? "└─ " : ""}${link}</td>${values.map((v) => `<td>${esc(v)}</td>`).join("")}</tr>`;
  });
  return (
    `<section class="list" data-namespace="${esc(namespace)}"><h1>Executions in ${esc(namespace)}</h1>` +
    (rows.length === 0
      ? `<p class="empty">No Executions in namespace ${esc(namespace)}.</p>`
      : `<table class="executions"><thead><tr>${header.map((h) => `<th>${esc(h.toLowerCase())}</th>`).join("")}</tr></thead><tbody>${rows.join("")}</tbody></table>`) +
    `</section>`
  );
}

/** A whole page: the fragment, and the script that replaces it from the server-sent events at `stream`. */
export function renderPage(title: string, base: string, fragment: string, stream: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${esc(title)} · gavel</title><link rel="stylesheet" href="${esc(base)}assets/ui.css"><script src="${esc(base)}assets/ui.js" defer></script></head>` +
    `<body data-stream="${esc(stream)}"><nav><a class="home" href="${esc(base)}">gavel</a> <span id="live" class="live" data-state="connecting">connecting…</span></nav>` +
    `<main id="view">${fragment}</main><aside class="activity" id="activity-log" hidden><h3>Event stream</h3><ol id="activity"></ol></aside></body></html>`
  );
}

/** A page saying what was not found (the 404 body). */
export function renderNotFound(base: string, what: string): string {
  return renderPage("not found", base, `<section class="not-found"><h1>Not found</h1><p>${esc(what)}</p></section>`, "");
}
