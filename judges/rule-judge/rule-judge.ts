// The rule judge: a deterministic graded judge with no model. A tool-call payload goes
// through the guard, then the graded score; a validation payload through the output rules.
import { type JudgePayload, type Verdict, stringField, stringList, unit } from "../shared/judge-io.js";
import { guardViolation } from "./guard.js";
import { type FileReader, evaluateRules, parseRules } from "./output-rules.js";
import { scoreToolCall } from "./tool-call-score.js";

/** Settings read at the edge (env) and passed in. */
export interface RuleJudgeConfig {
  /** Below it the call or output is denied (score 0). Default 0.30, as in the vaglio. */
  threshold: number;
  /** Confidence of the graded heuristics; rule checks and guard blocks are certain (1.0). */
  heuristicConfidence: number;
  /** Extra rules for every validation payload, one per line (env RULE_JUDGE_RULES). */
  extraRules: string;
  /** Operator-declared read-only tools; undefined: guessed from the name. */
  readOnlyTools?: string[];
}

export const DEFAULT_CONFIG: RuleJudgeConfig = { threshold: 0.3, heuristicConfidence: 0.9, extraRules: "" };

/** Reads the configuration from env; a bad value is an error naming the variable. */
export function configFromEnv(env: NodeJS.ProcessEnv): RuleJudgeConfig {
  const config: RuleJudgeConfig = { ...DEFAULT_CONFIG, extraRules: env.RULE_JUDGE_RULES ?? "" };
  if (env.RULE_JUDGE_THRESHOLD !== undefined) {
    const t = Number(env.RULE_JUDGE_THRESHOLD);
    if (!(t >= 0 && t <= 1))
      throw new Error(`RULE_JUDGE_THRESHOLD must be a number in [0, 1], got ${JSON.stringify(env.RULE_JUDGE_THRESHOLD)}`);
    config.threshold = t;
  }
  if (env.RULE_JUDGE_READ_ONLY_TOOLS !== undefined) {
    config.readOnlyTools = env.RULE_JUDGE_READ_ONLY_TOOLS.split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  }
  return config;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Applies the threshold: below it the verdict is a denial scored 0, the raw score kept. */
function thresholded(raw: number, threshold: number, reasons: string[], base: Omit<Verdict, "score" | "reasoning">): Verdict {
  const score = unit(raw);
  const signals = [...(base.signals ?? [])];
  const approved = score >= threshold;
  signals.push({
    category: "threshold",
    score: approved ? 1 : 0,
    message: `score ${score.toFixed(2)} ${approved ? ">=" : "<"} threshold ${threshold.toFixed(2)}`,
  });
  const detail = reasons.length > 0 ? ` (${reasons.join("; ")})` : "";
  return {
    score: approved ? score : 0,
    confidence: base.confidence,
    reasoning: approved
      ? `approved: score ${score.toFixed(2)}${detail}`
      : `judge: score ${score.toFixed(2)} < threshold ${threshold.toFixed(2)}${detail}`,
    signals,
    metadata: { ...base.metadata, judge_kind: "rule-based-v1", raw_score: score, threshold, blocked_by: approved ? null : "judge" },
  };
}

/** Judges a proposed tool call: guard first (a hit scores 0, certain), then the graded score. */
export function judgeToolCall(payload: JudgePayload, config: RuleJudgeConfig): Verdict {
  const call = payload.proposed_tool_call as Record<string, unknown>;
  const tool = typeof call.tool === "string" ? call.tool : typeof call.name === "string" ? call.name : "";
  const rawArgs = call.args ?? call.arguments;
  const args = isObject(rawArgs) ? rawArgs : {};
  const violation = guardViolation(tool, args);
  if (violation !== undefined) {
    return {
      score: 0,
      confidence: 1,
      reasoning: `guard: ${violation}`,
      signals: [{ category: "guard", score: 0, message: violation }],
      metadata: { judge_kind: "rule-based-v1", blocked_by: "guard", tool },
    };
  }
  const intent = [stringField(payload, "task"), stringField(payload, "user_objective")].filter((s) => s !== undefined).join(" ");
  const graded = scoreToolCall({
    tool,
    args,
    intent,
    ...(config.readOnlyTools !== undefined ? { readOnlyTools: config.readOnlyTools } : {}),
  });
  const threshold = parseRules(stringField(payload, "criteria") ?? "").threshold ?? config.threshold;
  return thresholded(graded.score, threshold, graded.notes, {
    confidence: config.heuristicConfidence,
    signals: graded.signals,
    metadata: { tool },
  });
}

/**
 * Judges a worker's output: the rules from the criteria and env, as a pass ratio. Without
 * any rule the only check is that there is output at all.
 */
export async function judgeOutput(payload: JudgePayload, config: RuleJudgeConfig, read: FileReader): Promise<Verdict> {
  const output = stringField(payload, "output", "content", "generated_manifest", "generated_workflow") ?? "";
  const criteria = [stringField(payload, "criteria", "intent") ?? "", config.extraRules].join("\n");
  const set = parseRules(criteria);
  const mounts = stringList(payload, "worker_mounts");
  const outcomes = await evaluateRules(set.rules, output, mounts, read);
  const signals: NonNullable<Verdict["signals"]> = outcomes.map((o) => ({
    category: `rule:${o.rule.kind}`,
    score: o.passed ? 1 : 0,
    message: o.message,
  }));
  if (outcomes.length === 0) {
    const present = output.trim() !== "";
    signals.push({
      category: "rule:non_empty_output",
      score: present ? 1 : 0,
      message: present ? "the output is not empty" : "the output is empty",
    });
  }
  // A malformed rule fails: a judge that silently skipped it would pass what it was told to check.
  for (const e of set.errors) signals.push({ category: "rule:invalid", score: 0, message: e });
  const passed = signals.filter((s) => s.score === 1).length;
  const failures = signals.filter((s) => s.score === 0).map((s) => s.message);
  const raw = passed / signals.length;
  const reasons =
    failures.length > 0 ? [`${passed}/${signals.length} rules pass`, ...failures] : [`${passed}/${signals.length} rules pass`];
  return thresholded(raw, set.threshold ?? config.threshold, reasons, { confidence: 1, signals, metadata: { rules: signals.length } });
}

/** The whole judge: picks the mode from the payload. */
export async function ruleJudge(payload: JudgePayload, config: RuleJudgeConfig, read: FileReader): Promise<Verdict> {
  if (isObject(payload.proposed_tool_call)) return judgeToolCall(payload, config);
  return judgeOutput(payload, config, read);
}
