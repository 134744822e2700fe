// The web view's two static files, served by gavel itself (no CDN: clusters and this project's
// machines may have no internet). The script only swaps in the HTML the server rendered and
// escaped, from the page's server-sent events; it builds no markup from data itself.

/** The page's script: follows the stream named by <body data-stream>, replaces #view on each "view" event. */
export const UI_JS = `"use strict";
(function () {
  var stream = document.body.getAttribute("data-stream");
  var live = document.getElementById("live");
  var view = document.getElementById("view");
  function state(s, text) { live.setAttribute("data-state", s); live.textContent = text; }
  if (!stream || typeof EventSource === "undefined") { state("static", ""); return; }
  var es = new EventSource(stream);
  var updates = 0;
  es.onopen = function () { state("live", "live"); };
  es.onerror = function () { if (es.readyState === EventSource.CLOSED) state("closed", "disconnected"); else state("reconnecting", "reconnecting…"); };
  es.addEventListener("view", function (e) {
    view.innerHTML = e.data;
    updates += 1;
    document.body.setAttribute("data-updates", String(updates));
  });
  es.addEventListener("gone", function (e) {
    view.innerHTML = e.data;
    state("closed", "deleted");
    es.close();
  });
  es.addEventListener("activity", function (e) {
    var a = JSON.parse(e.data);
    var log = document.getElementById("activity");
    document.getElementById("activity-log").hidden = false;
    var li = document.createElement("li");
    li.textContent = a.time.slice(11, 23) + "  " + a.execution + "  " + a.type;
    log.insertBefore(li, log.firstChild);
    while (log.childNodes.length > 50) log.removeChild(log.lastChild);
  });
})();
`;

/** The page's style sheet. */
export const UI_CSS = `:root { --bg: #fbfbfa; --fg: #1d2327; --muted: #68717a; --line: #dde1e4; --pass: #2e8540; --fail: #c0392b; --run: #b7791f; --accent: #2f5d8a; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
nav { display: flex; gap: 1em; align-items: center; padding: .5em 1.25em; background: #1f2b36; color: #fff; }
nav a.home { color: #fff; font-weight: 700; text-decoration: none; letter-spacing: .03em; }
.live { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #54606b; }
.live[data-state=live] { background: var(--pass); }
.live[data-state=reconnecting], .live[data-state=closed] { background: var(--fail); }
.live[data-state=static] { display: none; }
main { padding: 1em 1.25em; max-width: 1200px; }
a { color: var(--accent); }
h1 { font-size: 20px; margin: .2em 0 .4em; } h2 { font-size: 16px; margin: .2em 0 .5em; } h3 { font-size: 14px; margin: .8em 0 .3em; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
td.name { white-space: nowrap; }
tr.depth-1 td.name { padding-left: 1.5em; } tr.depth-2 td.name { padding-left: 3em; } tr.depth-3 td.name, tr.depth-4 td.name { padding-left: 4.5em; }
.phase { display: inline-block; font-size: 12px; font-weight: 600; padding: 0 8px; border-radius: 10px; background: #e7eaed; color: var(--fg); vertical-align: middle; }
.phase-succeeded { background: #dff3e4; color: var(--pass); }
.phase-failed, .phase-timedout, .phase-cancelled { background: #f8e0dd; color: var(--fail); }
.phase-running, .phase-validating, .phase-refining, .phase-pending { background: #fbf0d9; color: var(--run); }
dl.facts { display: flex; flex-wrap: wrap; gap: .2em 1.2em; margin: 0 0 .5em; color: var(--muted); }
dl.facts dt { font-weight: 600; } dl.facts dt::after { content: ":"; } dl.facts dd { margin: 0 0 0 -.9em; }
ol.iterations { list-style: none; padding: 0; }
li.iteration { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .6em .9em; margin: 0 0 .8em; }
ul.validators, ul.judges, ul.signals { list-style: none; padding-left: 0; margin: .3em 0; }
li.validator { border-left: 4px solid var(--line); padding: .3em .7em; margin: .4em 0; }
li.validator.state-passed { border-color: var(--pass); } li.validator.state-failed { border-color: var(--fail); }
li.validator.state-running, li.validator.state-pending { border-color: var(--run); }
ul.judges { margin-left: 1.2em; }
li.judge { border-left: 2px dashed var(--line); padding: .2em .7em; margin: .3em 0; }
.row { display: flex; flex-wrap: wrap; gap: .3em 1em; align-items: center; }
.state { color: var(--muted); font-size: 12px; }
.score { display: inline-flex; align-items: center; gap: .5em; }
.score-label { color: var(--muted); font-size: 12px; }
svg.bar { width: 180px; height: 12px; }
svg.bar .track { fill: #eceff1; } svg.bar .fill { fill: var(--accent); }
.score-pass svg.bar .fill { fill: var(--pass); } .score-fail svg.bar .fill { fill: var(--fail); }
svg.bar .threshold { stroke: var(--fg); stroke-width: 2px; vector-effect: non-scaling-stroke; }
.score-text, .confidence { font-variant-numeric: tabular-nums; font-size: 13px; }
.confidence { color: var(--muted); }
.waiting { color: var(--run); font-style: italic; }
.rejection { color: var(--fail); }
p.reasoning, p.feedback, p.message, p.parent, details.folded { margin: .2em 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.label { color: var(--muted); font-size: 12px; font-weight: 600; }
table.toolcalls td.id { color: var(--muted); font-size: 12px; }
table.toolcalls td.server { white-space: nowrap; }
tr.toolcall.allowed td.outcome { color: var(--pass); } tr.toolcall.blocked td.outcome { color: var(--fail); font-weight: 600; }
.counts { color: var(--muted); font-weight: 400; }
aside.activity { margin: 0 1.25em 1em; max-width: 1200px; }
aside.activity ol { max-height: 12em; overflow: auto; margin: 0; padding: .4em .8em; list-style: none; background: #1f2b36; color: #cfd6dc; font: 11px/1.4 ui-monospace, monospace; border-radius: 4px; }
details.folded summary { cursor: pointer; }
details.folded .more { color: var(--muted); font-size: 12px; }
details.folded .full { white-space: pre-wrap; overflow-wrap: anywhere; font: 12px/1.4 ui-monospace, monospace; background: #f3f4f5; padding: .4em .6em; margin: .2em 0; max-height: 24em; overflow: auto; }
`;
