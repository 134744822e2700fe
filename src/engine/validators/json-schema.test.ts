// Tests of the json_schema validator: inline and file schemas, drafts, and every failure reason.
import { describe, expect, it } from "vitest";
import type { JsonSchemaValidatorSpec } from "../../api/types.js";
import { validateJsonSchema } from "./json-schema.js";
import type { FileContent } from "./outcome.js";

const file = (content: string): FileContent => ({ ok: true, content });
const missing: FileContent = { ok: false, reason: "missing", detail: "ENOENT" };
const schema = { type: "object", required: ["status"], properties: { status: { enum: ["success"] }, n: { type: "integer" } } };
const inline: JsonSchemaValidatorSpec = { type: "json_schema", target_path: "/workspace/result.json", schema };

describe("json_schema validator", () => {
  it("passes when the target matches an inline schema", () => {
    expect(validateJsonSchema(inline, file('{"status":"success","n":3}'))).toMatchObject({ passed: true, score: 1 });
  });

  it("fails with every error listed (allErrors) as reasoning and signals", () => {
    const r = validateJsonSchema(inline, file('{"status":"nope","n":1.5}'));
    expect(r.passed).toBe(false);
    expect(r.score).toBe(0);
    expect(r.signals).toHaveLength(2);
    expect(r.reasoning).toContain("/status");
    expect(r.reasoning).toContain("/n");
  });

  it("reads the schema from schema_path content when there is no inline schema", () => {
    const spec: JsonSchemaValidatorSpec = { type: "json_schema", target_path: "/w/r.json", schema_path: "/agent/s.json" };
    expect(validateJsonSchema(spec, file('{"status":"success"}'), file(JSON.stringify(schema))).passed).toBe(true);
    expect(validateJsonSchema(spec, file("{}"), file(JSON.stringify(schema))).passed).toBe(false);
  });

  it("fails clearly when the target file is missing", () => {
    const r = validateJsonSchema(inline, missing);
    expect(r.passed).toBe(false);
    expect(r.reasoning).toBe("target file /workspace/result.json does not exist");
  });

  it("fails clearly when the target is not JSON, tolerating a BOM on valid JSON", () => {
    expect(validateJsonSchema(inline, file("{status: success}")).reasoning).toContain("is not valid JSON");
    expect(validateJsonSchema(inline, file('\ufeff{"status":"success"}')).passed).toBe(true);
  });

  it("fails clearly when the schema file is missing, unread, not JSON or not a schema", () => {
    const spec: JsonSchemaValidatorSpec = { type: "json_schema", target_path: "/w/r.json", schema_path: "/agent/s.json" };
    expect(validateJsonSchema(spec, file("{}"), missing).reasoning).toContain("schema file /agent/s.json does not exist");
    expect(validateJsonSchema(spec, file("{}")).reasoning).toContain("was not read");
    expect(validateJsonSchema(spec, file("{}"), file("not json")).reasoning).toContain("is not valid JSON");
    expect(validateJsonSchema(spec, file("{}"), file('{"type": 12}')).reasoning).toContain("is not a valid JSON Schema");
    expect(validateJsonSchema({ type: "json_schema", target_path: "/w" }, file("{}")).reasoning).toContain(
      "neither schema nor schema_path",
    );
  });

  it("uses the draft the schema names (2020-12 prefixItems)", () => {
    const spec: JsonSchemaValidatorSpec = {
      type: "json_schema",
      target_path: "/w/r.json",
      schema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "array", prefixItems: [{ type: "string" }], items: false },
    };
    expect(validateJsonSchema(spec, file('["a"]')).passed).toBe(true);
    expect(validateJsonSchema(spec, file('["a", 1]')).passed).toBe(false);
    expect(validateJsonSchema(spec, file("[1]")).passed).toBe(false);
  });

  it("checks formats (ajv-formats)", () => {
    const spec: JsonSchemaValidatorSpec = { type: "json_schema", target_path: "/w", schema: { type: "string", format: "email" } };
    expect(validateJsonSchema(spec, file('"a@b.co"')).passed).toBe(true);
    expect(validateJsonSchema(spec, file('"not an email"')).passed).toBe(false);
  });
});
