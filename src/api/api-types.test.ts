// The API types are read off the CRD schemas (schema-dsl.ts Static), so they cannot drift from
// them. What stays hand-written are the shapes of the two fields without a structural type,
// whose rules are CEL: a validator entry and a tools entry. Their field lists (used in the
// rules) are compiled here against the types: a missing or extra key does not typecheck.
import { describe, expect, expectTypeOf, it } from "vitest";
import { TOOL_FIELDS } from "./agent-crd.js";
import { arr, bool, int, narrowed, obj, str, type Static, type Typed } from "./schema-dsl.js";
import type * as T from "./types.js";
import { VALIDATOR_FIELDS } from "./validation-rules.js";

/** Exactly the keys of T (all required here so that none is forgotten). */
function keysOf<O>(k: { [P in keyof Required<O>]: true }): string[] {
  return Object.keys(k).sort();
}
type AllKeys<U> = U extends unknown ? keyof U : never;

describe("hand-written shapes match the CEL rules' field lists", () => {
  it("a validator entry", () => {
    expect([...VALIDATOR_FIELDS].sort()).toEqual(
      keysOf<{ [K in AllKeys<T.ValidatorSpec>]: unknown }>({
        type: true,
        min_score: true,
        min_confidence: true,
        judge_agent: true,
        judges: true,
        consensus: true,
        min_judges_required: true,
        min_agreement_confidence: true,
        criteria: true,
        expected: true,
        schema_path: true,
        schema: true,
        target_path: true,
        pattern: true,
        target: true,
        weights: true,
        confidence_weighting: true,
        timeout_seconds: true,
      }),
    );
  });

  it("a tools entry", () => {
    expect([...TOOL_FIELDS].sort()).toEqual(
      keysOf<T.ToolObject>({
        name: true,
        allowlist: true,
        skip_judge: true,
        capability: true,
        approval: true,
        approval_timeout: true,
        approval_on_timeout: true,
        approval_margin: true,
        min_agreement_confidence: true,
      }),
    );
  });
});

describe("types read off a schema", () => {
  const node = obj(
    "An entry.",
    {
      name: str("Name."),
      mode: str("Mode.", { enum: ["a", "b"] }),
      count: int("Count."),
      tags: arr("Tags.", str("Tag.")),
      on: bool("On."),
    },
    { required: ["name"], written: ["count"] },
  );

  it("required and written fields are required, the others optional; an enum is its union", () => {
    expectTypeOf<Static<typeof node>>().toEqualTypeOf<{ name: string; count: number; mode?: "a" | "b"; tags?: string[]; on?: boolean }>();
  });

  it("renders required, never written", () => {
    expect(JSON.parse(JSON.stringify(node))).toEqual({
      type: "object",
      description: "An entry.",
      properties: {
        name: { type: "string", description: "Name." },
        mode: { type: "string", description: "Mode.", enum: ["a", "b"] },
        count: { type: "integer", description: "Count." },
        tags: { type: "array", description: "Tags.", items: { type: "string", description: "Tag." } },
        on: { type: "boolean", description: "On." },
      },
      required: ["name"],
    });
  });

  it("a narrowing must fit the schema's own type", () => {
    type Narrow = { name: string; count: number; mode: "a" };
    expectTypeOf(narrowed<Narrow>()(node)).toEqualTypeOf<Typed<Narrow>>();
    // @ts-expect-error -- a number is not what the schema admits for name
    narrowed<{ name: number }>()(node);
  });
});
