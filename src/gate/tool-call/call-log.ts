// The recorded calls (ADR 0076): each decided call's proposal, arguments included, beside its
// decision, in a JetStream stream of their own, so that a run can be replayed against another
// GuardPolicy (`gavel replay`). The decision store's records stay free of argument values (its
// records answer re-sends; docs/protocol.md); this stream is written after a decision is stored,
// never on the way to the worker's answer, is read only with gavel's own NATS user, and ages out.
import type { NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { ToolCallDecision, ToolCallProposal } from "../../api/protocol.js";
import { messageOf } from "../../errors.js";
import { JetStreamPublisher } from "../../transport/jetstream-publisher.js";
import { ensureStream } from "../../transport/streams.js";
import { DECISION_SUBJECT_PREFIX, runPrefix, type RunRef } from "./records.js";

/** The stream of recorded calls. */
export const CALL_LOG_STREAM = "GAVEL_CALLS";
/** Prefix of its subjects: gavel.calls.<namespace>.<execution>.<run>.<toolCallId>. */
export const CALL_LOG_SUBJECT_PREFIX = "gavel.calls";

/** How long and how much the stream keeps; what a gate that records calls is given. */
export interface CallLogOptions {
  /** Default 24 hours: a replay looks at yesterday's runs. */
  maxAgeSeconds?: number;
  /** Default 128 MiB: the oldest calls go first (proposals are up to 256 KiB each). */
  maxBytes?: number;
  /** The stream's replicas on a JetStream cluster (as the decision store's). */
  replicas?: number;
}

/** One recorded call: the proposal as the worker sent it, the decision it got, and when. */
export interface LoggedCall {
  proposal: ToolCallProposal;
  decision: ToolCallDecision;
  decidedAt: string;
}

/** Subject of one call's record: the decision store's run prefix under gavel.calls. */
export function callLogSubject(ref: RunRef, toolCallId: string): string {
  return `${callLogRunPrefix(ref)}.${toolCallId}`;
}

function callLogRunPrefix(ref: RunRef): string {
  // runPrefix checks the run id and escapes the names; only the first two tokens differ.
  return `${CALL_LOG_SUBJECT_PREFIX}${runPrefix(ref).slice(DECISION_SUBJECT_PREFIX.length)}`;
}

/** Writes recorded calls; a failed write is the caller's to log, never the decision's concern. */
export class CallLog {
  private constructor(private readonly publisher: JetStreamPublisher) {}

  /** Creates the stream, or brings it to these settings. */
  static async open(nc: NatsConnection, options: CallLogOptions = {}): Promise<CallLog> {
    await ensureStream(
      await jetstreamManager(nc),
      {
        name: CALL_LOG_STREAM,
        subjects: [`${CALL_LOG_SUBJECT_PREFIX}.>`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        discard: DiscardPolicy.Old,
        max_age: (options.maxAgeSeconds ?? 86_400) * 1e9,
        max_bytes: options.maxBytes ?? 128 * 1024 * 1024,
        max_msgs_per_subject: 1,
      },
      options.replicas,
    );
    return new CallLog(new JetStreamPublisher(nc, 5000));
  }

  /** Records one decided call; resolves when the stream acknowledged it, rejects naming the stream otherwise. */
  async record(ref: RunRef, proposal: ToolCallProposal, decision: ToolCallDecision, at = new Date()): Promise<void> {
    const call: LoggedCall = { proposal, decision, decidedAt: at.toISOString() };
    const ack = await this.publisher.publish(callLogSubject(ref, proposal.toolCallId), JSON.stringify(call));
    if (ack.error !== undefined) throw new Error(`${CALL_LOG_STREAM} refused a recorded call: ${ack.error.description ?? "unknown error"}`);
  }

  close(): void {
    this.publisher.close();
  }
}

/** One run's recorded calls in iteration and step order, and how many records did not parse. */
export async function readLoggedCalls(
  nc: NatsConnection,
  ref: RunRef,
  timeoutMs = 30_000,
): Promise<{ calls: LoggedCall[]; unreadable: number }> {
  const jsm = await jetstreamManager(nc);
  const filter = `${callLogRunPrefix(ref)}.>`;
  let stored: number;
  try {
    // The run's subjects: none means it left nothing (no fetch to wait out).
    stored = Object.keys((await jsm.streams.info(CALL_LOG_STREAM, { subjects_filter: filter })).state.subjects ?? {}).length;
  } catch (err) {
    throw new Error(`the recorded calls (JetStream stream ${CALL_LOG_STREAM}) cannot be read: ${messageOf(err)}`, { cause: err });
  }
  if (stored === 0) return { calls: [], unreadable: 0 };
  const consumer = await jetstream(nc).consumers.get(CALL_LOG_STREAM, { filter_subjects: filter, deliver_policy: DeliverPolicy.All });
  const bySubject = new Map<string, LoggedCall>();
  let unreadable = 0;
  const end = Date.now() + timeoutMs;
  try {
    for (let pending = -1; pending !== 0;) {
      if (Date.now() > end) throw new Error(`reading ${filter} from ${CALL_LOG_STREAM} took longer than ${timeoutMs} ms`);
      const before = bySubject.size + unreadable;
      for await (const m of await consumer.fetch({ max_messages: 512, expires: 2000 })) {
        pending = m.info.pending;
        try {
          bySubject.set(m.subject, m.json<LoggedCall>());
        } catch {
          unreadable++;
        }
        if (pending === 0) break;
      }
      // A fetch that delivered nothing: what the stream held is read.
      if (bySubject.size + unreadable === before) break;
    }
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  const calls = [...bySubject.values()].sort((a, b) => a.proposal.iteration - b.proposal.iteration || a.proposal.step - b.proposal.step);
  return { calls, unreadable };
}
