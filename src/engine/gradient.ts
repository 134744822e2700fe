// GradientResult parsing: finds a judge's verdict in its final text output and validates
// it strictly. The controller, local mode and `gavel verdict` all go through here.
import type { ValidateFunction } from "ajv";
import type { GradientResult, JudgeRejectionReason, JudgeValidationSpec, JsonObject } from "../api/types.js";
import { validateGradientShape } from "./gradient-schema.js";
import { compileUserSchema } from "./validators/json-schema.js";
import { verdictKeyAfter } from "./verdict-keys.js";
import { lastJsonObject } from "./verdict-scan.js";
import { messageOf } from "../errors.js";

/** What a finished judge run amounts to: a verdict, or a rejection with its reason. */
export type JudgeOutcome = { ok: true; result: GradientResult } | { ok: false; rejection: JudgeRejectionReason; detail: string };

/** A finished judge run as a driver observes it. */
export interface JudgeRun {
  exitCode: number;
  stdout: string;
  timedOut?: boolean;
  cancelled?: boolean;
  /** The judge's own `execution.validation` (judge form), when it declares one. */
  validation?: JudgeValidationSpec;
}

function ajvErrors(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`).join("; ");
}

/**
 * Finds and validates the verdict in a judge's text output. Fenced (```json or ```) and
 * bare objects in prose are both found; the last JSON object naming a verdict field wins
 * (objects naming none are prose), and if it is not a valid GradientResult, or verdict-like
 * text follows it, the output is malformed: there is no fallback to earlier verdicts.
 * docs/judges.md states the rules.
 */
export function parseGradientResult(stdout: string, outputSchema?: JsonObject): JudgeOutcome {
  const text = stdout.charCodeAt(0) === 0xfeff ? stdout.slice(1) : stdout;
  const found = lastJsonObject(text);
  if (!found.ok) return { ok: false, rejection: "malformed_output", detail: found.detail };
  const later = verdictKeyAfter(text, found.span.end);
  if (later >= 0) {
    return {
      ok: false,
      rejection: "malformed_output",
      detail: `verdict-like text at offset ${later} follows the last complete verdict (offset ${found.span.start}); an earlier verdict is never used in its place`,
    };
  }
  const value = found.value;
  if (!validateGradientShape(value)) {
    return {
      ok: false,
      rejection: "malformed_output",
      detail: `verdict is not a valid GradientResult: ${ajvErrors(validateGradientShape)}`,
    };
  }
  if (outputSchema !== undefined) {
    let validate: ValidateFunction;
    try {
      validate = compileUserSchema(outputSchema);
    } catch (err) {
      const reason = messageOf(err);
      return { ok: false, rejection: "malformed_output", detail: `the judge's output schema is invalid: ${reason}` };
    }
    if (!validate(value)) {
      return {
        ok: false,
        rejection: "malformed_output",
        detail: `verdict does not match the judge's output schema: ${ajvErrors(validate)}`,
      };
    }
  }
  const result: GradientResult = {
    score: value.score as number,
    confidence: value.confidence as number,
    reasoning: value.reasoning as string,
  };
  if (value.signals !== undefined) result.signals = value.signals as GradientResult["signals"];
  if (value.metadata !== undefined) result.metadata = value.metadata as JsonObject;
  return { ok: true, result };
}

/**
 * Maps a finished judge run to its outcome. Cancellation and timeout win over anything the
 * judge printed; a non-zero exit is `failed` unless the judge declares
 * `system.must_succeed: false`; otherwise the verdict is parsed (and checked against the
 * judge's `output.schema` when its format is json).
 */
export function judgeOutcome(run: JudgeRun): JudgeOutcome {
  if (run.cancelled === true) return { ok: false, rejection: "cancelled", detail: "the judge was cancelled" };
  if (run.timedOut === true) return { ok: false, rejection: "timed_out", detail: "the judge ran past its deadline" };
  const mustSucceed = run.validation?.system?.must_succeed ?? true;
  if (mustSucceed && run.exitCode !== 0) {
    return { ok: false, rejection: "failed", detail: `the judge exited with code ${run.exitCode}` };
  }
  const output = run.validation?.output;
  const schema = output !== undefined && (output.format ?? "json") === "json" ? output.schema : undefined;
  return parseGradientResult(run.stdout, schema);
}

/** The GradientResult a validator records for an outcome: a rejection scores 0 with confidence 0. */
export function outcomeToGradient(outcome: JudgeOutcome): GradientResult {
  if (outcome.ok) return outcome.result;
  return {
    score: 0,
    confidence: 0,
    reasoning: `no verdict (${outcome.rejection}): ${outcome.detail}`,
    signals: [{ category: outcome.rejection, score: 0, message: outcome.detail }],
  };
}
