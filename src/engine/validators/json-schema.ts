// The json_schema validator: a workspace file's content checked against an inline schema or
// a schema file from the agent's image. Both files are read by the driver and passed in.
import { Ajv, type AnySchema, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { JsonSchemaValidatorSpec, Signal } from "../../api/types.js";
import { deterministic, type FileContent, type ValidatorOutcome } from "./outcome.js";
import { messageOf } from "../../errors.js";

// ajv-formats is CommonJS; under NodeNext its default import is the plugin function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** Compiles a user schema in a fresh Ajv of the draft it names, so $ids never collide. */
export function compileUserSchema(schema: unknown): ValidateFunction {
  const draft = typeof schema === "object" && schema !== null ? (schema as { $schema?: unknown }).$schema : undefined;
  const options = { allErrors: true, strict: false } as const;
  const ajv =
    typeof draft === "string" && draft.includes("2020-12")
      ? new Ajv2020(options)
      : typeof draft === "string" && draft.includes("2019-09")
        ? new Ajv2019(options)
        : new Ajv(options);
  addFormats(ajv);
  return ajv.compile(schema as AnySchema);
}

function describeRead(what: string, path: string, file: FileContent): string {
  if (file.ok) return "";
  return file.reason === "missing" ? `${what} ${path} does not exist` : `${what} ${path} could not be read: ${file.detail}`;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) };
  } catch (err) {
    return { ok: false, error: messageOf(err) };
  }
}

/**
 * Validates the target file against the schema (inline `schema` wins over `schema_path`).
 * Every problem (missing or unreadable file, invalid JSON, invalid schema, schema errors)
 * is a failing outcome with a reasoning that says which.
 */
export function validateJsonSchema(spec: JsonSchemaValidatorSpec, target: FileContent, schemaFile?: FileContent): ValidatorOutcome {
  let schema: unknown = spec.schema;
  if (schema === undefined) {
    if (spec.schema_path === undefined) return deterministic(false, "json_schema validator has neither schema nor schema_path");
    if (schemaFile === undefined) return deterministic(false, `schema file ${spec.schema_path} was not read`);
    if (!schemaFile.ok) return deterministic(false, describeRead("schema file", spec.schema_path, schemaFile));
    const parsed = parseJson(schemaFile.content);
    if (!parsed.ok) return deterministic(false, `schema file ${spec.schema_path} is not valid JSON: ${parsed.error}`);
    schema = parsed.value;
  }
  let validate: ValidateFunction;
  try {
    validate = compileUserSchema(schema);
  } catch (err) {
    const where = spec.schema !== undefined ? "inline schema" : `schema ${spec.schema_path ?? ""}`;
    return deterministic(false, `${where} is not a valid JSON Schema: ${messageOf(err)}`);
  }
  if (!target.ok) return deterministic(false, describeRead("target file", spec.target_path, target));
  const doc = parseJson(target.content);
  if (!doc.ok) {
    return deterministic(false, `target file ${spec.target_path} is not valid JSON: ${doc.error}`, [
      { category: "json_syntax", score: 0, message: doc.error },
    ]);
  }
  if (validate(doc.value)) return deterministic(true, `${spec.target_path} matches the schema`);
  const signals: Signal[] = (validate.errors ?? []).map((e) => ({
    category: "schema",
    score: 0,
    message: `${e.instancePath === "" ? "/" : e.instancePath}: ${e.message ?? "is invalid"}`,
  }));
  return deterministic(
    false,
    `${spec.target_path} does not match the schema:\n${signals.map((s) => `  ${s.message}`).join("\n")}`,
    signals,
  );
}
