// The fixed shape of a verdict (GradientResult), as a JSON Schema and its one compiled validator.
import { Ajv, type ValidateFunction } from "ajv";

const unitInterval = { type: "number", minimum: 0, maximum: 1 } as const;

/** The strict shape of a verdict; extra top-level fields are allowed but not kept. */
export const GRADIENT_RESULT_SCHEMA = {
  type: "object",
  required: ["score", "confidence", "reasoning"],
  properties: {
    score: unitInterval,
    confidence: unitInterval,
    reasoning: { type: "string" },
    signals: {
      type: "array",
      items: {
        type: "object",
        required: ["category", "score", "message"],
        properties: {
          category: { type: "string" },
          score: unitInterval,
          message: { type: "string" },
        },
      },
    },
    metadata: { type: "object" },
  },
} as const;

// One compiled validator for the fixed verdict schema; judge-declared schemas are compiled
// per call in their own Ajv of the draft they name, so that their $ids can never collide.
export const validateGradientShape: ValidateFunction = new Ajv({ allErrors: true, strict: false }).compile(
  GRADIENT_RESULT_SCHEMA,
);
