// The gate's side of the inner loop: answers every execution's tool-call proposals with the
// injected `decide`, exactly once per toolCallId, and records each decision durably so
// that a re-sent proposal is answered from it, even by a restarted gate.
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import {
  checkDecision,
  decodeProposal,
  encodeErrorReply,
  proposalFingerprint,
  type ToolCallErrorReply,
} from "./codec.js";
import { parseToolCallSubject, TOOL_CALL_WILDCARD } from "./subjects.js";
import {
  DecisionStore,
  decisionSubject,
  ensureDecisionStream,
  type DecisionStoreOptions,
  type StoredDecision,
} from "./tool-call-store.js";

/** The gate's decision function (guard, skip_judge, judges); injected, never imported here. */
export type Decide = (proposal: ToolCallProposal) => Promise<ToolCallDecision>;

export interface ToolCallServiceOptions {
  decide: Decide;
  /** Queue group shared by every gate replica; default "gavel-gate". */
  queue?: string;
  /** Record decisions in JetStream and replay them at start; default true. */
  durable?: boolean;
  store?: DecisionStoreOptions;
  /** Decisions kept in memory (oldest dropped first); default 100,000. */
  maxCachedDecisions?: number;
  logger?: Logger;
}

/** Counters a test or a metrics exporter can read. */
export interface ToolCallServiceStats {
  proposals: number;
  /** Calls of `decide`: one per distinct toolCallId on this instance. */
  decides: number;
  /** Answered from a decision already made (here or replayed from the stream). */
  fromDecision: number;
  /** Re-sends that joined a decide still running. */
  fromInFlight: number;
  errors: number;
}

interface Entry {
  fingerprint: string;
  decision?: ToolCallDecision;
  pending?: Promise<ToolCallDecision>;
}

/** A running tool-call service; stop() drains it. */
export class ToolCallService {
  readonly stats: ToolCallServiceStats = { proposals: 0, decides: 0, fromDecision: 0, fromInFlight: 0, errors: 0 };
  private readonly entries = new Map<string, Entry>();
  private readonly maxEntries: number;
  private readonly inFlight = new Set<Promise<unknown>>();
  private sub: Subscription | undefined;
  private store: DecisionStore | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly options: ToolCallServiceOptions,
  ) {
    this.maxEntries = options.maxCachedDecisions ?? 100_000;
  }

  /** Creates the decision stream if needed, replays it, then starts answering proposals. */
  static async start(nc: NatsConnection, options: ToolCallServiceOptions): Promise<ToolCallService> {
    const service = new ToolCallService(nc, options);
    if (options.durable ?? true) {
      await ensureDecisionStream(nc, options.store);
      service.store = new DecisionStore(nc);
      await service.store.follow((subject, record) => service.remember(subject, record), options.store?.followLive === true);
    }
    service.sub = nc.subscribe(TOOL_CALL_WILDCARD, {
      queue: options.queue ?? "gavel-gate",
      callback: (err, msg) => {
        if (err === null) service.track(service.handle(msg));
      },
    });
    await nc.flush();
    return service;
  }

  /**
   * Stops taking proposals, lets running decides finish and reply (for at most `graceMs`,
   * default 30 s; a decide still running then is re-run by the next gate when the worker
   * re-sends), then stops following the stream.
   */
  async stop(graceMs = 30_000): Promise<void> {
    this.sub?.unsubscribe();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((r) => (timer = setTimeout(r, graceMs))),
    ]);
    clearTimeout(timer);
    await this.store?.close();
  }

  // A decision stored by any gate (this one included) becomes answerable here.
  private remember(subject: string, record: StoredDecision): void {
    const existing = this.entries.get(subject);
    if (existing !== undefined) return;
    this.put(subject, { fingerprint: record.fingerprint, decision: record.decision });
  }

  private put(key: string, entry: Entry): void {
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) {
      // Map iteration order is insertion order: drop the oldest finished entry.
      for (const [k, e] of this.entries) {
        if (e.pending === undefined) {
          this.entries.delete(k);
          break;
        }
      }
    }
  }

  // Keeps a handler's promise until it settles; a failure (e.g. replying on a connection
  // that closed meanwhile) is logged, never an unhandled rejection.
  private track(p: Promise<unknown>): void {
    const settled: Promise<void> = p.then(
      () => undefined,
      (err: unknown) => {
        this.stats.errors++;
        this.options.logger?.error({ err }, "tool-call handler failed");
      },
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
  }

  private replyError(msg: Msg, reply: ToolCallErrorReply): void {
    this.stats.errors++;
    this.options.logger?.warn({ subject: msg.subject, toolCallId: reply.toolCallId, error: reply.error }, "tool-call proposal refused");
    msg.respond(encodeErrorReply(reply));
  }

  private async handle(msg: Msg): Promise<void> {
    this.stats.proposals++;
    const decoded = decodeProposal(msg.data);
    if (!decoded.ok) {
      const id = idOf(msg.data);
      this.replyError(msg, { ...(id !== undefined ? { toolCallId: id } : {}), error: { code: "invalid_proposal", field: decoded.error.field, message: decoded.error.message } });
      return;
    }
    const p = decoded.value;
    // Credentials limit a worker to its own subject; the payload must agree with it.
    const from = parseToolCallSubject(msg.subject);
    for (const field of ["namespace", "execution"] as const) {
      if (from?.[field] !== p[field]) {
        this.replyError(msg, {
          toolCallId: p.toolCallId,
          error: { code: "forbidden", field: `/${field}`, message: `proposal names ${field} "${p[field]}" but was sent on ${msg.subject}` },
        });
        return;
      }
    }
    const key = decisionSubject(p.namespace, p.execution, p.toolCallId);
    const fingerprint = proposalFingerprint(p);
    let entry = this.entries.get(key);
    if (entry !== undefined && entry.fingerprint !== fingerprint) {
      this.replyError(msg, {
        toolCallId: p.toolCallId,
        error: { code: "conflict", field: "/toolCallId", message: `toolCallId ${p.toolCallId} was already used for a different call` },
      });
      return;
    }
    if (entry?.decision !== undefined) {
      this.stats.fromDecision++;
      msg.respond(JSON.stringify(entry.decision));
      return;
    }
    if (entry?.pending !== undefined) {
      this.stats.fromInFlight++;
    } else {
      entry = { fingerprint, pending: this.decideOnce(key, fingerprint, p) };
      this.put(key, entry);
    }
    const decision = await (entry.pending as Promise<ToolCallDecision>);
    msg.respond(JSON.stringify(decision));
  }

  // Runs decide for one call; never rejects: a failing or malformed decide denies the call.
  private async decideOnce(key: string, fingerprint: string, p: ToolCallProposal): Promise<ToolCallDecision> {
    this.stats.decides++;
    const started = performance.now();
    const log = this.options.logger;
    log?.debug({ namespace: p.namespace, execution: p.execution, toolCallId: p.toolCallId, tool: p.tool, argKeys: Object.keys(p.args) }, "deciding tool call");
    let decision: ToolCallDecision;
    try {
      const produced = await this.options.decide(p);
      const checked = checkDecision(produced);
      if (!checked.ok) throw checked.error;
      if (checked.value.toolCallId !== p.toolCallId) {
        throw new Error(`decide answered toolCallId ${checked.value.toolCallId} for ${p.toolCallId}`);
      }
      decision = checked.value;
    } catch (err) {
      // Fail closed, and remember it: a re-send must not run a second decide.
      const reason = `gate_error: ${err instanceof Error ? err.message : String(err)}`;
      log?.error({ toolCallId: p.toolCallId, err }, "decide failed; denying the call");
      decision = {
        toolCallId: p.toolCallId,
        allowed: false,
        blocked_by: "guard",
        reason,
        guard: { approved: false, reason },
        skippedJudges: false,
        judges: [],
        latencyMs: performance.now() - started,
      };
    }
    this.entries.set(key, { fingerprint, decision });
    if (this.store !== undefined) {
      // Issued before the reply on the same connection, so stored-before-answered holds.
      if (this.options.store?.acknowledged !== true) {
        this.store.storeNoAck(key, { fingerprint, decision });
      } else {
        const stored = this.store.store(key, { fingerprint, decision }).catch((err: unknown) => {
          log?.error({ toolCallId: p.toolCallId, err }, "could not store tool-call decision");
        });
        this.track(stored);
      }
    }
    return decision;
  }
}

// Best effort: the toolCallId of a proposal too broken to decode, for the error reply.
function idOf(data: Uint8Array): string | undefined {
  try {
    const v = JSON.parse(Buffer.from(data).toString("utf8")) as unknown;
    if (typeof v === "object" && v !== null && "toolCallId" in v && typeof v.toolCallId === "string") return v.toolCallId.slice(0, 128);
  } catch {
    // not JSON at all
  }
  return undefined;
}
