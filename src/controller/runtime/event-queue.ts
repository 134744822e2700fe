// Kubernetes Events recorded off the caller's path, as client-go's event broadcaster sends
// them from a goroutine of its own: a reconcile queues its notes and goes on, and a few sends
// at a time carry them to the API server in the order they were queued. Each Event keeps the
// time it was queued, so `kubectl describe` lists them as they happened. Measured at 500
// Executions at once (docs/scale.md): three Event POSTs in turn were two thirds of an
// Execution's first reconcile, so its worker's pod waited for the Events of runs before it.
// Nothing is dropped: a full backlog makes record() wait, and flush() waits until every queued
// Event was sent (a controller stopping calls it after its last reconcile).
import type { EventNote, EventRecorder, EventSubject } from "./event-recorder.js";

/** Tuning of an EventQueue. */
export interface EventQueueOptions {
  /** Events sent at once (default 4). */
  inFlight?: number;
  /** Events queued at most; record() waits for room beyond it (default 10 000: a few MiB). */
  maxBacklog?: number;
  now?: () => number;
}

/** What one queued Event is: its subject as it was when queued, the note, and when. */
interface Queued {
  subject: EventSubject;
  note: EventNote;
  at: Date;
}

/** Queues Events and sends them in the background through an EventRecorder. */
export class EventQueue {
  private readonly backlog: Queued[] = [];
  private sending = 0;
  private readonly room: (() => void)[] = [];
  private readonly idle: (() => void)[] = [];
  private readonly inFlight: number;
  private readonly maxBacklog: number;
  private readonly now: () => number;

  constructor(
    private readonly recorder: Pick<EventRecorder, "record">,
    opts: EventQueueOptions = {},
  ) {
    this.inFlight = Math.max(1, opts.inFlight ?? 4);
    this.maxBacklog = Math.max(1, opts.maxBacklog ?? 10_000);
    this.now = opts.now ?? Date.now;
  }

  /** Queues a note on an object (stamped now); returns once it is queued, waiting only while the backlog is full. */
  async record(obj: EventSubject, note: EventNote): Promise<void> {
    const at = new Date(this.now());
    // The subject is copied: the caller goes on changing its object (its status, its resourceVersion).
    const { name, namespace, uid } = obj.metadata ?? {};
    const metadata = {
      ...(name !== undefined ? { name } : {}),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(uid !== undefined ? { uid } : {}),
    };
    const subject = {
      ...(obj.apiVersion !== undefined ? { apiVersion: obj.apiVersion } : {}),
      ...(obj.kind !== undefined ? { kind: obj.kind } : {}),
      metadata,
    };
    while (this.backlog.length >= this.maxBacklog) await new Promise<void>((resolve) => this.room.push(resolve));
    this.backlog.push({ subject, note, at });
    this.pump();
  }

  /** Events queued or being sent. */
  get pending(): number {
    return this.backlog.length + this.sending;
  }

  /** Resolves once every Event queued so far has been sent (or its failure logged by the recorder). */
  flush(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (this.sending < this.inFlight) {
      const next = this.backlog.shift();
      if (next === undefined) break;
      this.room.shift()?.();
      this.sending++;
      // record() logs a failed write and never throws: the chain always goes on.
      void this.recorder.record(next.subject, next.note, next.at).then(() => {
        this.sending--;
        this.pump();
        if (this.pending === 0) for (const resolve of this.idle.splice(0)) resolve();
      });
    }
  }
}
