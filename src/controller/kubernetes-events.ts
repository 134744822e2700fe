// What the Events on an Execution say, the notes `kubectl describe ex` lists: one per engine
// event, its reason from the event's type (IterationStarted, ValidatorResult, ...;
// WorkerGateUnreachable for exit 75), and one per tool call worth a look (ToolCallBlocked, ...);
// Warning for failures, and a sentence for a reader. The data as data stays in the event stream.
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import { guardNotes } from "../gate/audit.js";
import type { EventNote } from "./runtime/event-recorder.js";

type Data = Record<string, unknown>;

/** The Event note of one engine event: reason, Normal or Warning, and a sentence. */
export function engineEventNote(type: string, data: Data): EventNote {
  // A worker that gave up on an unreachable gate gets its own reason: `kubectl get events` then tells it from a failed agent.
  const reason =
    type === "worker.finished" && data.gateUnreachable !== undefined
      ? "WorkerGateUnreachable"
      : type
          .split(/[._]/)
          .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
          .join("");
  const bad =
    (type === "execution.phase" && ["Failed", "TimedOut", "Cancelled"].includes(String(data.phase))) ||
    (type === "validator.result" && data.passed === false) ||
    (type === "judge.finished" && data.rejection !== undefined) ||
    // stdout holds stderr too: a regex or a judge reading it may see log lines (declare spec.runtime.command).
    (type === "worker.finished" && (data.streamsMerged !== undefined || data.gateUnreachable !== undefined));
  return { type: bad ? "Warning" : "Normal", reason, message: sentence(type, data) };
}

/**
 * The note of a decided tool call worth a look in `kubectl describe ex`: blocked, judged,
 * flagged or warned; undefined for other allowed guard-only calls (only counted; dry-run
 * results stay in the audit and the event stream).
 */
export function toolCallNote(p: ToolCallProposal, d: ToolCallDecision): EventNote | undefined {
  const flags = d.guard.flags ?? [];
  const warned = (d.guard.warnings?.length ?? 0) > 0;
  if (d.allowed && d.judges.length === 0 && flags.length === 0 && !warned) return undefined;
  const flagged = guardNotes({ flags, warnings: d.guard.warnings });
  const what = d.allowed
    ? `allowed${d.judges.length > 0 ? ` after ${d.judges.map((j) => j.child).join(", ")}` : ""}${flagged}`
    : `blocked by ${d.blocked_by}${d.guard.check !== undefined ? ` (${d.guard.check})` : ""}${flagged}: ${d.reason}`;
  const reason = !d.allowed ? "ToolCallBlocked" : warned ? "ToolCallWarned" : flags.length > 0 ? "ToolCallFlagged" : "ToolCallAllowed";
  return {
    type: reason === "ToolCallAllowed" ? "Normal" : "Warning",
    reason,
    message: `iteration ${p.iteration} step ${p.step} ${p.tool} ${what}`,
  };
}

// One sentence per engine event type; an unknown type says its fields as "key value" pairs.
function sentence(type: string, d: Data): string {
  switch (type) {
    case "execution.started":
      return `Started with Agent ${text(d.agent)}`;
    case "execution.phase":
      return `Execution ${text(d.phase)}${d.score !== undefined ? ` with score ${num(d.score)}` : ""}${d.message !== undefined ? `: ${text(d.message)}` : ""}`;
    case "iteration.started":
      return `Iteration ${text(d.iteration)} started${d.feedback !== undefined ? `, with feedback: ${text(d.feedback)}` : ""}`;
    case "worker.finished":
      return workerFinished(d);
    case "validator.started":
      return `Iteration ${text(d.iteration)}: validator ${text(d.index)} (${text(d.type)}) started`;
    case "validator.result":
      return `Iteration ${text(d.iteration)}: validator ${text(d.index)} (${text(d.type)}) ${d.passed === true ? "passed" : "failed"}${scored(d)}${d.reasoning !== undefined && d.reasoning !== "" ? `: ${text(d.reasoning)}` : ""}`;
    case "judge.spawned":
      return `Judge ${text(d.judge)} started as Execution ${text(d.child)} for validator ${text(d.index)} of iteration ${text(d.iteration)}`;
    case "judge.finished":
      return d.rejection !== undefined
        ? `Judge ${text(d.judge)} (${text(d.child)}) gave no verdict: ${text(d.rejection)}`
        : `Judge ${text(d.judge)} (${text(d.child)}) finished${scored(d)}`;
    case "iteration.finished":
      return `Iteration ${text(d.iteration)} ${text(d.outcome)}${d.score !== undefined ? ` with score ${num(d.score)}` : ""}${d.reason !== undefined ? `: ${text(d.reason)}` : ""}`;
    default:
      return `${type}: ${Object.entries(d)
        .map(([k, v]) => `${k} ${text(v)}`)
        .join(", ")}`;
  }
}

function workerFinished(d: Data): string {
  const worker = `Worker of iteration ${text(d.iteration)}`;
  if (d.gateUnreachable !== undefined) return `${worker} gave up (exit ${text(d.exitCode)}): ${text(d.gateUnreachable)}`;
  const end = d.timedOut === true ? "timed out" : `exit ${text(d.exitCode)}`;
  return `${worker} finished: ${end}${d.streamsMerged !== undefined ? `; ${text(d.streamsMerged)}` : ""}`;
}

function scored(d: Data): string {
  if (d.score === undefined) return "";
  return `, score ${num(d.score)}${d.confidence !== undefined ? ` (confidence ${num(d.confidence)})` : ""}`;
}

function num(v: unknown): string {
  return typeof v === "number" ? String(Math.round(v * 1000) / 1000) : text(v);
}

function text(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return v === undefined || v === null ? "?" : JSON.stringify(v);
}
