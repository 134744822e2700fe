// Refusals the model can act on (issue 25, item 3; docs/protocol.md "Refusals"): every denial
// told to a worker — by the guard, a judge or a person — has one shape, whether it reaches the
// model through gavel's own worker loop (as text) or through the MCP endpoint (as an isError
// result whose structuredContent is this shape): which tier and who, why, and what would be
// allowed instead when the gate knows it (the Agent's tools, its volumes' paths, a tool's
// command allowlist). Pure: the gate computes the alternatives, the workers render them.
import type { GuardDecision, RefusalAlternatives, ToolCallDecision } from "../api/protocol.js";
import type { Agent, JsonObject } from "../api/types.js";
import type { AgentScope } from "./guard/context.js";

/** A denial as the worker is told it. */
export interface Refusal {
  denied: true;
  tool: string;
  /** The tier that denied: guard, judge or approval (a person, or nobody in time). */
  blocked_by: ToolCallDecision["blocked_by"];
  /** Who decided: `guard:<check>`, `judge:<name>[,<name>]`, `user:<name>`, or `approval:timed_out` / `approval:withdrawn`. */
  by: string;
  /** The guard's check, when the guard denied. */
  check?: GuardDecision["check"];
  reason: string;
  /** What would be allowed instead, when known. */
  instead?: RefusalAlternatives;
  /** The judges that did not pass, with their score and reasoning or why they gave none. */
  judges: { judge: string; score?: number; confidence?: number; reasoning?: string; rejection?: string }[];
}

/** The refusal of a denied decision, for the tool it was proposed for. */
export function refusalOf(tool: string, d: ToolCallDecision): Refusal {
  const failed = d.judges.filter((j) => !j.passed);
  return {
    denied: true,
    tool,
    blocked_by: d.blocked_by,
    by: deciderOf(d, failed),
    ...(d.blocked_by === "guard" && d.guard.check !== undefined ? { check: d.guard.check } : {}),
    reason: d.reason,
    ...(d.instead !== undefined && Object.keys(d.instead).length > 0 ? { instead: d.instead } : {}),
    judges: failed.map((j) => ({
      judge: j.judge,
      ...(j.result !== undefined ? { score: j.result.score, confidence: j.result.confidence, reasoning: j.result.reasoning } : {}),
      ...(j.rejection !== undefined ? { rejection: j.rejection } : {}),
    })),
  };
}

function deciderOf(d: ToolCallDecision, failed: ToolCallDecision["judges"]): string {
  if (d.blocked_by === "guard") return `guard:${d.guard.check ?? "guard"}`;
  if (d.blocked_by === "judge") return `judge:${failed.map((j) => j.judge).join(",")}`;
  const a = d.approval;
  if (a?.outcome === "denied") return `user:${a.decidedBy ?? "?"}`;
  return `approval:${a?.outcome ?? "required"}`;
}

/** The text a model reads: who denied and why, what would be allowed instead, each judge's reasoning. */
export function refusalText(r: Refusal): string {
  const who = r.blocked_by === "guard" ? `the guard${r.check !== undefined ? ` (${r.check} check)` : ""}` : "a judge";
  // A person's answer, or nobody's in time, is told as such: "denied by USER: reason", "approval timed out".
  const lines = [r.blocked_by === "approval" ? `Tool call ${r.reason}` : `Tool call denied by ${who}: ${r.reason}`];
  const instead = insteadText(r.instead);
  if (instead !== undefined) lines.push(`Allowed instead: ${instead}.`);
  for (const j of r.judges) {
    const why =
      j.reasoning !== undefined
        ? `score ${j.score ?? "?"}, confidence ${j.confidence ?? "?"}: ${j.reasoning}`
        : (j.rejection ?? "rejected");
    lines.push(`- judge ${j.judge}: ${why}`);
  }
  lines.push("The call was not executed.");
  return lines.join("\n");
}

function insteadText(i: RefusalAlternatives | undefined): string | undefined {
  if (i === undefined) return undefined;
  const parts = [
    ...(i.tools !== undefined && i.tools.length > 0 ? [`the tools ${i.tools.join(", ")}`] : []),
    ...(i.paths !== undefined && i.paths.length > 0 ? [`paths under ${i.paths.join(", ")}`] : []),
    ...(i.commands !== undefined && i.commands.length > 0 ? [`commands starting ${i.commands.map((c) => `"${c}"`).join(", ")}`] : []),
  ];
  return parts.length > 0 ? parts.join("; ") : undefined;
}

/**
 * What the guard would allow instead of a call it denied, when that is known from the Agent:
 * a tool outside `spec.tools` → the tools it declares; a file tool's path outside every volume
 * → the volumes' mount paths; a denied command of a tool with an allowlist → that allowlist.
 * Nothing is offered when the denial is about the call's content itself (a secret file inside
 * the workspace, a destructive command): the model must change what it asks, not where.
 */
export function guardAlternatives(
  tool: string,
  args: JsonObject,
  guard: GuardDecision,
  scope: AgentScope,
  agent: Pick<Agent, "spec">,
): RefusalAlternatives | undefined {
  if (guard.approved) return undefined;
  if (guard.check === "capability" && guard.reason?.startsWith("capability_boundary: missing tool:") === true)
    return { tools: [...scope.tools.keys()] };
  if (guard.check !== "destructive_pattern") return undefined;
  const entry = scope.tools.get(tool);
  if (entry?.allowlist !== undefined && entry.allowlist.length > 0) return { commands: [...entry.allowlist] };
  const mounts = (agent.spec.volumes ?? []).map((v) => v.mount_path).filter((m): m is string => typeof m === "string" && m.startsWith("/"));
  const path = args.path;
  if (
    tool.startsWith("fs.") &&
    typeof path === "string" &&
    path.startsWith("/") &&
    mounts.length > 0 &&
    !mounts.some((m) => within(path, m))
  )
    return { paths: mounts };
  return undefined;
}

function within(path: string, dir: string): boolean {
  const d = dir.endsWith("/") ? dir : `${dir}/`;
  return path === dir || path.startsWith(d);
}
