// Small builders for the CRDs' openAPIV3Schema (src/api/crds.ts is written with them) and
// the CEL rule type that carries its TypeScript twin, so the offline validator runs the same rule.

/** A node of a Kubernetes structural schema (the subset gavel uses). */
export interface SchemaNode {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  required?: string[];
  enum?: (string | number)[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  pattern?: string;
  format?: string;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-validations"?: CelRule[];
  /**
   * Rules for a node without a structural type, where the CRD cannot hold CEL: enforced by the
   * ValidatingAdmissionPolicy rendered next to the CRD (docs/adr/0003-crd-schemas.md).
   */
  [ADMISSION]?: CelRule[];
}

/** Key of a schema node's admission-policy rules; symbol-keyed, so never rendered into the CRD. */
export const ADMISSION: unique symbol = Symbol("admission");

/** Where a failing TypeScript twin points, relative to the node: "" for the node itself. */
export type CheckResult = true | { at: string; message?: string };

/** What a CEL rule's TypeScript twin gets: the node's value (already known to have the node's type). */
export type CelCheck = (self: unknown) => CheckResult;

/** Symbol under which a rule keeps its twin; JSON/YAML rendering ignores symbol keys. */
export const CHECK: unique symbol = Symbol("check");

/** An `x-kubernetes-validations` entry plus the same rule in TypeScript. */
export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  [CHECK]: CelCheck;
}

/** A CEL rule with its TypeScript twin; the message names the field and what to write. */
export function cel(rule: string, message: string, check: CelCheck, fieldPath?: string): CelRule {
  return fieldPath === undefined ? { rule, message, [CHECK]: check } : { rule, message, fieldPath, [CHECK]: check };
}

/** `true` when the check holds, otherwise a failure at `at` (relative path, "" = here). */
export function ok(holds: boolean, at = ""): CheckResult {
  return holds ? true : { at };
}

/** A plain JSON object (as opposed to an array or null). */
export function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** CEL's `int` for JSON: a number without a fractional part. */
export function isInt(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v);
}

export function str(description: string, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: "string", description, ...extra };
}
export function int(description: string, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: "integer", description, ...extra };
}
export function num(description: string, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: "number", description, ...extra };
}
export function bool(description: string, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: "boolean", description, ...extra };
}
export function obj(description: string, properties: Record<string, SchemaNode>, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: "object", description, properties, ...extra };
}
export function arr(description: string, items: SchemaNode, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: "array", description, items, ...extra };
}
/** A threshold in [0, 1]. */
export function threshold(description: string, def?: number): SchemaNode {
  return num(description, { minimum: 0, maximum: 1, ...(def === undefined ? {} : { default: def }) });
}

/** A CEL rule that a string field is an absolute path. */
export function absolutePath(field: string): CelRule {
  return cel("self.startsWith('/')", `${field} must be an absolute path (start with /), e.g. /workspace`, (self) =>
    ok(typeof self === "string" && self.startsWith("/")),
  );
}

/** A duration string such as "90s", "5m" or "1h30m". */
export function duration(description: string): SchemaNode {
  return str(description, { pattern: "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$" });
}
