// What the tool-call store holds: one JetStream subject per call, named by its Execution's
// namespace, name and run (uid) and its toolCallId, whose last message is the call's record —
// a claim while a gate decides it, then its decision.
import type { ToolCallDecision } from "../../api/protocol.js";
import { token, untoken } from "../../transport/subjects.js";

/** The stream holding every call's record while it may still be asked for again. */
export const DECISION_STREAM = "GAVEL_DECISIONS";
/** Prefix of record subjects: gavel.decisions.<namespace>.<execution>.<run>.<toolCallId>. */
export const DECISION_SUBJECT_PREFIX = "gavel.decisions";

/**
 * Which run of a named Execution a record belongs to: its uid on a cluster, where an
 * Execution deleted and created again under the same name is another run whose calls must
 * never meet the first one's (re-send answers, sequence contracts, status counts). A local
 * run has its own nats-server, so its one run is LOCAL_RUN.
 */
export type RunId = string;
export const LOCAL_RUN: RunId = "local";

/** Where one execution run's records are: namespace, execution name and run (its uid). */
export interface RunRef {
  namespace: string;
  execution: string;
  run: RunId;
}

/** Subject (and key) of one call's record; toolCallId is already a valid token. */
export function decisionSubject(ref: RunRef, toolCallId: string): string {
  return `${runPrefix(ref)}.${toolCallId}`;
}

/** The call a record subject names; undefined when it is not one (records of older gavel versions have no run). */
export function parseDecisionSubject(subject: string): (RunRef & { toolCallId: string }) | undefined {
  const parts = subject.split(".");
  if (parts.length !== 6 || `${parts[0]}.${parts[1]}` !== DECISION_SUBJECT_PREFIX) return undefined;
  return { namespace: untoken(parts[2] ?? ""), execution: untoken(parts[3] ?? ""), run: parts[4] ?? "", toolCallId: parts[5] ?? "" };
}

/** Subject prefix of one run's records (no trailing dot). */
export function runPrefix(ref: RunRef): string {
  return `${DECISION_SUBJECT_PREFIX}.${token(ref.namespace)}.${token(ref.execution)}.${runToken(ref.run)}`;
}

// A uid is lower-case hex and dashes: one NATS token as it is.
function runToken(run: RunId): string {
  if (!/^[a-z0-9][-a-z0-9]*$/.test(run)) throw new Error(`"${run}" is not a valid execution run id (an Execution uid)`);
  return run;
}

/** What identifies the call a record is about; never an argument value. */
export interface CallFacts {
  /** SHA-256 of the canonical call (codec.ts proposalFingerprint). */
  fingerprint: string;
  iteration: number;
  step: number;
  tool: string;
  /** The MCP server whose tool this is (ADR 0051); absent for a built-in. */
  server?: string;
}

/** A gate is deciding the call; `gate` renews it while it waits on judges. */
export interface ClaimRecord extends CallFacts {
  kind: "claim";
  gate: string;
  /** Unique per write: a retried write recognises itself. */
  write: string;
}

/** The call's decision, the same answer for every re-send. */
export interface DecisionRecord extends CallFacts {
  kind: "decision";
  gate: string;
  write: string;
  decision: ToolCallDecision;
}

export type ToolCallRecord = ClaimRecord | DecisionRecord;

/** A record as the store knows it: its stream sequence and when the server stored it. */
export interface StoredRecord {
  record: ToolCallRecord;
  seq: number;
  /** Milliseconds since the epoch (the server's clock), or the local clock for own writes. */
  at: number;
}
