// The gate's side of the inner loop: answers every execution's tool-call proposals with the
// injected `decide`, exactly once per toolCallId across every gate replica, and records
// each decision in the one tool-call store so that any re-send, reaching any replica,
// gets that same decision. The idempotency rule lives here and nowhere else.
import { hostname } from "node:os";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallErrorReply, ToolCallProposal } from "../../api/protocol.js";
import { Backoff } from "../../backoff.js";
import { ConflictError, messageOf } from "../../errors.js";
import { TRACEPARENT } from "../../telemetry/trace-context.js";
import { ATTEMPT_HEADER, decodeProposal, encodeErrorReply, proposalFingerprint } from "../../transport/codec.js";
import { parseToolCallSubject, replyPrefixOf, TOOL_CALL_WILDCARD } from "../../transport/subjects.js";
import { CallLog } from "./call-log.js";
import { checked, failClosed, isJudged, ToolCallRefusal, type DecideContext, type Judged } from "./decide.js";
import {
  decisionSubject,
  LOCAL_RUN,
  type CallFacts,
  type ClaimRecord,
  type DecisionRecord,
  type RunRef,
  type StoredRecord,
} from "./records.js";
import type { ToolCallServiceOptions, ToolCallServiceStats } from "./service-options.js";
import { ToolCallStore } from "./store.js";

interface Pending {
  fingerprint: string;
  decision: Promise<ToolCallDecision>;
}

/** A running tool-call service; stop() drains it. */
export class ToolCallService {
  readonly stats: ToolCallServiceStats = {
    proposals: 0,
    decides: 0,
    stored: 0,
    fromDecision: 0,
    fromInFlight: 0,
    waitedOnClaim: 0,
    takeovers: 0,
    lostRaces: 0,
    unanswerable: 0,
    errors: 0,
  };
  private readonly pending = new Map<string, Pending>();
  /** The traceparent header each proposal arrived with (decoded proposals are per message). */
  private readonly traceParents = new WeakMap<ToolCallProposal, string>();
  /** The run each proposal belongs to (runOf), read when deciding it. */
  private readonly runs = new WeakMap<ToolCallProposal, RunRef>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly gateId: string;
  private readonly leaseMs: number;
  private readonly maxBytes: number;
  private sub: Subscription | undefined;
  private stopping = false;

  private constructor(
    private readonly nc: NatsConnection,
    readonly store: ToolCallStore,
    private readonly options: ToolCallServiceOptions,
    private readonly callLog: CallLog | undefined,
  ) {
    this.gateId = options.gateId ?? `${hostname()}-${process.pid}`;
    this.leaseMs = options.claimLeaseMs ?? 15_000;
    this.maxBytes = options.maxProposalBytes ?? 256 * 1024;
  }

  /** Opens the store (replaying it), then starts answering proposals. */
  static async start(nc: NatsConnection, options: ToolCallServiceOptions): Promise<ToolCallService> {
    const store = await ToolCallStore.open(nc, options.store);
    const replicas = options.store?.replicas;
    const callLog =
      options.callLog === undefined
        ? undefined
        : await CallLog.open(nc, { ...(replicas !== undefined ? { replicas } : {}), ...options.callLog });
    const service = new ToolCallService(nc, store, options, callLog);
    service.sub = nc.subscribe(TOOL_CALL_WILDCARD, {
      queue: options.queue ?? "gavel-gate",
      callback: (err, msg) => {
        if (err === null) service.track(service.handle(msg));
      },
    });
    await nc.flush();
    return service;
  }

  /** True while proposals are taken and the store is followed. */
  get serving(): boolean {
    return this.sub !== undefined && !this.sub.isClosed() && !this.nc.isClosed() && !this.stopping;
  }

  /**
   * Stops taking proposals, lets running decides finish and reply (for at most `graceMs`,
   * default 30 s; a claim still held then is taken over by another gate when the worker
   * re-sends), then stops following the store.
   */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    this.sub?.unsubscribe();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.callLog?.close();
    await this.store.close();
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

  private conflict(msg: Msg, id: string): void {
    this.replyError(msg, {
      toolCallId: id,
      error: { code: "conflict", field: "/toolCallId", message: `toolCallId ${id} was already used for a different call` },
    });
  }

  private async handle(msg: Msg): Promise<void> {
    this.stats.proposals++;
    // Answered only in the sender's own inbox (replyPrefixOf says why); anything else gets no answer at all.
    if (msg.reply === undefined || !msg.reply.startsWith(replyPrefixOf(msg.subject))) {
      this.stats.errors++;
      this.stats.unanswerable++;
      this.options.logger?.warn(
        { subject: msg.subject, reply: msg.reply?.slice(0, 256) },
        "tool-call proposal whose reply subject is not in its execution's inbox: not answered",
      );
      return;
    }
    const decoded = decodeProposal(msg.data);
    if (!decoded.ok) {
      const id = idOf(msg.data);
      this.replyError(msg, {
        ...(id !== undefined ? { toolCallId: id } : {}),
        error: { code: "invalid_proposal", field: decoded.error.field, message: decoded.error.message },
      });
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
    let ref: RunRef;
    try {
      ref = {
        namespace: p.namespace,
        execution: p.execution,
        run: this.options.runOf === undefined ? LOCAL_RUN : await this.options.runOf(p),
      };
    } catch (err) {
      if (err instanceof ToolCallRefusal)
        this.replyError(msg, { toolCallId: p.toolCallId, error: { code: err.code, field: err.field, message: err.message } });
      else
        this.replyError(msg, {
          toolCallId: p.toolCallId,
          error: { code: "internal", message: `the gate could not read the proposal's Execution: ${messageOf(err)}` },
        });
      return;
    }
    this.runs.set(p, ref);
    const key = decisionSubject(ref, p.toolCallId);
    const fingerprint = proposalFingerprint(p);
    const attempt = Number(msg.headers?.get(ATTEMPT_HEADER) ?? "1") || 1;
    const traceParent = msg.headers?.get(TRACEPARENT);
    if (traceParent !== undefined && traceParent !== "") this.traceParents.set(p, traceParent);
    let replied = false;
    const reply: Reply = (d) => {
      if (replied) return;
      replied = true;
      msg.respond(JSON.stringify(d));
    };
    let decision: ToolCallDecision;
    try {
      decision = await this.answer(key, fingerprint, p, msg.data.length, attempt, reply);
    } catch (err) {
      if (err instanceof ConflictError) return this.conflict(msg, p.toolCallId);
      if (err instanceof ToolCallRefusal) {
        this.replyError(msg, { toolCallId: p.toolCallId, error: { code: err.code, field: err.field, message: err.message } });
        return;
      }
      // The store is unreachable and nothing is known: the worker re-sends.
      this.options.logger?.error({ toolCallId: p.toolCallId, err }, "no decision could be made or read");
      this.replyError(msg, {
        toolCallId: p.toolCallId,
        error: { code: "internal", message: `the gate could not answer: ${messageOf(err)}` },
      });
      return;
    }
    reply(decision);
  }

  // The one rule: a decision already stored answers; a decide running here is joined; a
  // claim held elsewhere is waited on (or taken over when stale); otherwise decide now.
  private answer(
    key: string,
    fingerprint: string,
    p: ToolCallProposal,
    bytes: number,
    attempt: number,
    reply: Reply,
  ): Promise<ToolCallDecision> {
    const running = this.pending.get(key);
    if (running !== undefined) {
      if (running.fingerprint !== fingerprint) return Promise.reject(reused(p.toolCallId));
      this.stats.fromInFlight++;
      return running.decision;
    }
    const known = this.store.get(key);
    if (known !== undefined && known.record.fingerprint !== fingerprint) return Promise.reject(reused(p.toolCallId));
    if (known?.record.kind === "decision" && this.store.hasBody(key)) {
      this.stats.fromDecision++;
      return Promise.resolve(known.record.decision);
    }
    const decision = (
      known === undefined ? this.decideNew(key, fingerprint, p, bytes, attempt, reply) : this.resolveExisting(key, fingerprint, p, known)
    ).finally(() => {
      if (this.pending.get(key)?.decision === decision) this.pending.delete(key);
    });
    this.pending.set(key, { fingerprint, decision });
    return decision;
  }

  private facts(p: ToolCallProposal, fingerprint: string): CallFacts {
    return { fingerprint, iteration: p.iteration, step: p.step, tool: p.tool, ...(p.mcp !== undefined ? { server: p.mcp.server } : {}) };
  }

  // What the iteration already did; when this mirror misses an earlier step (another
  // replica decided it a moment ago), catch up with the stream first.
  private async context(p: ToolCallProposal): Promise<DecideContext> {
    const traceParent = this.traceParents.get(p);
    const trace = traceParent !== undefined ? { traceParent } : {};
    const ref = this.runs.get(p) ?? { namespace: p.namespace, execution: p.execution, run: LOCAL_RUN };
    const view = this.store.iteration(ref, p.iteration);
    if (view.hasSteps(p.step)) return { iteration: view, ...trace };
    await this.store.catchUp(2000).catch(() => false);
    return { iteration: this.store.iteration(ref, p.iteration), ...trace };
  }

  private async runDecide(p: ToolCallProposal, bytes: number): Promise<ToolCallDecision | Judged> {
    this.stats.decides++;
    if (bytes > this.maxBytes) {
      return failClosed(
        p,
        `argument_too_large: the proposal is ${bytes} bytes; the gate decides proposals of at most ${this.maxBytes} bytes`,
      );
    }
    const started = performance.now();
    try {
      return await this.options.decide(p, await this.context(p));
    } catch (err) {
      if (err instanceof ToolCallRefusal) throw err;
      this.options.logger?.error({ toolCallId: p.toolCallId, err }, "decide failed; denying the call");
      return failClosed(p, `gate_error: ${messageOf(err)}`, performance.now() - started);
    }
  }

  private async decideNew(
    key: string,
    fingerprint: string,
    p: ToolCallProposal,
    bytes: number,
    attempt: number,
    reply?: Reply,
  ): Promise<ToolCallDecision> {
    const outcome = await this.runDecide(p, bytes);
    if (!isJudged(outcome))
      return this.storeFinal(key, fingerprint, p, checked(p, outcome), 0, attempt === 1 && this.store.live ? reply : undefined);
    const claim = await this.store.put(key, this.claimRecord(p, fingerprint), 0);
    if (claim.ok) return this.runClaimed(key, fingerprint, p, claim.seq, outcome);
    if (claim.conflict) return this.resolveExisting(key, fingerprint, p, await this.store.fetch(key));
    throw claim.error;
  }

  /**
   * Stores a decision made without judges. On a first send with a live mirror (`fast`, the
   * proposal's reply) the reply does not wait for the store's acknowledgement: it is sent
   * right behind the write, in the same turn, so that both leave in one socket write and
   * the write is on the connection ahead of it; a re-send (seconds later) finds the record.
   * Otherwise the store answers first.
   */
  private async storeFinal(
    key: string,
    fingerprint: string,
    p: ToolCallProposal,
    decision: ToolCallDecision,
    expectSeq: number,
    fast?: Reply,
  ): Promise<ToolCallDecision> {
    // Mirrored at once when not waiting: the worker's next step may come back here before the acknowledgement.
    const written = this.store.put(key, this.decisionRecord(p, fingerprint, decision), expectSeq, fast !== undefined);
    if (fast !== undefined) {
      fast(decision);
      void written.then((r) => {
        if (r.ok) this.decided(p, decision);
        else if (r.conflict) {
          this.stats.lostRaces++;
          this.options.logger?.warn({ toolCallId: p.toolCallId }, "another gate stored a decision for this call first");
        } else this.options.logger?.error({ toolCallId: p.toolCallId, err: r.error }, "could not store a tool-call decision");
      });
      return decision;
    }
    const r = await written;
    if (r.ok) {
      this.decided(p, decision);
      return decision;
    }
    if (r.conflict) return this.resolveExisting(key, fingerprint, p, await this.store.fetch(key));
    throw r.error;
  }

  private decided(p: ToolCallProposal, d: ToolCallDecision): void {
    this.stats.stored++;
    // Off the answer's path: the worker has its decision; a lost record only narrows a later replay.
    this.callLog
      ?.record(this.runs.get(p) ?? { namespace: p.namespace, execution: p.execution, run: LOCAL_RUN }, p, d)
      .catch((err: unknown) =>
        this.options.logger?.warn({ toolCallId: p.toolCallId, err: messageOf(err) }, "could not record a decided call"),
      );
    try {
      this.options.onDecided?.(p, d);
    } catch (err) {
      this.options.logger?.warn({ toolCallId: p.toolCallId, err }, "onDecided failed");
    }
  }

  /** Runs the judges while holding the claim (renewed), then stores the decision in its place. */
  private async runClaimed(
    key: string,
    fingerprint: string,
    p: ToolCallProposal,
    claimSeq: number,
    outcome: Judged,
  ): Promise<ToolCallDecision> {
    let seq = claimSeq;
    let lost = false;
    let renewing: Promise<void> = Promise.resolve();
    const renew = setInterval(
      () => {
        renewing = renewing.then(async () => {
          if (lost) return;
          const r = await this.store.put(key, this.claimRecord(p, fingerprint), seq);
          if (r.ok) seq = r.seq;
          else if (r.conflict) lost = true;
        });
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    let decision: ToolCallDecision;
    try {
      decision = checked(p, await outcome.judged());
    } catch (err) {
      this.options.logger?.error({ toolCallId: p.toolCallId, err }, "judging failed; denying the call");
      decision = failClosed(p, `gate_error: ${messageOf(err)}`);
    } finally {
      clearInterval(renew);
    }
    await renewing;
    // Stored in place of the claim; an unreachable store is retried while the worker waits.
    const backoff = new Backoff({ initialMs: 100, maxMs: 5000 });
    for (;;) {
      if (lost) return this.resolveExisting(key, fingerprint, p, await this.store.fetch(key));
      const r = await this.store.put(key, this.decisionRecord(p, fingerprint, decision), seq);
      if (r.ok) {
        this.decided(p, decision);
        return decision;
      }
      if (r.conflict) {
        lost = true;
        continue;
      }
      this.options.logger?.warn({ toolCallId: p.toolCallId, err: r.error }, "could not store a judged decision; retrying");
      if (this.nc.isClosed()) throw r.error;
      await backoff.wait();
    }
  }

  /** A record exists: answer its decision, or wait on its claim (taking it over when stale). */
  private async resolveExisting(
    key: string,
    fingerprint: string,
    p: ToolCallProposal,
    found: StoredRecord | undefined,
  ): Promise<ToolCallDecision> {
    let current = found;
    if (current?.record.kind === "claim") this.stats.waitedOnClaim++;
    for (;;) {
      if (current === undefined) {
        // Gone (aged out between reads): decide afresh, still through the store's compare-and-set.
        return this.decideNew(key, fingerprint, p, 0, 2);
      }
      if (current.record.fingerprint !== fingerprint) throw reused(p.toolCallId);
      if (current.record.kind === "decision") {
        if (current.record.decision !== undefined) {
          this.stats.fromDecision++;
          return current.record.decision;
        }
        current = await this.store.fetch(key);
        continue;
      }
      const claim = current;
      const next = await this.waitForChange(key, claim);
      if (next !== undefined) {
        current = next;
        continue;
      }
      // The claimant stopped renewing: take the call over with a compare-and-set on its claim.
      const taken = await this.store.put(key, this.claimRecord(p, fingerprint), claim.seq);
      if (taken.ok) {
        this.stats.takeovers++;
        this.options.logger?.warn(
          { toolCallId: p.toolCallId, from: claim.record.kind === "claim" ? claim.record.gate : undefined },
          "took over a stale tool-call claim",
        );
        const outcome = await this.runDecide(p, 0);
        if (!isJudged(outcome)) return this.storeFinal(key, fingerprint, p, checked(p, outcome), taken.seq);
        return this.runClaimed(key, fingerprint, p, taken.seq, outcome);
      }
      current = await this.store.fetch(key);
    }
  }

  // Resolves with a newer record of the call, or undefined once the claim is older than the lease.
  private waitForChange(key: string, claim: StoredRecord): Promise<StoredRecord | undefined> {
    return new Promise((resolve) => {
      const done = (r: StoredRecord | undefined) => {
        clearTimeout(timer);
        unwatch();
        resolve(r);
      };
      const timer = setTimeout(() => done(undefined), Math.max(0, claim.at + this.leaseMs - Date.now()));
      const unwatch = this.store.watch(key, (r) => {
        if (r.seq > claim.seq) done(r);
      });
      const newer = this.store.get(key);
      if (newer !== undefined && newer.seq > claim.seq) done(newer);
    });
  }

  private claimRecord(p: ToolCallProposal, fingerprint: string): ClaimRecord {
    return { kind: "claim", ...this.facts(p, fingerprint), gate: this.gateId, write: ToolCallStore.writeId() };
  }

  private decisionRecord(p: ToolCallProposal, fingerprint: string, decision: ToolCallDecision): DecisionRecord {
    return { kind: "decision", ...this.facts(p, fingerprint), gate: this.gateId, write: ToolCallStore.writeId(), decision };
  }
}

/** Answers the proposal being handled (at most once; later calls do nothing). */
type Reply = (decision: ToolCallDecision) => void;

// A toolCallId names one call: the same id with another fingerprint is a conflict (HTTP 409's
// "exists already"), answered with the error reply `conflict`, never decided.
function reused(toolCallId: string): ConflictError {
  return new ConflictError(`toolCallId ${toolCallId} was already used for a different call`);
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
