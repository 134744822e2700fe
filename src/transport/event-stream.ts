// The durable event stream of every Execution: a JetStream stream, one subject per
// (namespace, execution tree, execution, event type). Publishing is idempotent per event
// id (JetStream de-duplicates by Nats-Msg-Id), so a retried publish never doubles an event.
import { randomUUID } from "node:crypto";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient } from "@nats-io/jetstream";
import type { GavelEvent } from "../api/events.js";
import { JetStreamPublisher } from "./jetstream-publisher.js";
import { ensureStream } from "./streams.js";
import { EVENT_STREAM, eventFilter, eventSubject, EVENT_SUBJECT_PREFIX } from "./subjects.js";

export interface EventStreamOptions {
  /** How long events are kept; default 7 days. */
  maxAgeSeconds?: number;
  /** Window within which a re-published event id is dropped; default 2 minutes. */
  duplicateWindowSeconds?: number;
  /** The stream's replicas on a JetStream cluster; undefined keeps an existing stream's (ensureStream). */
  replicas?: number;
}

/** Publishes and reads gavel events on JetStream. */
export class EventStream {
  private readonly js: JetStreamClient;
  private readonly publisher: JetStreamPublisher;

  private constructor(private readonly nc: NatsConnection) {
    this.js = jetstream(nc);
    this.publisher = new JetStreamPublisher(nc, 5000);
  }

  /** Connects to the stream, creating or updating it to gavel's settings. */
  static async open(nc: NatsConnection, options: EventStreamOptions = {}): Promise<EventStream> {
    const config = {
      name: EVENT_STREAM,
      subjects: [`${EVENT_SUBJECT_PREFIX}.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: (options.maxAgeSeconds ?? 7 * 24 * 3600) * 1e9,
      duplicate_window: (options.duplicateWindowSeconds ?? 120) * 1e9,
    };
    await ensureStream(await jetstreamManager(nc), config, options.replicas);
    return new EventStream(nc);
  }

  /** Connects to the stream as it is, for readers: changes nothing; fails when it does not exist. */
  static async existing(nc: NatsConnection): Promise<EventStream> {
    await (await jetstreamManager(nc)).streams.info(EVENT_STREAM);
    return new EventStream(nc);
  }

  /** Builds an event with a fresh id and the current time. */
  static event(fields: Omit<GavelEvent, "id" | "time"> & { id?: string; time?: string }): GavelEvent {
    return { id: fields.id ?? randomUUID(), time: fields.time ?? new Date().toISOString(), ...fields };
  }

  /** Publishes an event and waits for the stream's acknowledgement; returns its sequence (a duplicate's: the first publish's). */
  async publish(event: GavelEvent): Promise<number> {
    const subject = eventSubject(event.namespace, event.root, event.execution, event.type);
    const h = headers();
    h.set("Nats-Msg-Id", event.id);
    const ack = await this.publisher.publish(subject, JSON.stringify(event), h);
    if (ack.error !== undefined) throw new Error(`the event stream refused event ${event.id}: ${ack.error.description ?? "unknown error"}`);
    if (ack.stream !== EVENT_STREAM || ack.seq === undefined)
      throw new Error(`the event stream answered event ${event.id} with an invalid acknowledgement`);
    return ack.seq;
  }

  /**
   * Reads the events of a namespace or an execution tree in order, from the start (or a
   * sequence, or only those published from now on with `onlyNew`), then follows new ones
   * until the signal aborts or `untilIdleMs` passes with nothing new.
   */
  async *read(filter: {
    namespace?: string;
    root?: string;
    fromSequence?: number;
    onlyNew?: boolean;
    untilIdleMs?: number;
    signal?: AbortSignal;
  }): AsyncGenerator<GavelEvent & { seq: number }> {
    const consumer = await this.js.consumers.get(EVENT_STREAM, {
      // A single filter (not an array) keeps this working on nats-server 2.9.
      filter_subjects: eventFilter(filter.namespace, filter.root),
      ...(filter.fromSequence !== undefined
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: filter.fromSequence }
        : { deliver_policy: filter.onlyNew === true ? DeliverPolicy.New : DeliverPolicy.All }),
    });
    const messages = await consumer.consume({ idle_heartbeat: 1000 });
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      if (filter.untilIdleMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(() => void messages.close(), filter.untilIdleMs);
    };
    const onAbort = () => void messages.close();
    filter.signal?.addEventListener("abort", onAbort);
    arm();
    try {
      for await (const m of messages) {
        arm();
        yield { ...m.json<GavelEvent>(), seq: m.seq };
      }
    } finally {
      clearTimeout(idle);
      filter.signal?.removeEventListener("abort", onAbort);
      await messages.close();
    }
  }

  /** The connection this stream publishes on. */
  get connection(): NatsConnection {
    return this.nc;
  }
}
