// The worker's side of the inner loop: sends a proposal and waits for the gate's decision,
// re-sending the same proposal (same toolCallId) with backoff until a total deadline.
import { createInbox, headers, type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallErrorCode, ToolCallProposal } from "../api/protocol.js";
import { Backoff, sleep } from "../backoff.js";
import { TRACEPARENT } from "../telemetry/trace-context.js";
import { ATTEMPT_HEADER, decodeReply, encodeProposal } from "./codec.js";
import { inboxPrefix, toolCallSubject } from "./subjects.js";

/** Why a proposal got no decision. */
export type ToolCallFailure =
  /** No decision arrived before the total deadline (gate down, unreachable, or too slow). */
  | "deadline_exceeded"
  /** The gate refused the proposal itself (invalid, forbidden, conflicting toolCallId). */
  | ToolCallErrorCode
  /** The gate's reply did not match the protocol. */
  | "invalid_reply"
  /** The caller aborted the wait. */
  | "aborted";

/** A proposal that ended without a decision; `field` names the offending field when known. */
export class ToolCallError extends Error {
  override readonly name = "ToolCallError";
  constructor(
    readonly code: ToolCallFailure,
    message: string,
    readonly field?: string,
    options?: ErrorOptions,
    /** Set on deadline_exceeded when the NATS server refused the worker's own publish (its credentials), not a gate that could not be reached. */
    readonly serverRefused?: string,
    /** On deadline_exceeded: how long the proposal waited, in ms. */
    readonly waitedMs?: number,
  ) {
    super(message, options);
  }
}

export interface ToolCallClientOptions {
  /** How long to wait for a reply before re-sending; default 2 s. */
  attemptTimeoutMs?: number;
  /** How long to keep trying in all; default 330 s (a judge's default 300 s plus margin). */
  totalTimeoutMs?: number;
  /** Epoch ms after which no proposal waits any longer (the worker's iteration deadline), whatever totalTimeoutMs says. */
  deadlineMs?: number;
  /** Pause added after each unanswered attempt: initial, doubled each time up to max; default 100 ms .. 5 s. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** W3C traceparent sent with every proposal (header `traceparent`): the worker's iteration span. */
  traceParent?: string;
}

/** The headers of send N: the attempt after the first, the trace context on every send. */
function sendHeaders(n: number, traceParent: string | undefined): MsgHdrs | undefined {
  if (n === 1 && traceParent === undefined) return undefined;
  const h = headers();
  if (n > 1) h.set(ATTEMPT_HEADER, String(n));
  if (traceParent !== undefined) h.set(TRACEPARENT, traceParent);
  return h;
}

/** Sends one execution's proposals to the gate. */
export class ToolCallClient {
  private readonly attemptMs: number;
  private readonly totalMs: number;
  private readonly backoffInitial: number;
  private readonly backoffMax: number;
  private readonly traceParent: string | undefined;
  private readonly deadlineMs: number | undefined;
  /** Since when the connection is down (epoch ms), for the outcome of a proposal that waited on it. */
  private disconnectedAt: number | undefined;
  /** How many times each proposal was sent, for tests and logs. */
  readonly sends = new Map<string, number>();

  constructor(
    private readonly nc: NatsConnection,
    options: ToolCallClientOptions = {},
  ) {
    this.attemptMs = options.attemptTimeoutMs ?? 2000;
    this.totalMs = options.totalTimeoutMs ?? 330_000;
    this.backoffInitial = options.backoffInitialMs ?? 100;
    this.backoffMax = options.backoffMaxMs ?? 5000;
    this.traceParent = options.traceParent;
    this.deadlineMs = options.deadlineMs;
    // Permission violations arrive asynchronously; remember the last one for the error message.
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "error" && /Permissions Violation/i.test(s.error.message)) this.lastPermissionError = s.error.message;
        else if (s.type === "disconnect") this.disconnectedAt ??= Date.now();
        else if (s.type === "reconnect") this.disconnectedAt = undefined;
      }
    })().catch(() => undefined);
  }

  private lastPermissionError: string | undefined;

  /** The error of a proposal that got no decision in time, saying what the client saw meanwhile. */
  private noDecision(proposal: ToolCallProposal, subject: string, sends: number, noResponders: number, started: number): ToolCallError {
    const down = this.disconnectedAt === undefined ? undefined : Math.round((Date.now() - this.disconnectedAt) / 1000);
    return new ToolCallError(
      "deadline_exceeded",
      `no decision for tool call ${proposal.toolCallId} (${proposal.tool}) on ${subject} after ${sends} send(s) in ${Date.now() - started} ms` +
        (down !== undefined ? `; NATS unreachable (disconnected for the last ${down} s)` : "") +
        (noResponders > 0 ? `; no gate was listening ${noResponders} time(s)` : "") +
        (this.lastPermissionError !== undefined ? `; the server refused: ${this.lastPermissionError}` : ""),
      undefined,
      undefined,
      this.lastPermissionError,
      Date.now() - started,
    );
  }
  private tokens = 0;
  private readonly muxes = new Map<string, { base: string; handlers: Map<string, (m: Msg) => void> }>();

  // One wildcard subscription per inbox prefix carries the replies of every proposal, so a
  // proposal costs no SUB/UNSUB round of its own (a worker only ever uses its own prefix).
  private mux(prefix: string): { base: string; handlers: Map<string, (m: Msg) => void> } {
    let mux = this.muxes.get(prefix);
    if (mux === undefined) {
      const handlers = new Map<string, (m: Msg) => void>();
      const base = createInbox(prefix);
      this.nc.subscribe(`${base}.*`, {
        callback: (err, m) => {
          if (err !== null) return;
          handlers.get(m.subject.slice(base.length + 1))?.(m);
        },
      });
      mux = { base, handlers };
      this.muxes.set(prefix, mux);
    }
    return mux;
  }

  /**
   * Proposes a call and resolves with the gate's decision. A reply to any earlier send of
   * the same proposal is accepted too: all sends share one reply subject.
   */
  async propose(proposal: ToolCallProposal, signal?: AbortSignal): Promise<ToolCallDecision> {
    const data = encodeProposal(proposal);
    const subject = toolCallSubject(proposal.namespace, proposal.execution);
    const mux = this.mux(inboxPrefix(proposal.namespace, proposal.execution));
    const token = String(++this.tokens);
    const inbox = `${mux.base}.${token}`;
    const started = Date.now();
    const deadline = Math.min(started + this.totalMs, this.deadlineMs ?? Number.POSITIVE_INFINITY);

    let wake: ((m: Msg | undefined) => void) | undefined;
    const queued: Msg[] = [];
    mux.handlers.set(token, (m) => {
      if (wake !== undefined) wake(m);
      else queued.push(m);
    });
    const onAbort = () => wake?.(undefined);
    signal?.addEventListener("abort", onAbort);
    const next = (ms: number): Promise<Msg | undefined> => {
      const ready = queued.shift();
      if (ready !== undefined) return Promise.resolve(ready);
      return new Promise((resolve) => {
        const timer = setTimeout(() => done(undefined), ms);
        const done = (m: Msg | undefined) => {
          clearTimeout(timer);
          wake = undefined;
          resolve(m);
        };
        wake = done;
      });
    };

    try {
      let sends = 0;
      let noResponders = 0;
      const backoff = new Backoff({ initialMs: this.backoffInitial, maxMs: this.backoffMax });
      while (Date.now() < deadline) {
        if (signal?.aborted) throw new ToolCallError("aborted", `proposal ${proposal.toolCallId} aborted`);
        sends++;
        // A re-send says so: the gate then answers only what its store acknowledged.
        const h = sendHeaders(sends, this.traceParent);
        this.nc.publish(subject, data, h === undefined ? { reply: inbox } : { reply: inbox, headers: h });
        this.sends.set(proposal.toolCallId, sends);
        // Each send waits a little longer for its reply than the one before.
        const waited = backoff.next();
        const m = await next(Math.min(this.attemptMs + waited, Math.max(0, deadline - Date.now())));
        if (m === undefined) continue;
        if (m.headers?.code === 503) {
          // No gate is subscribed (starting or restarting): wait, then send again.
          noResponders++;
          await sleep(Math.min(waited, Math.max(0, deadline - Date.now())), signal);
          continue;
        }
        const reply = decodeReply(m.data);
        if (!reply.ok) {
          throw new ToolCallError(
            "invalid_reply",
            `gate replied to ${proposal.toolCallId} with an invalid message: ${reply.error.message}`,
            reply.error.field,
            { cause: reply.error },
          );
        }
        if (reply.value.kind === "error") {
          const e = reply.value.reply.error;
          // An internal gate error is worth another try; everything else is final.
          if (e.code === "internal") continue;
          throw new ToolCallError(e.code, `gate refused proposal ${proposal.toolCallId}: ${e.message}`, e.field);
        }
        const decision = reply.value.decision;
        if (decision.toolCallId !== proposal.toolCallId) {
          throw new ToolCallError(
            "invalid_reply",
            `gate answered toolCallId ${decision.toolCallId} for ${proposal.toolCallId}`,
            "/toolCallId",
          );
        }
        return decision;
      }
      if (signal?.aborted) throw new ToolCallError("aborted", `proposal ${proposal.toolCallId} aborted`);
      throw this.noDecision(proposal, subject, sends, noResponders, started);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      mux.handlers.delete(token);
    }
  }
}
