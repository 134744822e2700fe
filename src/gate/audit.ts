// The audit trail of the gate: one JSON line (and one event) per decision, with the tool and
// the nested key paths of its arguments but never their values (vaglio's privacy rule).
import type { Writable } from "node:stream";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { JsonValue } from "../api/types.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { mcpToolDigest } from "./mcp-tools.js";

/** What is recorded about one decision. */
export interface AuditRecord {
  ts: string;
  namespace: string;
  execution: string;
  iteration: number;
  step: number;
  toolCallId: string;
  tool: string;
  /** Key paths of the arguments, e.g. `opts.paths[]`, never values. */
  arg_keys: string[];
  allowed: boolean;
  blocked_by: ToolCallDecision["blocked_by"];
  check?: string;
  /** The guard's reason (rule and pattern names only); judge reasoning is not copied here. */
  guard_reason?: string;
  flags?: string[];
  /** What GuardPolicy rules in warn mode would have denied (reasons). */
  warnings?: string[];
  /** What rules in dryrun mode would have denied (reasons): in the audit and events only. */
  dryrun?: string[];
  skipped_judges: boolean;
  judges: { judge: string; child: string; passed: boolean; score?: number; confidence?: number; rejection?: string }[];
  latency_ms: number;
  policy_version?: number;
  /** An MCP tool's server, its own name, the digest of its listing (what `tool_registry` pins) and whether it was pinned (ADR 0051). */
  mcp?: { server: string; tool: string; digest: string; pinned: boolean };
}

/** Where audit records go; a sink must not throw into the decision path. */
export interface AuditSink {
  record(record: AuditRecord): void | Promise<void>;
}

/** Nested key paths of a JSON value: objects add `.key`, arrays add `[]`; sorted, unique. */
export function argKeyPaths(value: JsonValue): string[] {
  const out = new Set<string>();
  const walk = (v: JsonValue, prefix: string): void => {
    if (Array.isArray(v)) {
      for (const item of v) walk(item, `${prefix}[]`);
    } else if (v !== null && typeof v === "object") {
      for (const [k, item] of Object.entries(v)) {
        const path = prefix === "" ? k : `${prefix}.${k}`;
        out.add(path);
        walk(item, path);
      }
    }
  };
  walk(value, "");
  return [...out].sort();
}

/** The audit record of a decision. Only keys, names, numbers and the guard's reason are copied. */
export function auditRecord(p: ToolCallProposal, d: ToolCallDecision, now: Date, policyVersion?: number): AuditRecord {
  return {
    ts: now.toISOString(),
    namespace: p.namespace,
    execution: p.execution,
    iteration: p.iteration,
    step: p.step,
    toolCallId: p.toolCallId,
    tool: p.tool,
    arg_keys: argKeyPaths(p.args),
    allowed: d.allowed,
    blocked_by: d.blocked_by,
    ...(d.guard.check !== undefined ? { check: d.guard.check } : {}),
    ...(d.guard.reason !== undefined ? { guard_reason: d.guard.reason } : {}),
    ...(d.guard.flags !== undefined && d.guard.flags.length > 0 ? { flags: [...d.guard.flags] } : {}),
    ...(d.guard.warnings !== undefined && d.guard.warnings.length > 0 ? { warnings: [...d.guard.warnings] } : {}),
    ...(d.guard.dryrun !== undefined && d.guard.dryrun.length > 0 ? { dryrun: [...d.guard.dryrun] } : {}),
    skipped_judges: d.skippedJudges,
    judges: d.judges.map((j) => ({
      judge: j.judge,
      child: j.child,
      passed: j.passed,
      ...(j.result !== undefined ? { score: j.result.score, confidence: j.result.confidence } : {}),
      ...(j.rejection !== undefined ? { rejection: j.rejection } : {}),
    })),
    latency_ms: d.latencyMs,
    ...(policyVersion !== undefined ? { policy_version: policyVersion } : {}),
    ...(p.mcp !== undefined ? { mcp: { server: p.mcp.server, tool: p.mcp.tool, digest: mcpToolDigest(p.mcp), pinned: p.mcp.pinned } } : {}),
  };
}

/**
 * The data of a `toolcall.decision` event: what the audit keeps (key paths, never values),
 * so the event stream is the audit. Local mode and the cluster gate publish the same.
 */
export function decisionEvent(r: AuditRecord): Record<string, unknown> {
  return {
    iteration: r.iteration,
    step: r.step,
    tool: r.tool,
    allowed: r.allowed,
    blocked_by: r.blocked_by,
    ...(r.check !== undefined ? { check: r.check } : {}),
    // Adaptive rules with action flag that matched (Guardian's threat events): the call was allowed.
    ...(r.flags !== undefined && r.flags.length > 0 ? { flags: [...r.flags] } : {}),
    // Rules in warn and dryrun mode: what they would have denied (GuardPolicy enforcementAction).
    ...(r.warnings !== undefined ? { warnings: [...r.warnings] } : {}),
    ...(r.dryrun !== undefined ? { dryrun: [...r.dryrun] } : {}),
    toolCallId: r.toolCallId,
    arg_keys: r.arg_keys,
    latency_ms: r.latency_ms,
    ...(r.mcp !== undefined ? { mcp: { ...r.mcp } } : {}),
    judges: r.judges.map((j) => ({ ...j })),
    reason:
      r.guard_reason ??
      (r.judges.length > 0
        ? r.judges.map((j) => `${j.judge}: ${j.passed ? "passed" : "failed"}`).join(", ")
        : r.allowed
          ? r.skipped_judges
            ? "approved by the guard (skip_judge)"
            : "approved by the guard"
          : "blocked"),
  };
}

/**
 * What a decision event says beyond allowed/blocked: ` [flagged: a, b]` (flag rules),
 * ` [warned: <reason>; ...]` (rules in warn mode), or "". Dry-run results are not shown.
 */
export function guardNotes(d: Record<string, unknown>): string {
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  const flags = list(d.flags);
  const warnings = list(d.warnings);
  return `${flags.length > 0 ? ` [flagged: ${flags.join(", ")}]` : ""}${warnings.length > 0 ? ` [warned: ${warnings.join("; ")}]` : ""}`;
}

/** Writes each record as one JSON line. */
export function jsonLinesAudit(out: Writable): AuditSink {
  return {
    record(r) {
      out.write(`${JSON.stringify(r)}\n`);
    },
  };
}

/** Publishes each record as a `toolcall.decision` event through the given publisher. */
export function eventAudit(publish: (type: string, execution: string, data: Record<string, unknown>) => Promise<unknown>): AuditSink {
  return {
    async record(r) {
      await publish("toolcall.decision", r.execution, { ...r });
    },
  };
}

/**
 * Replaces every argument string value of at least `min` characters found in text. Used on
 * judge reasoning before it leaves the gate, since a judge may quote what it judged.
 */
export function scrubArgValues(text: string, args: JsonValue, min = 6): string {
  const values: string[] = [];
  const walk = (v: JsonValue): void => {
    if (typeof v === "string") {
      if (v.length >= min) values.push(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(args);
  values.sort((a, b) => b.length - a.length);
  let out = text;
  for (const v of values) if (out.includes(v)) out = out.split(v).join("[arg value]");
  return out;
}

/**
 * Hands a decision's record to the sink and logs it; a failing sink is logged, never thrown,
 * so a broken audit never blocks or flips a decision.
 */
export async function recordDecision(r: AuditRecord, sink: AuditSink | undefined, logger: Logger | undefined): Promise<void> {
  try {
    await sink?.record(r);
  } catch (err) {
    // Fail-safe like vaglio's log: a broken audit sink never blocks or flips a decision.
    logger?.warn({ err: messageOf(err), toolCallId: r.toolCallId }, "audit record failed");
  }
  // Guardian logs a threat event TOOL_HASH_MISMATCH with the denial.
  if (r.check === "hash")
    logger?.warn(
      { threat: "TOOL_HASH_MISMATCH", tool: r.tool, toolCallId: r.toolCallId, execution: `${r.namespace}/${r.execution}` },
      "tool code differs from its registration",
    );
  // A call worth a look (blocked, judged, flagged, warned) at info; a plain allowed one at debug: a
  // busy worker's every call at info cost 4 % of the controller's time in the gate bench, and
  // gavel_tool_calls_total counts them all.
  const notable = !r.allowed || r.judges.length > 0 || (r.flags?.length ?? 0) > 0 || (r.warnings?.length ?? 0) > 0;
  logger?.[notable ? "info" : "debug"](
    {
      execution: `${r.namespace}/${r.execution}`,
      iteration: r.iteration,
      toolCallId: r.toolCallId,
      tool: r.tool,
      arg_keys: r.arg_keys,
      allowed: r.allowed,
      blocked_by: r.blocked_by,
      check: r.check,
      flags: r.flags,
      warnings: r.warnings,
      dryrun: r.dryrun,
      latency_ms: r.latency_ms,
    },
    "tool call decided",
  );
}
