// The gate's spans (docs/adr/0036-traces.md): an execute_tool span per decided call, under the
// worker's iteration span when the proposal carried its traceparent, and an invoke_agent span
// per tool judge, whose verdict is a gen_ai.evaluation.result event on the call's span. Key
// paths of the arguments, never a value; no judge reasoning (it may quote the arguments).
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import { argKeyPaths } from "./audit.js";
import { evaluationAttributes, GAVEL, GEN_AI, OPERATION } from "../telemetry/genai.js";
import { parseTraceparent } from "../telemetry/trace-context.js";
import type { TraceSpan, Tracing } from "../telemetry/tracing.js";

/** Who decided a call: the guard, a judge (blocking or approving), a person (approval), or the guard alone. */
export function decidedBy(d: ToolCallDecision): "guard" | "judge" | "approval" {
  if (d.approval !== undefined) return "approval";
  return d.blocked_by !== "none" ? d.blocked_by : d.judges.length > 0 ? "judge" : "guard";
}

/** The guard check that denied a call, "none" for a call the guard let through. */
export function decidingCheck(d: ToolCallDecision): string {
  return !d.allowed && d.blocked_by === "guard" ? (d.guard.check ?? "unknown") : "none";
}

/** Starts the call's execute_tool span; its attributes (the key paths walk the arguments) are built off the call's path. */
export function toolSpan(tracing: Tracing, p: ToolCallProposal, traceParent: string | undefined): TraceSpan {
  const parent = parseTraceparent(traceParent);
  return tracing.start({
    name: `${OPERATION.executeTool} ${p.tool}`,
    ...(parent !== undefined ? { parent } : {}),
    kind: "server",
    attributes: () => ({
      [GEN_AI.operationName]: OPERATION.executeTool,
      [GEN_AI.toolName]: p.tool,
      [GEN_AI.toolCallId]: p.toolCallId,
      [GEN_AI.toolType]: "function",
      [GAVEL.namespace]: p.namespace,
      [GAVEL.execution]: p.execution,
      [GAVEL.iteration]: p.iteration,
      [GAVEL.toolStep]: p.step,
      [GAVEL.argKeys]: argKeyPaths(p.args),
      ...(p.mcp !== undefined ? { [GAVEL.mcpServer]: p.mcp.server } : {}),
    }),
  });
}

/** Ends the call's span (when traced) with the decision, who decided and the deciding check; returns the decision. */
export function endToolSpan(span: TraceSpan | undefined, d: ToolCallDecision): ToolCallDecision {
  if (span === undefined) return d;
  span.setAttributes({
    [GAVEL.decision]: d.allowed ? "allowed" : "blocked",
    [GAVEL.blockedBy]: d.blocked_by,
    [GAVEL.decidedBy]: decidedBy(d),
    [GAVEL.check]: decidingCheck(d),
  });
  span.end();
  return d;
}

/** Starts a tool judge's invoke_agent span under the call's span. */
export function judgeSpan(tracing: Tracing, call: TraceSpan, judge: string): TraceSpan {
  return tracing.start({
    name: `${OPERATION.invokeAgent} ${judge}`,
    parent: call.ref,
    attributes: { [GEN_AI.operationName]: OPERATION.invokeAgent, [GEN_AI.agentName]: judge, [GAVEL.judgePurpose]: "tool_validation" },
  });
}

/** Ends a tool judge's span with its verdict or rejection; the verdict becomes an evaluation event on the call's span. */
export function endJudgeSpan(
  span: TraceSpan,
  call: TraceSpan,
  judge: string,
  run: { result?: { score: number; confidence: number }; rejection?: string; child: string },
  passed: boolean,
): void {
  const r = run.result;
  if (run.child !== "") span.setAttributes({ [GAVEL.judgeChild]: run.child });
  if (r !== undefined) span.setAttributes({ [GAVEL.score]: r.score, [GAVEL.confidence]: r.confidence });
  else span.setError(run.rejection ?? "malformed_output", `judge rejected: ${run.rejection ?? "malformed_output"}`);
  // No explanation: a tool judge's reasoning may quote the call's arguments (it stays in the status).
  call.addEvent(
    GEN_AI.evaluationResult,
    evaluationAttributes({
      name: judge,
      passed,
      ...(r !== undefined ? { score: r.score } : { rejection: run.rejection ?? "malformed_output" }),
    }),
  );
  span.end();
}
