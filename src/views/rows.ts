// The table rows of gavel's objects, kubectl-style: the columns of Executions (as trees),
// Agents, GuardPolicies and ToolApprovals (pending first), plain and with -o wide. What `gavel get` prints and the web view's list shows.
import type { Agent, Execution, GuardPolicy, ToolApproval } from "../api/types.js";
import type { GavelObject } from "./kube.js";
import type { Resource } from "./resources.js";
import { age, fixed2, humanDuration, oneLine } from "./table.js";

function condition(obj: Agent | GuardPolicy, type: string): string {
  return obj.status?.conditions?.find((c) => c.type === type)?.status ?? "Unknown";
}

function validatorTypes(a: Agent): string {
  const v = a.spec.execution?.validation;
  return Array.isArray(v) ? v.map((x) => x.type).join(",") : v !== undefined ? "judge-output" : "<none>";
}

function judgesOf(a: Agent): string {
  const v = a.spec.execution?.validation;
  if (!Array.isArray(v)) return "<none>";
  const names = v.flatMap((x) => (x.type === "semantic" ? [x.judge_agent] : x.type === "multi_judge" ? x.judges : []));
  return names.length === 0 ? "<none>" : names.join(",");
}

/** Header and cells of one object, by kind; `wide` adds kubectl's priority-1 columns. */
export function columns(r: Resource, wide: boolean): string[] {
  switch (r.kind) {
    case "Execution":
      return [
        "NAME",
        "AGENT",
        "PHASE",
        "ITERATION",
        "SCORE",
        "AGE",
        ...(wide ? ["PURPOSE", "VERDICT", "PARENT", "MCP-CALLS", "MESSAGE"] : []),
      ];
    case "Agent":
      return ["NAME", "ROLE", "MODE", "VALIDATION", "READY", "AGE", ...(wide ? ["IMAGE", "JUDGES", "TOOL-JUDGES", "MCP-SERVERS"] : [])];
    case "GuardPolicy":
      return ["NAME", "ENTRIES", "READY", "AGE", ...(wide ? ["COUNTS", "REVOKED"] : [])];
    case "ToolApproval":
      return ["NAME", "PHASE", "AGE", "EXECUTION", "TOOL", "DIGEST", "DEADLINE", ...(wide ? ["TRIGGER", "DECIDED-BY", "MESSAGE"] : [])];
  }
}

/** The verdict column of a judge child: score/confidence, or the rejection. */
function verdictCell(ex: Execution): string {
  const st = ex.status;
  if (st?.verdict !== undefined) return `${fixed2(st.verdict.score)}/${fixed2(st.verdict.confidence)}`;
  if (st?.rejection !== undefined) return `rejected: ${st.rejection}`;
  return ex.spec.parent !== undefined ? "<pending>" : "";
}

/** An Execution's row: its own columns, with -o wide its parent, verdict and message. */
function executionCells(ex: Execution, name: string, wide: boolean, now: number): string[] {
  const st = ex.status;
  const base = [
    name,
    ex.spec.agentRef.name,
    st?.phase ?? "Pending",
    st?.iteration !== undefined ? String(st.iteration) : "",
    fixed2(st?.score),
    age(ex.metadata.creationTimestamp, now),
  ];
  if (!wide) return base;
  const p = ex.spec.parent;
  return [
    ...base,
    p !== undefined ? `${p.purpose}:i${p.iteration}/v${p.validatorIndex}` : "",
    verdictCell(ex),
    p?.name ?? "",
    mcpCallsCell(ex),
    oneLine(st?.message, 80),
  ];
}

/** The decided calls to each MCP server among the status's recent calls (`files:3/1` = 3 calls, 1 blocked), "" when none. */
export function mcpCallsCell(ex: Execution): string {
  const by = new Map<string, { calls: number; blocked: number }>();
  for (const it of ex.status?.iterations ?? []) {
    for (const c of it.toolCalls?.recent ?? []) {
      if (c.server === undefined) continue;
      const n = by.get(c.server) ?? { calls: 0, blocked: 0 };
      n.calls++;
      if (!c.allowed) n.blocked++;
      by.set(c.server, n);
    }
  }
  return [...by].map(([s, n]) => `${s}:${n.calls}/${n.blocked}`).join(",");
}

/** An Agent's MCP servers and their form (`files(stdio)`, `remote(url)`, `everything(image)`), "<none>" when it has none. */
function mcpServersCell(a: Agent): string {
  const servers = a.spec.mcp_servers ?? [];
  const form = (s: (typeof servers)[number]) => (s.url !== undefined ? "url" : s.image !== undefined ? "image" : "stdio");
  return servers.length === 0 ? "<none>" : servers.map((s) => `${s.name}(${form(s)})`).join(",");
}

/** An Agent's row: role, mode, validators, readiness; with -o wide its image and judges. */
function agentCells(a: Agent, name: string, wide: boolean, now: number): string[] {
  const base = [
    name,
    a.metadata.labels?.role ?? "",
    a.spec.execution?.mode ?? "",
    validatorTypes(a),
    condition(a, "Ready"),
    age(a.metadata.creationTimestamp, now),
  ];
  if (!wide) return base;
  const toolJudges = (a.spec.execution?.tool_validation ?? []).map((t) => t.judge_agent);
  return [
    ...base,
    a.spec.runtime?.image ?? "<default>",
    judgesOf(a),
    toolJudges.length === 0 ? "<none>" : toolJudges.join(","),
    mcpServersCell(a),
  ];
}

/** A GuardPolicy's row: its entry count and readiness; with -o wide the counts by table and the revoked tools. */
function guardPolicyCells(g: GuardPolicy, name: string, wide: boolean, now: number): string[] {
  const counts = g.status?.counts ?? {};
  const entries = Object.values(counts).reduce((a, b) => a + b, 0);
  const base = [name, g.status?.counts !== undefined ? String(entries) : "", condition(g, "Ready"), age(g.metadata.creationTimestamp, now)];
  if (!wide) return base;
  const revoked = (g.spec.revoked_tools ?? []).map((t) => t.tool);
  return [
    ...base,
    Object.entries(counts)
      .map(([k, v]) => `${k}=${v}`)
      .join(",") || "<none>",
    revoked.length === 0 ? "<none>" : revoked.join(","),
  ];
}

/** A ToolApproval's row: where it stands, its call (execution, tool, digest prefix), the deadline from now; -o wide why and who. */
function toolApprovalCells(a: ToolApproval, name: string, wide: boolean, now: number): string[] {
  const phase = a.status?.phase ?? "Pending";
  const left = Date.parse(a.spec.deadline) - now;
  const deadline = phase !== "Pending" ? "" : left > 0 ? `in ${humanDuration(left)}` : "expired";
  const base = [
    name,
    phase,
    age(a.metadata.creationTimestamp, now),
    a.spec.execution,
    a.spec.tool,
    a.spec.digest.replace(/^sha256:/, "").slice(0, 12),
    deadline,
  ];
  if (!wide) return base;
  return [...base, a.spec.trigger, a.status?.decision?.decidedBy ?? "", oneLine(a.status?.message, 80)];
}

/** Pending approvals first, the nearest deadline first among them; then the others, newest first. */
export function approvalOrder(items: readonly ToolApproval[]): ToolApproval[] {
  const pending = (a: ToolApproval) => (a.status?.phase ?? "Pending") === "Pending";
  return [...items].sort((x, y) => {
    if (pending(x) !== pending(y)) return pending(x) ? -1 : 1;
    if (pending(x)) return Date.parse(x.spec.deadline) - Date.parse(y.spec.deadline);
    return (y.metadata.creationTimestamp ?? "").localeCompare(x.metadata.creationTimestamp ?? "");
  });
}

/** One object's row under columns(r, wide); `depth` indents a child under its parent (--tree). */
export function cells(r: Resource, obj: GavelObject, wide: boolean, now: number, depth = 0): string[] {
  const name = depth === 0 ? obj.metadata.name : `${"   ".repeat(depth - 1)}└─ ${obj.metadata.name}`;
  switch (r.kind) {
    case "Execution":
      return executionCells(obj as Execution, name, wide, now);
    case "Agent":
      return agentCells(obj as Agent, name, wide, now);
    case "GuardPolicy":
      return guardPolicyCells(obj as GuardPolicy, name, wide, now);
    case "ToolApproval":
      return toolApprovalCells(obj as ToolApproval, name, wide, now);
  }
}
