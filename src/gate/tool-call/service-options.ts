// What a tool-call service is given (its decide, how it tells runs apart, its store, claim
// lease and size limit) and what it counts, for tests and the metrics exporter.
import type { Logger } from "pino";
import type { ToolCallDecision, ToolCallProposal } from "../../api/protocol.js";
import type { CallLogOptions } from "./call-log.js";
import type { Decide } from "./decide.js";
import type { RunId } from "./records.js";
import type { ToolCallStoreOptions } from "./store.js";

/** What a tool-call service is given. */
export interface ToolCallServiceOptions {
  decide: Decide;
  /**
   * Which run of the named Execution a proposal belongs to (its uid), so that the calls of
   * an Execution deleted and created again under the same name never meet: a re-send is
   * answered, and a sequence contract counts, only within one run. Throwing a
   * ToolCallRefusal refuses the proposal; any other error is answered `internal` (the worker
   * re-sends). Default LOCAL_RUN: a local run has a nats-server of its own.
   */
  runOf?: (proposal: ToolCallProposal) => Promise<RunId> | RunId;
  /** Called once per stored decision, by the gate that stored it (audit, events, status). */
  onDecided?: (proposal: ToolCallProposal, decision: ToolCallDecision) => void;
  /** Queue group shared by every gate replica; default "gavel-gate". */
  queue?: string;
  store?: ToolCallStoreOptions;
  /**
   * Records each decided call, its proposal included, in the stream GAVEL_CALLS for `gavel
   * replay` (ADR 0076), after the decision is stored; not recorded when undefined.
   */
  callLog?: CallLogOptions;
  /** This gate's name in claims; default `<hostname>-<pid>`. */
  gateId?: string;
  /** A claim not renewed for this long may be taken over; default 15 s. Renewed every third of it. */
  claimLeaseMs?: number;
  /** Largest proposal (bytes on the wire) the gate decides; larger ones are denied. Default 256 KiB. */
  maxProposalBytes?: number;
  logger?: Logger;
}

/** Counters a test or a metrics exporter can read. */
export interface ToolCallServiceStats {
  proposals: number;
  /** Calls of `decide` on this instance (first decides and takeovers). */
  decides: number;
  /** Decisions this instance stored: one per call across every replica. */
  stored: number;
  /** Answered from a decision already stored (by any replica, before or after a restart). */
  fromDecision: number;
  /** Re-sends that joined a decide running on this instance. */
  fromInFlight: number;
  /** Proposals that waited for another replica's claim to end. */
  waitedOnClaim: number;
  /** Claims of a dead or stuck gate taken over here. */
  takeovers: number;
  /** Decisions answered here but refused by the store (another gate stored first). */
  lostRaces: number;
  /** Proposals not answered because their reply subject was outside the sender's inbox (or missing). */
  unanswerable: number;
  errors: number;
}
