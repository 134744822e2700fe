// The fixed shape of a verdict (GradientResult) as a JSON Schema: a judge's output is checked
// with it (src/engine/gradient-schema.ts) and so is every verdict a tool-call decision carries.

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
