// The durable record of tool-call decisions: a JetStream stream (one subject per call) that
// a restarted or second gate replays, so a re-sent proposal is answered from the decision
// already made instead of being decided again.
import { headers, type NatsConnection } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
} from "@nats-io/jetstream";
import type { ToolCallDecision } from "../api/protocol.js";
import { token } from "./subjects.js";

/** The stream holding every decision while it may still be asked for again. */
export const DECISION_STREAM = "GAVEL_DECISIONS";
/** Prefix of decision subjects: gavel.decisions.<namespace>.<execution>.<toolCallId>. */
export const DECISION_SUBJECT_PREFIX = "gavel.decisions";

/** Subject (and cache key) of one call's decision; toolCallId is already a valid token. */
export function decisionSubject(namespace: string, execution: string, toolCallId: string): string {
  return `${DECISION_SUBJECT_PREFIX}.${token(namespace)}.${token(execution)}.${toolCallId}`;
}

/** What is stored per call: the decision and the hash of the call it answers (no arg values). */
export interface StoredDecision {
  fingerprint: string;
  decision: ToolCallDecision;
}

export interface DecisionStoreOptions {
  /**
   * How long decisions are kept (and answerable after a restart); default 15 minutes, well
   * past a worker's total wait for one decision (330 s), so a start-up replay stays short.
   */
  maxAgeSeconds?: number;
  /** How long a re-sent store of the same call is de-duplicated; default 2 minutes. */
  duplicateWindowSeconds?: number;
  /**
   * Ask the stream to acknowledge each stored decision, logging failures; default false:
   * a plain publish the stream captures costs the gate about a third less per call.
   */
  acknowledged?: boolean;
  /**
   * Keep following the stream after the start-up replay, so decisions made by another gate
   * replica become answerable here too; default false (one active gate needs only the replay).
   */
  followLive?: boolean;
}

/** Creates the decision stream, or updates it to these settings; safe to call from every gate. */
export async function ensureDecisionStream(nc: NatsConnection, options: DecisionStoreOptions = {}): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const maxAge = options.maxAgeSeconds ?? 900;
  const config = {
    name: DECISION_STREAM,
    subjects: [`${DECISION_SUBJECT_PREFIX}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: maxAge * 1e9,
    max_msgs_per_subject: 1,
    duplicate_window: Math.min(options.duplicateWindowSeconds ?? 120, maxAge) * 1e9,
  };
  try {
    await jsm.streams.add(config);
  } catch {
    // Already there (perhaps made by another gate a moment ago): bring it to our settings.
    await jsm.streams.update(DECISION_STREAM, config);
  }
}

/** Writes decisions to the stream and follows every decision stored by any gate. */
export class DecisionStore {
  private readonly js: JetStreamClient;
  private messages: ConsumerMessages | undefined;
  private following: Promise<void> | undefined;

  constructor(private readonly nc: NatsConnection) {
    this.js = jetstream(nc);
  }

  /**
   * Stores a decision. The publish is written to the connection before this returns, so a
   * reply sent afterwards on the same connection can never overtake it; the promise
   * resolves with the stream's acknowledgement.
   */
  store(subject: string, record: StoredDecision): Promise<void> {
    return this.js.publish(subject, JSON.stringify(record), { msgID: subject, timeout: 5000 }).then(() => undefined);
  }

  /**
   * Stores a decision without waiting for (or asking for) the stream's acknowledgement: a
   * plain publish the stream captures, de-duplicated by Nats-Msg-Id. Cheaper per call; a
   * failed store is only noticed as a re-decide after a restart.
   */
  storeNoAck(subject: string, record: StoredDecision): void {
    const h = headers();
    h.set("Nats-Msg-Id", subject);
    this.nc.publish(subject, JSON.stringify(record), { headers: h });
  }

  /**
   * Replays every stored decision into `onDecision` and resolves once the replay has caught
   * up with the stream as it was when called; when `live`, keeps delivering new ones until close().
   */
  async follow(onDecision: (subject: string, record: StoredDecision) => void, live: boolean, timeoutMs = 10_000): Promise<void> {
    const jsm = await jetstreamManager(this.nc);
    const last = (await jsm.streams.info(DECISION_STREAM)).state.last_seq;
    const consumer = await this.js.consumers.get(DECISION_STREAM, {
      filter_subjects: `${DECISION_SUBJECT_PREFIX}.>`,
      deliver_policy: DeliverPolicy.All,
    });
    const messages = await consumer.consume({ idle_heartbeat: 1000 });
    this.messages = messages;
    let caughtUp!: () => void;
    const ready = new Promise<void>((resolve) => (caughtUp = resolve));
    if (last === 0) caughtUp();
    // Without live following, the consumer is closed once the replay has caught up.
    if (!live) void ready.then(() => messages.close());
    this.following = (async () => {
      for await (const m of messages) {
        try {
          onDecision(m.subject, m.json<StoredDecision>());
        } catch {
          // A record that does not parse is skipped; the call will simply be decided again.
        }
        if (m.seq >= last) caughtUp();
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`decision replay did not catch up to sequence ${last} in ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops following the stream. */
  async close(): Promise<void> {
    await this.messages?.close();
    await this.following?.catch(() => undefined);
  }
}
