// The gate's events of each Execution (decisions, tool judges, approvals) on their way to the
// event stream: one queue per Execution, published in order and in batches, resent whole for a
// while when a batch fails (dedup ids make a resend harmless).
import type { GavelEvent } from "../api/events.js";
import type { Execution } from "../api/types.js";
import { Backoff, sleep } from "../backoff.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { GateMetrics } from "../telemetry/metrics.js";
import type { EventStream } from "../transport/event-stream.js";
import { toGavelEvents, type EngineEvent } from "./execution-events.js";

/** How long the gate's events of one Execution gather before they are published together. */
const EVENT_BATCH_MS = 10;

/** The per-Execution queues of the gate's events. */
export class GateEventOutbox {
  private readonly queues = new Map<string, { events: GavelEvent[]; drained: Promise<void> }>();

  constructor(
    private readonly stream: () => EventStream | undefined,
    private readonly metrics: GateMetrics,
    private readonly logger?: Logger,
  ) {}

  /**
   * Publishes events of an Execution in order: one queue per Execution, drained in batches
   * whose publishes are all on the wire before their acknowledgements are awaited (a busy
   * worker's decisions do not wait on one round trip each). A batch gathers for
   * EVENT_BATCH_MS first, so that a busy worker's audit events leave in one socket write
   * rather than one each (the write was the largest item of the gate's CPU profile). A batch
   * that fails is sent again, whole and in order, for a while (dedup ids make the resend
   * harmless); the decision itself is already durable in the tool-call store.
   */
  publish(execution: Execution, events: EngineEvent[]): Promise<void> {
    const stream = this.stream();
    if (stream === undefined) return Promise.resolve();
    const key = `${execution.metadata.namespace ?? "default"}/${execution.metadata.name}`;
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { events: [], drained: Promise.resolve() };
      this.queues.set(key, queue);
    }
    const q = queue;
    const wasIdle = q.events.length === 0;
    q.events.push(...toGavelEvents(execution, events, new Date()));
    if (wasIdle) q.drained = q.drained.then(() => new Promise((r) => setTimeout(r, EVENT_BATCH_MS))).then(() => this.drain(key, stream, q));
    return q.drained;
  }

  /** Resolves once every queue is drained (or given up). */
  async drained(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.drained));
  }

  private async drain(key: string, stream: EventStream, q: { events: GavelEvent[] }): Promise<void> {
    while (q.events.length > 0) {
      const batch = q.events.splice(0);
      const backoff = new Backoff({ initialMs: 200, maxMs: 5000 });
      for (let attempt = 1; ; attempt++) {
        const results = await Promise.allSettled(batch.map((e) => stream.publish(e)));
        const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (failed === undefined) {
          const now = Date.now();
          for (const e of batch) this.metrics.publishLag.observe({}, Math.max(0, now - Date.parse(e.time)) / 1000);
          break;
        }
        if (attempt >= 30) {
          this.logger?.error({ execution: key, events: batch.length, err: messageOf(failed.reason) }, "events not published");
          break;
        }
        await sleep(backoff.next());
      }
    }
    if (q.events.length === 0 && this.queues.get(key) === q) this.queues.delete(key);
  }
}
