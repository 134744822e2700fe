// An Agent's `spec.execution`: the outer loop (mode, budget, deadlines, `validation`) and the
// inner loop (`tool_validation`), as schema with its types read off it. `validation` takes two
// shapes and so has no structural type: its rules are CEL (validation-rules.ts) and its types
// are declared here, checked against the rules' field lists (api-types.test.ts).
import { ADMISSION, arr, cel, int, isMap, narrowed, obj, ok, str, threshold, typed, type Static } from "./schema-dsl.js";
import type { JsonObject } from "./meta.js";
import { validationRules, type CONSENSUS_MODES, type VALIDATOR_TYPES } from "./validation-rules.js";

const semanticToolValidator = obj(
  "A semantic judge consulted before a tool call is dispatched (inner loop). The call runs only when score >= min_score and confidence >= min_confidence.",
  {
    type: str("Must be semantic: only semantic judges gate tool calls."),
    judge_agent: str(
      "Name of the judge Agent (labels role: judge, execution.mode one-shot) run as a child Execution for each judged call.",
      {
        minLength: 1,
        maxLength: 253,
      },
    ),
    criteria: str("Rubric handed to the judge with the proposed call."),
    min_score: threshold("Minimum score (0.0-1.0) to allow the tool call. Default 0.7.", 0.7),
    min_confidence: threshold("Minimum self-reported confidence (0.0-1.0) to allow the call. Default 0.0.", 0),
    timeout_seconds: int("Seconds to wait for the judge child Execution; past it the call is rejected. Default 300.", {
      minimum: 1,
      default: 300,
    }),
  },
  {
    required: ["type"],
    "x-kubernetes-validations": [
      cel(
        "self.type == 'semantic'",
        "tool_validation entries must have type: semantic (exit_code, json_schema, regex and multi_judge belong under execution.validation)",
        (self) => ok(isMap(self) && self.type === "semantic", ".type"),
        ".type",
      ),
      cel(
        "has(self.judge_agent)",
        "a semantic tool_validation entry needs judge_agent: the name of a judge Agent (labels role: judge)",
        (self) => ok(isMap(self) && typeof self.judge_agent === "string", ".judge_agent"),
        ".judge_agent",
      ),
    ],
  },
);

/**
 * A semantic judge, of a tool call (tool_validation) or of an iteration (validation): the
 * tool_validation entry's fields, with type and judge_agent as its CEL rules fix them. An
 * interface like its siblings, so that isMap narrows a ValidatorSpec to no member in particular.
 */
export interface SemanticValidatorSpec extends Omit<Static<typeof semanticToolValidator>, "type" | "judge_agent">, ValidatorBase {
  type: "semantic";
  judge_agent: string;
}

/** The judge form of `execution.validation`. */
export interface JudgeValidationSpec {
  system?: { must_succeed?: boolean };
  output?: { format?: "json" | "text"; schema?: JsonObject };
}

export type ValidatorType = (typeof VALIDATOR_TYPES)[number];

interface ValidatorBase {
  type: ValidatorType;
  /** Default 1.0 for outer validators, 0.7 for tool_validation entries. */
  min_score?: number;
  /** Default 0.0. */
  min_confidence?: number;
}

export interface ExitCodeValidatorSpec extends ValidatorBase {
  type: "exit_code";
  expected?: number;
}

export interface JsonSchemaValidatorSpec extends ValidatorBase {
  type: "json_schema";
  /** Path of the schema file inside the agent's image. */
  schema_path?: string;
  /** Inline schema, instead of schema_path. */
  schema?: JsonObject;
  target_path: string;
}

export interface RegexValidatorSpec extends ValidatorBase {
  type: "regex";
  pattern: string;
  /** "stdout" (default) or an absolute file path. */
  target?: string;
}

export type ConsensusStrategy = (typeof CONSENSUS_MODES)[number];

export interface MultiJudgeValidatorSpec extends ValidatorBase {
  type: "multi_judge";
  judges: string[];
  /** Default weighted_average. */
  consensus?: ConsensusStrategy;
  /** Default 1. */
  min_judges_required?: number;
  min_agreement_confidence?: number;
  criteria?: string;
  /** Per-judge weights by judge name; a judge not named weighs 1. */
  weights?: Record<string, number>;
  /** Multiply each judge's weight by its confidence. */
  confidence_weighting?: boolean;
  /** Default 300. */
  timeout_seconds?: number;
}

export type ValidatorSpec =
  ExitCodeValidatorSpec | JsonSchemaValidatorSpec | RegexValidatorSpec | SemanticValidatorSpec | MultiJudgeValidatorSpec;

/** `spec.execution` of an Agent. */
export const executionSpec = obj(
  "How the agent runs: one-shot or iterative, its iteration budget and deadlines, the outer-loop validation and the inner-loop tool_validation.",
  {
    mode: str(
      "one-shot (a single run, max_iterations ignored; judges always use it) or iterative (refine until validation passes or max_iterations). Default iterative.",
      {
        enum: ["one-shot", "iterative"],
        default: "iterative",
      },
    ),
    max_iterations: int("Iterations the outer loop may use before the Execution fails. Default 10.", {
      minimum: 1,
      maximum: 100,
      default: 10,
    }),
    timeout_seconds: int("Deadline of the whole Execution in seconds (no default: bounded by max_iterations).", { minimum: 1 }),
    iteration_timeout_seconds: int("Deadline of one iteration's worker run, in seconds.", { minimum: 1 }),
    validation: typed<ValidatorSpec[] | JudgeValidationSpec>({
      description:
        "Outer-loop validation. Either an ordered list of validators run cheapest first and stopping at the first failure " +
        "(- type: exit_code {expected: 0} | json_schema {schema_path|schema, target_path} | regex {pattern, target: stdout|/abs/path} | " +
        "semantic {judge_agent, criteria} | multi_judge {judges, consensus: weighted_average|majority|unanimous|best_of_n, min_judges_required: 1, " +
        "min_agreement_confidence, weights, confidence_weighting}; each with min_score (default 1.0), min_confidence (default 0.0), timeout_seconds (judges, default 300)), " +
        "or, in a judge, the form {system: {must_succeed}, output: {format: json|text, schema}} describing its own verdict. " +
        "Checked by the agents.100monkeys.ai ValidatingAdmissionPolicy (CEL); defaults of list entries are applied by gavel, not stored (see docs/api.md).",
      "x-kubernetes-preserve-unknown-fields": true,
      [ADMISSION]: validationRules,
    }),
    tool_validation: arr(
      "Inner-loop judges: before each tool call (unless its tool has skip_judge), each entry's judge runs in order; the first rejection blocks the call and its reasoning goes back to the model.",
      narrowed<SemanticValidatorSpec>()(semanticToolValidator),
      { maxItems: 16 },
    ),
  },
);

/** How the agent runs (`spec.execution`). */
export type ExecutionSpec = Static<typeof executionSpec>;
export type ExecutionMode = NonNullable<ExecutionSpec["mode"]>;
