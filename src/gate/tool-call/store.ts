// The one idempotency store of tool calls: a JetStream stream with one subject per call
// whose last message is that call's record — a claim (a gate is deciding it) or its
// decision. Every write is a compare-and-set on the subject's last sequence, so however
// many gates race on one call, exactly one claim and one decision are ever stored. Each
// gate mirrors the stream to answer re-sends and to know what an iteration already did.
import { randomUUID } from "node:crypto";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { ToolCallDecision } from "../../api/protocol.js";
import { JetStreamPublisher } from "../../transport/jetstream-publisher.js";
import { ensureStream } from "../../transport/streams.js";
import {
  firstAtLeast,
  IterationIndex,
  iterationKey,
  type IndexedCall,
  type IterationTally,
  type IterationView,
} from "./iteration-index.js";
import {
  DECISION_STREAM,
  DECISION_SUBJECT_PREFIX,
  parseDecisionSubject,
  runPrefix,
  type DecisionRecord,
  type RunRef,
  type StoredRecord,
  type ToolCallRecord,
} from "./records.js";

export type PutResult =
  | { ok: true; seq: number }
  /** The call's last sequence was not the expected one: someone else wrote first. */
  | { ok: false; conflict: true }
  /** The store could not be reached or refused for another reason. */
  | { ok: false; conflict: false; error: Error };

export interface ToolCallStoreOptions {
  /**
   * How long records are kept: answerable to re-sends and known to the sequence contracts
   * of their iteration; default 1 hour (a worker waits at most 330 s for one decision,
   * and an iteration's default deadline is 300 s).
   */
  maxAgeSeconds?: number;
  /** Full decisions kept in memory for answering re-sends (older ones are fetched); default 20,000. */
  maxDecisionsInMemory?: number;
  /** How long the start-up replay may take; default 30 s. */
  replayTimeoutMs?: number;
  /** How long to wait for one write's acknowledgement; default 5 s. */
  writeTimeoutMs?: number;
  /** The stream's replicas on a JetStream cluster; undefined keeps an existing stream's (ensureStream). */
  replicas?: number;
}

/** Counters a test or an exporter reads. */
export interface ToolCallStoreStats {
  writes: number;
  conflicts: number;
  writeErrors: number;
  fetches: number;
  mirrored: number;
}

/** What the mirror keeps per call: the facts always, the decision while it is recent. */
interface Mirrored {
  seq: number;
  at: number;
  record: ToolCallRecord;
}

const WRONG_LAST_SEQUENCE = 10071;

/** Creates the stream, or updates it to these settings; safe to call from every gate. */
async function ensureDecisionStream(jsm: JetStreamManager, maxAgeSeconds: number, replicas: number | undefined): Promise<void> {
  await ensureStream(
    jsm,
    {
      name: DECISION_STREAM,
      subjects: [`${DECISION_SUBJECT_PREFIX}.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: maxAgeSeconds * 1e9,
      // The last message of a subject is the call's record: a claim replaced by its decision.
      max_msgs_per_subject: 1,
      allow_direct: true,
    },
    replicas,
  );
}

/** The store of one gate process: compare-and-set writes, reads, and a live mirror. */
export class ToolCallStore {
  readonly stats: ToolCallStoreStats = { writes: 0, conflicts: 0, writeErrors: 0, fetches: 0, mirrored: 0 };
  private readonly records = new Map<string, Mirrored>();
  /** What each iteration holds, by `<subject prefix of the execution>#<iteration>`. */
  private readonly iterations = new Map<string, IterationIndex>();
  /** Subjects whose decision body is held, oldest first. */
  private readonly bodies = new Set<string>();
  private readonly watchers = new Map<string, Set<(r: StoredRecord) => void>>();
  private readonly listeners = new Set<(subject: string, r: StoredRecord) => void>();
  private readonly maxBodies: number;
  private readonly maxAgeMs: number;
  private readonly publisher: JetStreamPublisher;
  private messages: ConsumerMessages | undefined;
  private following: Promise<void> | undefined;
  private consumerSeq = 0;
  private lastPending = 0;
  private caughtUpAt = 0;
  private progress: (() => void)[] = [];
  private pruner: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    options: ToolCallStoreOptions,
  ) {
    this.maxBodies = options.maxDecisionsInMemory ?? 20_000;
    this.maxAgeMs = (options.maxAgeSeconds ?? 3600) * 1000;
    this.publisher = new JetStreamPublisher(nc, options.writeTimeoutMs ?? 5000);
  }

  /** Creates or updates the stream, replays it into the mirror, and keeps following it. */
  static async open(nc: NatsConnection, options: ToolCallStoreOptions = {}): Promise<ToolCallStore> {
    const jsm = await jetstreamManager(nc);
    await ensureDecisionStream(jsm, options.maxAgeSeconds ?? 3600, options.replicas);
    const store = new ToolCallStore(nc, jsm, options);
    await store.follow(options.replayTimeoutMs ?? 30_000);
    store.pruner = setInterval(() => store.prune(), 60_000);
    store.pruner.unref();
    return store;
  }

  /** The call's latest record as mirrored here (its decision body may have to be fetched). */
  get(subject: string): StoredRecord | undefined {
    const m = this.records.get(subject);
    return m === undefined ? undefined : { record: m.record, seq: m.seq, at: m.at };
  }

  /** The call's latest record from the server itself. */
  async fetch(subject: string): Promise<StoredRecord | undefined> {
    this.stats.fetches++;
    const m = await this.jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: subject });
    if (m === null) return undefined;
    const stored = { record: m.json<ToolCallRecord>(), seq: m.seq, at: m.time.getTime() };
    this.apply(subject, stored);
    return stored;
  }

  /**
   * Writes `record` as the call's record if its last sequence is `expectSeq` (0: no record
   * yet). The message is on the connection when this returns, so a reply sent afterwards
   * on the same connection can never overtake it; the promise says whether it was stored.
   * `optimistic` mirrors the record before the acknowledgement (with sequence 0, so the
   * stored record, whoever wrote it, replaces it when it arrives).
   */
  put(subject: string, record: ToolCallRecord, expectSeq: number, optimistic = false): Promise<PutResult> {
    const h = headers();
    h.set("Nats-Expected-Last-Subject-Sequence", String(expectSeq));
    h.set("Nats-Expected-Stream", DECISION_STREAM);
    const sent = this.publisher.publish(subject, JSON.stringify(record), h);
    this.stats.writes++;
    if (optimistic && !this.records.has(subject)) this.apply(subject, { record, seq: 0, at: Date.now() });
    return sent.then(
      (ack): PutResult => {
        if (ack.error !== undefined) {
          if (ack.error.err_code === WRONG_LAST_SEQUENCE) {
            this.stats.conflicts++;
            return { ok: false, conflict: true };
          }
          this.stats.writeErrors++;
          return {
            ok: false,
            conflict: false,
            error: new Error(`the decision store refused a write: ${ack.error.description ?? "unknown error"}`),
          };
        }
        const seq = ack.seq ?? 0;
        this.apply(subject, { record, seq, at: Date.now() });
        return { ok: true, seq };
      },
      (err: unknown): PutResult => {
        this.stats.writeErrors++;
        return { ok: false, conflict: false, error: err instanceof Error ? err : new Error(String(err)) };
      },
    );
  }

  /** New unique id for a write. */
  static writeId(): string {
    return randomUUID();
  }

  /**
   * The decided calls of one iteration of an execution with `fromStep <= step < beforeStep`,
   * in step order, and the tools the guard blocked in it (policy_violations, first seen first).
   */
  iteration(ref: RunRef, iteration: number): IterationView {
    const index = this.iterations.get(iterationKey(ref, iteration));
    return {
      calls: (fromStep, beforeStep) =>
        index === undefined ? [] : index.calls.slice(firstAtLeast(index.calls, fromStep), firstAtLeast(index.calls, beforeStep)),
      violations: index?.violations ?? [],
      hasSteps: (beforeStep) => {
        if (beforeStep <= 1) return true;
        if (index === undefined) return false;
        for (let s = 1; s < beforeStep; s++) if (!index.steps.has(s)) return false;
        return true;
      },
    };
  }

  /**
   * The calls of one execution per iteration, as its status shows them: counts of every call
   * (claims included) and the last `recent` decided ones in step order. The counts are kept
   * as records arrive and the recent calls read from the end of the step-sorted index, so a
   * summary costs O(recent), not O(calls): the leader folds this into the status about once a
   * second while calls flow, on the event loop the gate answers from, and with 22,000 calls in
   * one Execution a pass over them all took 4-6 ms, a stall every call arriving meanwhile waited out.
   */
  summaryOf(ref: RunRef, recent: number): Map<number, IterationTally> {
    const prefix = `${runPrefix(ref)}.#`;
    const out = new Map<number, IterationTally>();
    for (const [key, index] of this.iterations) {
      if (!key.startsWith(prefix)) continue;
      const last: DecisionRecord[] = [];
      // Newest steps first; a decision whose body was let go (holdBody) is not listed.
      for (let i = index.calls.length - 1; i >= 0 && last.length < recent; i--) {
        const record = this.records.get((index.calls[i] as IndexedCall).subject)?.record;
        if (record?.kind === "decision" && record.decision !== undefined) last.push(record);
      }
      last.reverse();
      out.set(Number(key.slice(prefix.length)), {
        proposed: index.subjects.size,
        allowed: index.allowed,
        blockedByGuard: index.blockedByGuard,
        blockedByJudge: index.blockedByJudge,
        blockedByApproval: index.blockedByApproval,
        recent: last,
      });
    }
    return out;
  }

  /** Every record of one execution run known here. */
  recordsOf(ref: RunRef): StoredRecord[] {
    const prefix = `${runPrefix(ref)}.#`;
    const out: StoredRecord[] = [];
    for (const [key, index] of this.iterations) {
      if (!key.startsWith(prefix)) continue;
      for (const s of index.subjects) {
        const m = this.records.get(s);
        if (m !== undefined) out.push({ record: m.record, seq: m.seq, at: m.at });
      }
    }
    return out.sort((a, b) => a.record.iteration - b.record.iteration || a.record.step - b.record.step);
  }

  /** Calls `onChange` whenever a newer record of `subject` is mirrored; returns the unsubscribe. */
  watch(subject: string, onChange: (r: StoredRecord) => void): () => void {
    let set = this.watchers.get(subject);
    if (set === undefined) {
      set = new Set();
      this.watchers.set(subject, set);
    }
    set.add(onChange);
    return () => {
      set.delete(onChange);
      if (set.size === 0) this.watchers.delete(subject);
    };
  }

  /** Calls `onRecord` for every newer record mirrored here, of any call; returns the unsubscribe. */
  onRecord(onRecord: (subject: string, r: StoredRecord) => void): () => void {
    this.listeners.add(onRecord);
    return () => this.listeners.delete(onRecord);
  }

  /** True while the mirror follows the stream (caught up within the last few seconds). */
  get live(): boolean {
    return !this.closed && this.nc.isClosed() === false && Date.now() - this.caughtUpAt < 5000;
  }

  /** Resolves once the mirror holds everything the stream held when called (false after `timeoutMs`). */
  async catchUp(timeoutMs: number): Promise<boolean> {
    const last = (await this.jsm.streams.info(DECISION_STREAM)).state.last_seq;
    const end = Date.now() + timeoutMs;
    while (this.consumerSeq < last && Date.now() < end) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, end - Date.now()));
        this.progress.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.consumerSeq >= last;
  }

  /** Stops following the stream. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.pruner);
    this.publisher.close();
    await this.messages?.close();
    await this.following?.catch(() => undefined);
  }

  // Keeps the newest record of a subject; indexes it by iteration; wakes its watchers.
  private apply(subject: string, stored: StoredRecord): void {
    const known = this.records.get(subject);
    if (known !== undefined && known.seq >= stored.seq && known.seq !== 0) return;
    // A record of an older gavel (no run in its subject) belongs to no run: it ages out unread.
    const index = this.indexOf(subject, stored.record.iteration);
    if (index === undefined) return;
    this.records.set(subject, { seq: stored.seq, at: stored.at, record: stored.record });
    index.subjects.add(subject);
    if (stored.record.kind === "decision" && known?.record.kind !== "decision") index.add(subject, stored.record);
    if (stored.record.kind === "decision") this.holdBody(subject);
    const watchers = this.watchers.get(subject);
    if (watchers !== undefined) for (const w of [...watchers]) w(stored);
    for (const l of this.listeners) l(subject, stored);
  }

  private indexOf(subject: string, iteration: number): IterationIndex | undefined {
    const call = parseDecisionSubject(subject);
    if (call === undefined) return undefined;
    const key = iterationKey(call, iteration);
    let index = this.iterations.get(key);
    if (index === undefined) {
      index = new IterationIndex();
      this.iterations.set(key, index);
    }
    return index;
  }

  // A decision body stays in memory while it is among the most recent; older ones keep their facts.
  private holdBody(subject: string): void {
    this.bodies.delete(subject);
    this.bodies.add(subject);
    while (this.bodies.size > this.maxBodies) {
      const oldest = this.bodies.values().next().value as string;
      this.bodies.delete(oldest);
      const m = this.records.get(oldest);
      if (m?.record.kind === "decision") m.record = { ...m.record, decision: undefined as unknown as ToolCallDecision };
    }
  }

  /** True when the mirrored decision of a subject still has its body. */
  hasBody(subject: string): boolean {
    const r = this.records.get(subject)?.record;
    return r?.kind === "decision" && r.decision !== undefined;
  }

  // Records past the stream's max age are gone from the server: forget them here too.
  private prune(): void {
    const cutoff = Date.now() - this.maxAgeMs;
    for (const [key, index] of this.iterations) {
      // An iteration is forgotten as a whole once its newest record has aged out.
      let newest = 0;
      for (const s of index.subjects) newest = Math.max(newest, this.records.get(s)?.at ?? 0);
      if (newest >= cutoff) continue;
      for (const s of index.subjects) {
        this.records.delete(s);
        this.bodies.delete(s);
      }
      this.iterations.delete(key);
    }
  }

  private async follow(timeoutMs: number): Promise<void> {
    const last = (await this.jsm.streams.info(DECISION_STREAM)).state.last_seq;
    const js = jetstream(this.nc);
    const consumer = await js.consumers.get(DECISION_STREAM, {
      filter_subjects: `${DECISION_SUBJECT_PREFIX}.>`,
      deliver_policy: DeliverPolicy.All,
    });
    const messages = await consumer.consume({ idle_heartbeat: 1000 });
    this.messages = messages;
    let caughtUp!: () => void;
    const ready = new Promise<void>((resolve) => (caughtUp = resolve));
    if (last === 0) {
      this.caughtUpAt = Date.now();
      caughtUp();
    }
    // Heartbeats while idle say the mirror is still following.
    void (async () => {
      for await (const s of messages.status()) {
        if (s.type === "heartbeats_missed") this.caughtUpAt = 0;
        else if (s.type === "heartbeat" && this.lastPending === 0) this.caughtUpAt = Date.now();
      }
    })().catch(() => undefined);
    this.following = (async () => {
      for await (const m of messages) {
        this.stats.mirrored++;
        this.consumerSeq = m.seq;
        this.lastPending = m.info.pending;
        try {
          // This replica's own acknowledged writes are here already (put): not parsed a second time.
          const known = this.records.get(m.subject);
          if (known === undefined || known.seq === 0 || known.seq < m.seq)
            this.apply(m.subject, { record: m.json<ToolCallRecord>(), seq: m.seq, at: m.time.getTime() });
        } catch {
          // A record that does not parse is skipped; its call will be decided again if re-sent.
        }
        if (m.seq >= last || m.info.pending === 0) {
          // pending 0: nothing newer was stored when this one was delivered.
          this.caughtUpAt = Date.now();
          caughtUp();
        }
        const waiting = this.progress;
        this.progress = [];
        for (const w of waiting) w();
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the tool-call store replay did not catch up to sequence ${last} in ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
