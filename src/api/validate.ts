// Offline validation of gavel manifests with the CRDs' own schemas (ajv) and the TypeScript
// twins of their CEL rules: what kube-apiserver would refuse, with field paths. Pure.
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { crds, type CrdDocument } from "./crds.js";
import { ADMISSION, CHECK, isMap, type SchemaNode } from "./schema-dsl.js";
import { API_VERSION, GROUP } from "./types.js";

/** One problem in a manifest: where (a field path such as spec.execution.tool_validation[0].min_score) and what. */
export interface Problem {
  path: string;
  message: string;
  /** error: the API server refuses the manifest; warning: it accepts it but drops or ignores something. */
  severity: "error" | "warning";
}

/** The kinds gavel serves. */
export type GavelKind = "Agent" | "Execution" | "GuardPolicy";

const KINDS: Record<GavelKind, CrdDocument> = {
  Agent: crdOf("Agent"),
  Execution: crdOf("Execution"),
  GuardPolicy: crdOf("GuardPolicy"),
};

function crdOf(kind: string): CrdDocument {
  const found = crds.find((c) => c.crd.spec.names.kind === kind);
  if (found === undefined) throw new Error(`no CRD for ${kind}`);
  return found.crd;
}

/** The openAPIV3Schema of a kind, as installed. */
export function schemaOf(kind: GavelKind): SchemaNode {
  const v = KINDS[kind].spec.versions[0];
  if (v === undefined) throw new Error(`CRD ${kind} has no version`);
  return v.schema.openAPIV3Schema;
}

/** True when the object is one of gavel's kinds (apiVersion 100monkeys.ai/v1). */
export function isGavelKind(kind: unknown): kind is GavelKind {
  return kind === "Agent" || kind === "Execution" || kind === "GuardPolicy";
}

// ---------------------------------------------------------------- ajv

// ajv-formats is CommonJS; under NodeNext its typings describe the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** Turns a structural schema into the JSON Schema the API server effectively enforces with strict field validation. */
function toJsonSchema(node: SchemaNode, isMetadata = false): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith("x-kubernetes-") || k === "description") continue;
    if (k === "properties" && isMap(v)) {
      out.properties = Object.fromEntries(
        Object.entries(v as Record<string, SchemaNode>).map(([name, child]) => [name, toJsonSchema(child, name === "metadata")]),
      );
    } else if ((k === "items" || k === "additionalProperties") && isMap(v)) {
      out[k] = toJsonSchema(v as SchemaNode);
    } else out[k] = v;
  }
  // Strict field validation refuses unknown fields wherever the schema lists the fields.
  if (
    node.properties !== undefined &&
    node.additionalProperties === undefined &&
    !node["x-kubernetes-preserve-unknown-fields"] &&
    !isMetadata
  ) {
    out.additionalProperties = false;
  }
  return out;
}

const checkers = new Map<GavelKind, ValidateFunction>();
const defaulters = new Map<GavelKind, ValidateFunction>();

function compiled(kind: GavelKind, useDefaults: boolean): ValidateFunction {
  const cache = useDefaults ? defaulters : checkers;
  let fn = cache.get(kind);
  if (fn === undefined) {
    const ajv = new Ajv({ allErrors: !useDefaults, useDefaults, strict: false });
    addFormats(ajv);
    ajv.addFormat("int64", true);
    fn = ajv.compile(toJsonSchema(schemaOf(kind)));
    cache.set(kind, fn);
  }
  return fn;
}

/** A deep copy of the object with the CRD's structural defaults applied, as the API server stores it. */
export function withSchemaDefaults<T>(kind: GavelKind, object: T): T {
  const copy = structuredClone(object);
  compiled(kind, true)(copy);
  return copy;
}

// ---------------------------------------------------------------- paths

/** "/spec/tools/0/name" → "spec.tools[0].name". */
export function pointerToPath(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^[0-9]+$/.test(seg) ? `[${seg}]` : out === "" ? seg : `.${seg}`;
  }
  return out;
}

function join(path: string, rel: string): string {
  if (rel === "") return path;
  if (rel.startsWith("[")) return path + rel;
  const tail = rel.startsWith(".") ? rel.slice(1) : rel;
  return path === "" ? tail : `${path}.${tail}`;
}

function ajvProblem(e: ErrorObject): Problem {
  const at = pointerToPath(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required":
      return { path: join(at, String(p.missingProperty)), message: "required field is missing", severity: "error" };
    case "additionalProperties":
      return {
        path: join(at, String(p.additionalProperty)),
        message: `unknown field "${String(p.additionalProperty)}"`,
        severity: "error",
      };
    case "enum":
      return { path: at, message: `must be one of: ${(p.allowedValues as unknown[]).map(String).join(", ")}`, severity: "error" };
    case "type":
      return { path: at, message: `must be ${article(String(p.type))}`, severity: "error" };
    case "pattern":
      return { path: at, message: `must match ${String(p.pattern)}`, severity: "error" };
    default:
      return { path: at, message: e.message ?? e.keyword, severity: "error" };
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

// ---------------------------------------------------------------- CEL twins

function typeMatches(node: SchemaNode, value: unknown): boolean {
  switch (node.type) {
    case undefined:
      return value !== undefined;
    case "object":
      return isMap(value);
    case "array":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
  }
}

/** Runs every rule of x-kubernetes-validations on the value under its node, depth first. */
function celProblems(node: SchemaNode, value: unknown, path: string, out: Problem[]): void {
  if (!typeMatches(node, value)) return;
  for (const rule of [...(node["x-kubernetes-validations"] ?? []), ...(node[ADMISSION] ?? [])]) {
    const r = rule[CHECK](value);
    if (r !== true) out.push({ path: join(path, r.at), message: r.message ?? rule.message, severity: "error" });
  }
  if (isMap(value)) {
    for (const [k, v] of Object.entries(value)) {
      const child = node.properties?.[k] ?? (isMap(node.additionalProperties) ? node.additionalProperties : undefined);
      if (child !== undefined) celProblems(child, v, join(path, k), out);
    }
  } else if (Array.isArray(value) && node.items !== undefined) {
    for (const [i, v] of value.entries()) celProblems(node.items, v, `${path}[${i}]`, out);
  }
}

// ---------------------------------------------------------------- metadata

const OBJECT_META_FIELDS = new Set([
  "name",
  "generateName",
  "namespace",
  "labels",
  "annotations",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "finalizers",
  "ownerReferences",
  "managedFields",
  "selfLink",
]);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Kubernetes' label rules: [prefix/]name, name and value at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends. */
function labelProblem(key: string, value: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (!LABEL_NAME.test(name) || (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))) {
    return "invalid label key: [prefix/]name, the name at most 63 characters of A-Z a-z 0-9 - _ . starting and ending alphanumeric";
  }
  if (value !== "" && !LABEL_NAME.test(value))
    return "invalid label value: at most 63 characters of A-Z a-z 0-9 - _ . starting and ending alphanumeric";
  return undefined;
}

function metadataProblems(meta: unknown): Problem[] {
  if (!isMap(meta)) return [{ path: "metadata", message: "required: metadata with a name", severity: "error" }];
  const out: Problem[] = [];
  const name = meta.name;
  if (name === undefined && meta.generateName === undefined)
    out.push({ path: "metadata.name", message: "required field is missing", severity: "error" });
  else if (name !== undefined && (typeof name !== "string" || name.length > 253 || !DNS_SUBDOMAIN.test(name))) {
    out.push({
      path: "metadata.name",
      message: "must be a lowercase DNS subdomain (a-z, 0-9, '-', '.'; at most 253 characters)",
      severity: "error",
    });
  }
  for (const field of ["labels", "annotations"] as const) {
    const m = meta[field];
    if (m === undefined) continue;
    if (!isMap(m)) out.push({ path: `metadata.${field}`, message: "must be a map of strings", severity: "error" });
    else {
      for (const [k, v] of Object.entries(m)) {
        if (typeof v !== "string")
          out.push({ path: `metadata.${field}.${k}`, message: `must be a string (quote it: "${String(v)}")`, severity: "error" });
        else if (field === "labels") {
          const problem = labelProblem(k, v);
          if (problem !== undefined) out.push({ path: `metadata.labels.${k}`, message: problem, severity: "error" });
        }
      }
    }
  }
  for (const k of Object.keys(meta)) {
    if (!OBJECT_META_FIELDS.has(k)) {
      out.push({
        path: `metadata.${k}`,
        message:
          `not a Kubernetes metadata field: the API server drops it (strict validation and server-side apply refuse it; ` +
          `apply with client-side kubectl apply --validate=warn)${k === "version" ? "; put a version in metadata.labels if you need it" : ""}`,
        severity: "warning",
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------- entry point

/** Every problem the API server (strict field validation) would report for this document, plus warnings. */
export function validateManifest(doc: unknown): Problem[] {
  if (!isMap(doc))
    return [{ path: "", message: "a manifest must be a YAML mapping with apiVersion, kind, metadata and spec", severity: "error" }];
  const kind = doc.kind;
  if (doc.apiVersion !== API_VERSION) {
    if (typeof doc.apiVersion === "string" && doc.apiVersion.startsWith(`${GROUP}/`)) {
      return [{ path: "apiVersion", message: `must be ${API_VERSION}`, severity: "error" }];
    }
    if (isGavelKind(kind)) return [{ path: "apiVersion", message: `must be ${API_VERSION}`, severity: "error" }];
    return [{ path: "", message: `not a gavel resource (${String(doc.apiVersion)} ${String(kind)}); not checked`, severity: "warning" }];
  }
  if (!isGavelKind(kind)) return [{ path: "kind", message: "must be Agent, Execution or GuardPolicy", severity: "error" }];
  const problems = metadataProblems(doc.metadata);
  // The server defaults before it validates, so the rules see defaulted values.
  const defaulted = withSchemaDefaults(kind, doc);
  const check = compiled(kind, false);
  if (!check(defaulted)) problems.push(...dedupe((check.errors ?? []).map(ajvProblem)));
  celProblems(schemaOf(kind), defaulted, "", problems);
  return problems;
}

function dedupe(ps: Problem[]): Problem[] {
  const seen = new Set<string>();
  return ps.filter((p) => {
    const key = `${p.path}\u0000${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
