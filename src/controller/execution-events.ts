// Publishes the engine events of cluster-run Executions to the durable JetStream event
// stream (the one `gavel run --nats` and `gavel events` use), once each and in order per
// Execution, even across a controller crash between the status write and the publish.
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { Execution, ExecutionStatus } from "../api/types.js";
import type { GavelEvent } from "../api/events.js";
import { EventStream } from "../transport/event-stream.js";
import { ensureStream } from "../transport/streams.js";
import { EVENT_STREAM, eventSubject, token } from "../transport/subjects.js";
import { Backoff, sleep } from "../backoff.js";
import { messageOf } from "../errors.js";
import { silentLogger, type Logger } from "../telemetry/logger.js";
import { eventStreamMetrics, type Histogram, type Registry } from "../telemetry/metrics.js";

/**
 * The stream holding, per Execution, the one batch of events staged before a status write
 * (an outbox): a restarted controller publishes it if the status shows the write happened.
 */
export const OUTBOX_STREAM = "GAVEL_EVENTS_OUTBOX";
const OUTBOX_PREFIX = "gavel.outbox";

/** One engine event as the reconciler sees it (an `event` action of the outer loop). */
export interface EngineEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * What the outbox holds for one Execution: the events of the status write about to happen
 * (with that status's fingerprint), and the earlier events whose writes happened but which
 * were not published yet (a newer staging replaces the older one, so it carries them).
 */
interface StagedBatch {
  uid: string;
  fingerprint: string;
  committed: GavelEvent[];
  events: GavelEvent[];
}

/** Counters of the publisher (logged, and read by tests). */
export interface EventPublishStats {
  published: number;
  /** Failed publish attempts (each is retried). */
  failures: number;
  /** Batches that could not be staged in the outbox (NATS unreachable): lost only if the controller also dies before publishing them. */
  unstaged: number;
  /** Staged batches found after a restart whose status write had happened, and republished. */
  recovered: number;
  /** Events still waiting to be published. */
  pending: number;
}

/**
 * The dedup id of an engine event (JetStream Nats-Msg-Id): the Execution (namespace, name,
 * uid) and what the event is about (iteration, validator index, child, phase), so the same
 * transition decided again by a retried reconcile gets the same id.
 */
export function eventId(ex: Execution, type: string, data: Record<string, unknown>): string {
  const it = typeof data.iteration === "number" ? `i${data.iteration}` : "";
  let what: string;
  switch (type) {
    case "execution.started":
      what = "started";
      break;
    case "execution.phase":
      what = `phase-${String(data.phase)}`;
      break;
    case "iteration.started":
    case "iteration.finished":
    case "worker.finished":
      what = `${it}-${type}`;
      break;
    case "validator.started":
    case "validator.result":
      what = `${it}-v${String(data.index)}-${type}`;
      break;
    case "judge.spawned":
    case "judge.finished":
      what = `${String(data.child)}-${type}`;
      break;
    case "toolcall.proposed":
    case "toolcall.decision":
      what = `${it}-s${String(data.step)}-${type}`;
      break;
    default:
      // Not an event kind with a natural key: the content is the key.
      what = `${type}-${createHash("sha256").update(JSON.stringify(data)).digest("hex").slice(0, 16)}`;
  }
  return `${ex.metadata.namespace ?? "default"}/${ex.metadata.name}/${ex.metadata.uid ?? "-"}/${what}`;
}

/**
 * The stream events of an Execution's engine events, as local mode files them: the tree's
 * root is the Execution, and a judge's events are filed under the judge child.
 */
export function toGavelEvents(ex: Execution, events: EngineEvent[], now: Date): GavelEvent[] {
  const name = ex.metadata.name;
  const root = ex.spec.parent?.name ?? name;
  return events.map((e) => ({
    id: eventId(ex, e.event, e.data),
    time: now.toISOString(),
    namespace: ex.metadata.namespace ?? "default",
    root,
    execution: e.event.startsWith("judge.") && typeof e.data.child === "string" ? e.data.child : name,
    type: e.event,
    data: e.data,
  }));
}

/**
 * What a status has progressed to, in the terms engine events change: phase, iterations
 * and their validators, children. Two statuses with the same fingerprint hold the same
 * transitions (fields the API server may prune or reformat are left out).
 */
export function statusFingerprint(status: ExecutionStatus | undefined): string {
  if (status === undefined) return "none";
  return JSON.stringify([
    status.phase ?? "",
    status.iteration ?? 0,
    (status.iterations ?? []).map((i) => [i.number, i.phase, i.exitCode ?? null, i.validators?.length ?? 0]),
    (status.children ?? []).map((c) => [c.name, c.phase]),
  ]);
}

function outboxSubject(ex: Execution): string {
  return `${OUTBOX_PREFIX}.${token(ex.metadata.namespace ?? "default")}.${token(ex.metadata.name)}`;
}

function keyOf(ex: Execution): string {
  return `${ex.metadata.namespace ?? "default"}/${ex.metadata.name}`;
}

/** Rejects after `ms` so no NATS call can hold a reconcile for long. */
function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer from NATS within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Options of ExecutionEventPublisher. */
export interface ExecutionEventPublisherOptions {
  /**
   * Makes the connection; called again on the next use while it fails, so a controller
   * started while NATS is down runs Executions and publishes once NATS is up.
   */
  connect: () => Promise<NatsConnection>;
  logger?: Logger;
  /** Longest a NATS call may hold a reconcile (staging, recovery). Default 3000 ms. */
  callTimeoutMs?: number;
  /** Pause before a failed publish is tried again; doubles up to 30 s. Default 500 ms. */
  retryMs?: number;
  /** Where its counters (`stats`) and the publish lag are exported; none when undefined. */
  metrics?: Registry;
  /** Replicas of the event stream and the outbox on a JetStream cluster; undefined keeps existing streams' (ensureStream). */
  streamReplicas?: number;
}

/**
 * The reconciler's side of the event stream. Per Execution: `recover` once (what a
 * controller that died had staged), `stage` a batch before the status write, `commit` it
 * after the write. Publishing runs behind the reconcile, one Execution's events in order,
 * retried until it succeeds; a reconcile never waits on it.
 */
export class ExecutionEventPublisher {
  readonly stats: EventPublishStats = { published: 0, failures: 0, unstaged: 0, recovered: 0, pending: 0 };
  private js: JetStreamClient | undefined;
  private nc: NatsConnection | undefined;
  private stream: EventStream | undefined;
  private jsm: JetStreamManager | undefined;
  private ready: Promise<void> | undefined;
  /** Executions whose outbox was looked at by this process. */
  private readonly recovered = new Set<string>();
  /** Per Execution, events whose status write happened and that are not published yet, in order. */
  private readonly queues = new Map<string, { ex: Execution; events: GavelEvent[]; stagedSeq?: number; draining?: Promise<void> }>();
  private stopped = false;
  private readonly logger: Logger;
  private readonly callTimeoutMs: number;
  private readonly retryMs: number;

  constructor(private readonly opts: ExecutionEventPublisherOptions) {
    this.logger = opts.logger ?? silentLogger;
    this.callTimeoutMs = opts.callTimeoutMs ?? 3000;
    this.retryMs = opts.retryMs ?? 500;
    const r = opts.metrics;
    if (r !== undefined) {
      this.lag = eventStreamMetrics(r).lag;
      const s = this.stats;
      r.counter("gavel_event_stream_published_total", "Engine events published to the event stream", [], () => [[{}, s.published]]);
      r.counter("gavel_event_stream_publish_failures_total", "Failed publish attempts (each is retried)", [], () => [[{}, s.failures]]);
      r.counter("gavel_event_stream_unstaged_total", "Event batches that could not be staged in the outbox (NATS unreachable)", [], () => [
        [{}, s.unstaged],
      ]);
      r.counter("gavel_event_stream_recovered_total", "Staged batches of a previous controller found and republished", [], () => [
        [{}, s.recovered],
      ]);
      r.gauge("gavel_event_stream_pending", "Events waiting to be published", [], () => [[{}, s.pending]]);
    }
  }
  private readonly lag: Histogram | undefined;

  /** Creates (or updates) the event stream and the outbox; tried again on the next use when NATS is down. */
  private async open(): Promise<void> {
    this.ready ??= (async () => {
      this.nc ??= await this.opts.connect();
      const nc = this.nc;
      const replicas = this.opts.streamReplicas;
      this.stream = await EventStream.open(nc, replicas !== undefined ? { replicas } : {});
      this.js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      const config = {
        name: OUTBOX_STREAM,
        subjects: [`${OUTBOX_PREFIX}.>`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        max_msgs_per_subject: 1,
        max_age: 7 * 24 * 3600 * 1e9,
      };
      await ensureStream(jsm, config, replicas);
      this.jsm = jsm;
    })().catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  /** Starts opening the streams; a failure is logged and opening is tried again later. */
  async start(): Promise<void> {
    await bounded(this.open(), this.callTimeoutMs, "opening the event stream").catch((err: unknown) =>
      this.logger.warn({ err: messageOf(err) }, "event stream not ready yet (retried on use)"),
    );
  }

  /**
   * The first time this process reconciles an Execution: what a previous controller staged
   * and had not published is queued (its committed events always, the last batch only if the
   * status has that batch's fingerprint, i.e. its write happened), minus what reached the
   * stream already. Until this succeeds nothing is staged for the Execution.
   */
  async recover(ex: Execution): Promise<void> {
    const key = keyOf(ex);
    if (this.recovered.has(key) || ex.spec.parent !== undefined) return;
    try {
      await bounded(this.open(), this.callTimeoutMs, "opening the event stream");
      const jsm = this.jsm as JetStreamManager;
      const msg = await bounded(
        jsm.streams.getMessage(OUTBOX_STREAM, { last_by_subj: outboxSubject(ex) }),
        this.callTimeoutMs,
        "reading the outbox",
      );
      if (msg !== null) {
        const staged = msg.json<StagedBatch>();
        const sameRun = staged.uid === (ex.metadata.uid ?? "-");
        // The last batch's write may not have happened (a 409, a crash before it): then the
        // reconcile decides those transitions again.
        const written = sameRun && staged.fingerprint === statusFingerprint(ex.status);
        const events = sameRun ? [...staged.committed, ...(written ? staged.events : [])] : [];
        const done = events.length === 0 ? 0 : await bounded(this.alreadyPublished(events), this.callTimeoutMs, "reading the event stream");
        if (done < events.length) {
          this.stats.recovered++;
          this.logger.info({ execution: key, events: events.length - done }, "publishing events staged by a previous controller");
          this.enqueue(ex, events.slice(done), msg.seq);
        } else {
          await this.clear(ex, msg.seq);
        }
      }
      this.recovered.add(key);
    } catch (err) {
      this.logger.warn({ execution: key, err: messageOf(err) }, "the event outbox could not be read (tried again next reconcile)");
    }
  }

  /**
   * Stages a batch before the status write that makes it true, with the Execution's
   * committed events not yet published; returns the outbox sequence, or undefined when it
   * could not be staged (logged and counted; the batch is still published after the write,
   * it only would not survive a crash meanwhile).
   */
  async stage(ex: Execution, events: GavelEvent[], status: ExecutionStatus): Promise<number | undefined> {
    if (events.length === 0) return undefined;
    const key = keyOf(ex);
    try {
      if (!this.recovered.has(key))
        throw new Error("the outbox was not read yet, so staging would overwrite what a previous controller left");
      await bounded(this.open(), this.callTimeoutMs, "opening the event stream");
      const batch: StagedBatch = {
        uid: ex.metadata.uid ?? "-",
        fingerprint: statusFingerprint(status),
        committed: [...(this.queues.get(key)?.events ?? [])],
        events,
      };
      const ack = await bounded(
        (this.js as JetStreamClient).publish(outboxSubject(ex), JSON.stringify(batch), { timeout: this.callTimeoutMs }),
        this.callTimeoutMs,
        "staging events",
      );
      return ack.seq;
    } catch (err) {
      this.stats.unstaged++;
      this.logger.warn(
        { execution: key, events: events.length, err: messageOf(err) },
        "events not staged (published after the write all the same)",
      );
      return undefined;
    }
  }

  /** Queues a batch whose status write happened; published in order behind earlier ones. */
  commit(ex: Execution, events: GavelEvent[], stagedSeq: number | undefined): void {
    if (events.length === 0) return;
    this.enqueue(ex, events, stagedSeq);
  }

  private enqueue(ex: Execution, events: GavelEvent[], stagedSeq: number | undefined): void {
    const key = keyOf(ex);
    let q = this.queues.get(key);
    if (q === undefined) {
      q = { ex, events: [] };
      this.queues.set(key, q);
    }
    q.events.push(...events);
    if (stagedSeq !== undefined) q.stagedSeq = stagedSeq;
    this.stats.pending += events.length;
    if (q.draining === undefined) {
      const queue = q;
      queue.draining = this.drain(key, queue).finally(() => {
        queue.draining = undefined;
        if (this.queues.get(key) === queue && queue.events.length === 0) this.queues.delete(key);
      });
    }
  }

  /** Publishes an Execution's queue until it is empty (or the publisher stops), then clears its outbox slot. */
  private async drain(key: string, q: { ex: Execution; events: GavelEvent[]; stagedSeq?: number }): Promise<void> {
    const backoff = new Backoff({ initialMs: this.retryMs, maxMs: 30_000 });
    while (q.events.length > 0) {
      if (this.stopped) {
        this.logger.warn(
          { execution: key, events: q.events.length, staged: q.stagedSeq !== undefined },
          "stopping with events unpublished (when staged, the next controller publishes them)",
        );
        return;
      }
      const e = q.events[0] as GavelEvent;
      try {
        await this.open();
        await (this.stream as EventStream).publish(e);
        q.events.shift();
        this.stats.published++;
        this.stats.pending--;
        this.lag?.observe({}, Math.max(0, Date.now() - Date.parse(e.time)) / 1000);
        backoff.reset();
      } catch (err) {
        this.stats.failures++;
        const pause = backoff.next();
        this.logger.warn(
          { execution: key, event: e.type, retryInMs: pause, pending: this.stats.pending, err: messageOf(err) },
          "publishing an event failed, retrying",
        );
        // Unref'd: a retry pending at shutdown must not keep the process alive.
        await sleep(pause, undefined, { unref: true });
      }
    }
    if (q.stagedSeq !== undefined) {
      const seq = q.stagedSeq;
      await this.clear(q.ex, seq).catch((err: unknown) =>
        this.logger.warn({ execution: key, err: messageOf(err) }, "clearing the outbox failed"),
      );
      if (q.stagedSeq === seq) delete q.stagedSeq;
    }
  }

  /**
   * How many leading events of a staged list the stream already holds. The list is
   * published in order and nothing newer of its Execution is published before it, so the
   * last message of each of its subjects tells how far the previous controller got (the
   * dedup window of JetStream may have passed by now).
   */
  private async alreadyPublished(events: GavelEvent[]): Promise<number> {
    const jsm = this.jsm as JetStreamManager;
    let done = 0;
    for (const subject of new Set(events.map((e) => eventSubject(e.namespace, e.root, e.execution, e.type)))) {
      const last = await jsm.streams.getMessage(EVENT_STREAM, { last_by_subj: subject });
      if (last === null) continue;
      const i = events.findIndex((e) => e.id === last.json<GavelEvent>().id);
      if (i + 1 > done) done = i + 1;
    }
    return done;
  }

  /** Drops the staged message at `seq` (and older), never a newer one staged meanwhile. */
  private async clear(ex: Execution, seq: number): Promise<void> {
    await (this.jsm as JetStreamManager).streams.purge(OUTBOX_STREAM, { filter: outboxSubject(ex), seq: seq + 1 });
  }

  /** Waits up to `ms` for queued events to be published, then stops retrying and closes the connection. */
  async stop(ms = 5000): Promise<void> {
    const all = Promise.all([...this.queues.values()].map((q) => q.draining ?? Promise.resolve()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
    this.stopped = true;
    if (this.stats.pending > 0) this.logger.warn({ pending: this.stats.pending }, "events unpublished at stop");
    await this.nc?.close();
  }
}
