// Small builders for the CRDs' openAPIV3Schema (the *-crd.ts files are written with them), each
// carrying the TypeScript type of what it admits, and the CEL rule type that carries its
// TypeScript twin, so the offline validator runs the same rule.

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

/**
 * The TypeScript type of the values a node admits, carried at the type level only (nothing is
 * added at run time): the CRD schemas are the one declaration and the API types are read off
 * them with Static (docs/adr/0060-api-types-derived-from-the-crd-schemas.md).
 */
declare const ADMITS: unique symbol;

/** A schema node together with the TypeScript type of the values it admits. */
export type Typed<T> = SchemaNode & { readonly [ADMITS]: T };

/** The TypeScript type a typed schema node admits. */
export type Static<N> = N extends { readonly [ADMITS]: infer T } ? T : never;

/** An intersection shown as one object type (readable in editors and error messages). */
export type Flat<T> = { [K in keyof T]: T[K] } & {};

/** What an object node with properties P admits: the keys in R required, the others optional. */
type ObjectOf<P, R extends PropertyKey> = Flat<{ [K in keyof P & R]: Static<P[K]> } & { [K in Exclude<keyof P, R>]?: Static<P[K]> }>;

type StrExtra<E extends string> = Omit<Partial<SchemaNode>, "enum"> & { enum?: readonly E[] };

/** A string node; with `enum`, the type is the union of its values. */
export function str<const E extends string = string>(description: string, extra: StrExtra<E> = {}): Typed<E> {
  return { type: "string", description, ...extra } as Typed<E>;
}
/** An integer node. */
export function int(description: string, extra: Partial<SchemaNode> = {}): Typed<number> {
  return { type: "integer", description, ...extra } as Typed<number>;
}
/** A number node. */
export function num(description: string, extra: Partial<SchemaNode> = {}): Typed<number> {
  return { type: "number", description, ...extra } as Typed<number>;
}
/** A boolean node. */
export function bool(description: string, extra: Partial<SchemaNode> = {}): Typed<boolean> {
  return { type: "boolean", description, ...extra } as Typed<boolean>;
}

type ObjExtra<K extends string, R extends readonly K[], W extends readonly K[]> = Omit<Partial<SchemaNode>, "required"> & {
  /** Fields the API server requires. */
  required?: R;
  /**
   * Fields gavel always writes (a Condition's reason, a judge's raw output): required in the
   * TypeScript type, not by the API server, which keeps accepting objects without them.
   * Never rendered.
   */
  written?: W;
};

/** An object node with named properties; `required` (and `written`) fields are required in its type. */
export function obj<
  P extends Record<string, Typed<unknown>>,
  const R extends readonly (keyof P & string)[] = [],
  const W extends readonly (keyof P & string)[] = [],
>(description: string, properties: P, extra: ObjExtra<keyof P & string, R, W> = {}): Typed<ObjectOf<P, R[number] | W[number]>> {
  // `written` only shapes the type; the rest keeps its order, so the rendered YAML does too.
  const rest: Partial<ObjExtra<keyof P & string, R, W>> = { ...extra };
  delete rest.written;
  return { type: "object", description, properties, ...rest } as unknown as Typed<ObjectOf<P, R[number] | W[number]>>;
}
/** An object node whose keys are free and whose values all have one schema. */
export function map<V>(description: string, values: Typed<V>, extra: Partial<SchemaNode> = {}): Typed<Record<string, V>> {
  return { type: "object", description, additionalProperties: values, ...extra } as Typed<Record<string, V>>;
}
/** An array node. */
export function arr<I>(description: string, items: Typed<I>, extra: Partial<SchemaNode> = {}): Typed<I[]> {
  return { type: "array", description, items, ...extra } as Typed<I[]>;
}
/**
 * A node without a structural type (x-kubernetes-preserve-unknown-fields): the schema cannot
 * say what it admits, so the type is declared here, beside the rules that check it.
 */
export function typed<T>(node: SchemaNode): Typed<T> {
  return node as Typed<T>;
}
/**
 * A node whose CEL rules narrow what it admits (tool_validation's type is semantic): N must be
 * assignable to the node's structural type, so the narrowing cannot contradict the schema.
 */
export function narrowed<N>(): <W>(node: Typed<W> & (N extends W ? unknown : never)) => Typed<N> {
  return (node) => node as unknown as Typed<N>;
}
/** A threshold in [0, 1]. */
export function threshold(description: string, def?: number): Typed<number> {
  return num(description, { minimum: 0, maximum: 1, ...(def === undefined ? {} : { default: def }) });
}

/** A CEL rule that a string field is an absolute path. */
export function absolutePath(field: string): CelRule {
  return cel("self.startsWith('/')", `${field} must be an absolute path (start with /), e.g. /workspace`, (self) =>
    ok(typeof self === "string" && self.startsWith("/")),
  );
}

/** A duration string such as "90s", "5m" or "1h30m". */
export function duration(description: string): Typed<string> {
  return str(description, { pattern: "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$" });
}
