// The OpenTelemetry GenAI semantic conventions gavel's spans follow (development status, so the
// names are kept here rather than imported from the incubating entry point of
// @opentelemetry/semantic-conventions, as that package advises), and gavel's own attributes.
import type { Attributes } from "@opentelemetry/api";

export const GEN_AI = {
  operationName: "gen_ai.operation.name",
  agentName: "gen_ai.agent.name",
  agentId: "gen_ai.agent.id",
  conversationId: "gen_ai.conversation.id",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  evaluationResult: "gen_ai.evaluation.result",
  evaluationName: "gen_ai.evaluation.name",
  evaluationScoreValue: "gen_ai.evaluation.score.value",
  evaluationScoreLabel: "gen_ai.evaluation.score.label",
  evaluationExplanation: "gen_ai.evaluation.explanation",
  errorType: "error.type",
} as const;

/** gen_ai.operation.name values gavel records. */
export const OPERATION = { invokeAgent: "invoke_agent", executeTool: "execute_tool" } as const;

/** gavel's own attributes (no GenAI convention covers them). Never an argument value. */
export const GAVEL = {
  namespace: "k8s.namespace.name",
  execution: "gavel.execution.name",
  executionUid: "gavel.execution.uid",
  phase: "gavel.execution.phase",
  score: "gavel.score",
  iteration: "gavel.iteration",
  iterationOutcome: "gavel.iteration.outcome",
  workerExitCode: "gavel.worker.exit_code",
  validatorIndex: "gavel.validator.index",
  validatorType: "gavel.validator.type",
  passed: "gavel.passed",
  confidence: "gavel.confidence",
  judgeChild: "gavel.judge.child",
  judgePurpose: "gavel.judge.purpose",
  judgeRejection: "gavel.judge.rejection",
  toolStep: "gavel.tool.step",
  decision: "gavel.guard.decision",
  blockedBy: "gavel.guard.blocked_by",
  decidedBy: "gavel.guard.decided_by",
  check: "gavel.guard.check",
  argKeys: "gavel.tool.arg_keys",
  /** The MCP server of a `<server>.<tool>` call (ADR 0051). */
  mcpServer: "gavel.mcp.server",
} as const;

/** Longest explanation kept on an evaluation event; the rest is in the Execution's status. */
export const EXPLANATION_LIMIT = 1024;

/** A gen_ai.evaluation.result event's attributes: a verdict (score, label, why) or a rejection. */
export function evaluationAttributes(v: {
  name: string;
  score?: number;
  passed?: boolean;
  explanation?: string;
  rejection?: string;
}): Attributes {
  const a: Attributes = { [GEN_AI.evaluationName]: v.name };
  if (v.score !== undefined) a[GEN_AI.evaluationScoreValue] = v.score;
  if (v.passed !== undefined) a[GEN_AI.evaluationScoreLabel] = v.passed ? "pass" : "fail";
  if (v.explanation !== undefined && v.explanation !== "")
    a[GEN_AI.evaluationExplanation] =
      v.explanation.length > EXPLANATION_LIMIT ? `${v.explanation.slice(0, EXPLANATION_LIMIT)}…` : v.explanation;
  if (v.rejection !== undefined) a[GEN_AI.errorType] = v.rejection;
  return a;
}
