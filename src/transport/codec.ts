// The tool-call wire format: the JSON Schemas of ToolCallProposal, ToolCallDecision and the
// error reply (src/api/protocol-schemas.ts) compiled once with ajv and applied on both sides,
// and the fingerprint that tells a re-send from another call (docs/protocol.md).
import { createHash } from "node:crypto";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import type { ToolCallDecision, ToolCallErrorReply, ToolCallProposal } from "../api/protocol.js";
import { TOOL_CALL_DECISION_SCHEMA, TOOL_CALL_ERROR_SCHEMA, TOOL_CALL_PROPOSAL_SCHEMA } from "../api/protocol-schemas.js";

/** Header on a re-sent proposal: its send number (2, 3, ...); a first send has none. */
export const ATTEMPT_HEADER = "Gavel-Attempt";

// One Ajv instance, each schema compiled once at module load.
const ajv = new Ajv({ allErrors: true, strict: false });
const validateProposal: ValidateFunction = ajv.compile(TOOL_CALL_PROPOSAL_SCHEMA);
const validateDecision: ValidateFunction = ajv.compile(TOOL_CALL_DECISION_SCHEMA);
const validateError: ValidateFunction = ajv.compile(TOOL_CALL_ERROR_SCHEMA);

/** A message that does not match its schema; `field` is a JSON pointer such as "/args". */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  constructor(
    readonly field: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The outcome of decoding: a typed value or the error naming the field. */
export type Decoded<T> = { ok: true; value: T } | { ok: false; error: ProtocolError };

// The most useful error first: a missing or unknown property names that property itself.
function toProtocolError(what: string, errors: ErrorObject[] | null | undefined): ProtocolError {
  const sorted = [...(errors ?? [])].filter((e) => e.keyword !== "if");
  const first = sorted[0];
  if (first === undefined) return new ProtocolError("", `${what} is invalid`);
  let field = first.instancePath;
  const params = first.params as { missingProperty?: string; additionalProperty?: string };
  if (first.keyword === "required" && params.missingProperty !== undefined) field += `/${params.missingProperty}`;
  if (first.keyword === "additionalProperties" && params.additionalProperty !== undefined) {
    field += `/${params.additionalProperty}`;
  }
  const detail = sorted.map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword}`).join("; ");
  return new ProtocolError(field || "/", `${what}: field ${field || "/"} is invalid (${detail})`);
}

function parse(what: string, data: Uint8Array | string): Decoded<unknown> {
  const text = typeof data === "string" ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8");
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: new ProtocolError("/", `${what} is not JSON: ${(err as Error).message}`, { cause: err }) };
  }
}

function check<T>(what: string, validate: ValidateFunction, value: unknown): Decoded<T> {
  if (validate(value)) return { ok: true, value: value as T };
  return { ok: false, error: toProtocolError(what, validate.errors) };
}

/**
 * Deepest nesting of objects and arrays a proposal's args may have. The gate walks args
 * recursively (fingerprint, guard views); a few kilobytes of `[[[[...]]]]` would otherwise
 * overflow its stack and leave the call unanswered. Real tool arguments nest a few levels.
 */
export const MAX_ARGS_DEPTH = 64;

// Iterative, so that the check itself cannot overflow on what it refuses.
function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== "object") continue;
    deepest = Math.max(deepest, depth);
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function checkProposal(value: unknown): Decoded<ToolCallProposal> {
  const c = check<ToolCallProposal>("proposal", validateProposal, value);
  if (c.ok && nestingDepth(c.value.args, MAX_ARGS_DEPTH) > MAX_ARGS_DEPTH) {
    return {
      ok: false,
      error: new ProtocolError("/args", `proposal: field /args nests objects and arrays deeper than ${MAX_ARGS_DEPTH} levels`),
    };
  }
  return c;
}

/** Decodes and validates a proposal from the wire. */
export function decodeProposal(data: Uint8Array | string): Decoded<ToolCallProposal> {
  const p = parse("proposal", data);
  return p.ok ? checkProposal(p.value) : p;
}

/** Validates and encodes a proposal; throws ProtocolError naming the field when it is invalid. */
export function encodeProposal(proposal: ToolCallProposal): string {
  const c = checkProposal(proposal);
  if (!c.ok) throw c.error;
  return JSON.stringify(proposal);
}

/** Validates a decision (the gate checks what its decide function produced). */
export function checkDecision(decision: unknown): Decoded<ToolCallDecision> {
  return check<ToolCallDecision>("decision", validateDecision, decision);
}

/** Validates and encodes a decision; throws ProtocolError naming the field when it is invalid. */
export function encodeDecision(decision: ToolCallDecision): string {
  const c = checkDecision(decision);
  if (!c.ok) throw c.error;
  return JSON.stringify(decision);
}

/** Encodes an error reply. */
export function encodeErrorReply(reply: ToolCallErrorReply): string {
  return JSON.stringify(reply);
}

/** What a worker can receive: a decision or an error reply. */
export type ToolCallReply = { kind: "decision"; decision: ToolCallDecision } | { kind: "error"; reply: ToolCallErrorReply };

/** Decodes a reply from the gate: a valid decision, a valid error reply, or a ProtocolError. */
export function decodeReply(data: Uint8Array | string): Decoded<ToolCallReply> {
  const p = parse("reply", data);
  if (!p.ok) return p;
  if (typeof p.value === "object" && p.value !== null && "error" in p.value) {
    const e = check<ToolCallErrorReply>("error reply", validateError, p.value);
    return e.ok ? { ok: true, value: { kind: "error", reply: e.value } } : e;
  }
  const d = check<ToolCallDecision>("decision", validateDecision, p.value);
  return d.ok ? { ok: true, value: { kind: "decision", decision: d.value } } : d;
}

// JSON with object keys sorted (by UTF-16 code units), so that equal values always serialise
// the same way. Built into one string without per-key arrays: the gate computes it for
// every proposal (the Object.entries/sort/map version took 9 µs and 6.9 KB a call).
export function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i === 0 ? "" : ",") + canonical(value[i]);
    return out + "]";
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  // Most objects have a few keys, often already in order: sorted only when they are not.
  for (let i = 1; i < keys.length; i++) {
    if ((keys[i - 1] as string) > (keys[i] as string)) {
      keys.sort();
      break;
    }
  }
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    out += (i === 0 ? "" : ",") + JSON.stringify(k) + ":" + canonical(obj[k]);
  }
  return out + "}";
}

/**
 * What makes two proposals with one toolCallId the same call (intent may be reworded, and
 * the tool hash is evidence read for the first decision, not part of the call): a
 * SHA-256 of the canonical call, so that it can be stored without storing argument values.
 */
export function proposalFingerprint(p: ToolCallProposal): string {
  const text = canonical({ n: p.namespace, e: p.execution, i: p.iteration, s: p.step, t: p.tool, a: p.args });
  return createHash("sha256").update(text).digest("hex");
}
