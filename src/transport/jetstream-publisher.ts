// JetStream publishes with their acknowledgement, as the gate makes one or two per tool call
// (its decision record, its audit event): each message goes out with a reply subject under
// one inbox subscription of this publisher, and its acknowledgement (or the stream's API
// error) resolves it. nats.js's request() — behind js.publish — builds a timer and two Error
// objects with stack traces per message even when the acknowledgement arrives (its cancel
// after a resolve); that was about 10 % of the gate's CPU in the cluster gate bench. Here a
// message costs one map entry, and one timer sweeps the overdue ones.
import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";

interface Waiting {
  resolve: (reply: Msg) => void;
  reject: (err: Error) => void;
  /** When it is overdue (Date.now() milliseconds). */
  due: number;
}

/** A stream's acknowledgement, or its API error. */
export interface JetStreamAck {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

/** Publishes to JetStream streams on one connection and resolves each message's acknowledgement. */
export class JetStreamPublisher {
  private readonly waiting = new Map<string, Waiting>();
  private readonly inbox: string;
  private sub: Subscription | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private next = 0;

  constructor(
    private readonly nc: NatsConnection,
    /** How long a message waits for its acknowledgement before it fails with a timeout. */
    private readonly timeoutMs: number,
  ) {
    this.inbox = createInbox();
  }

  /**
   * Publishes `data` on `subject` and resolves with the acknowledgement as the stream sent it
   * (an API error included: the caller reads it); rejects when no stream takes the subject,
   * on timeout, or when the connection is closed. The message is on the connection when this
   * returns, so anything published after it on the same connection reaches the server after it.
   */
  publish(subject: string, data: string | Uint8Array, headers?: MsgHdrs): Promise<JetStreamAck> {
    const token = String(++this.next);
    const acked = new Promise<Msg>((resolve, reject) => this.waiting.set(token, { resolve, reject, due: Date.now() + this.timeoutMs }));
    try {
      // Both throw once the connection is closed: a rejection like every other failure, never a throw.
      this.listen();
      this.nc.publish(
        subject,
        data,
        headers === undefined ? { reply: `${this.inbox}.${token}` } : { reply: `${this.inbox}.${token}`, headers },
      );
    } catch (err) {
      this.waiting.delete(token);
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return acked.then((m) => {
      // A status reply with no data: no stream listens on the subject (503), or another status.
      if (m.data.length === 0 && m.headers !== undefined && m.headers.code >= 300) {
        throw new Error(
          m.headers.code === 503
            ? `no JetStream stream takes subject ${subject}`
            : `JetStream answered ${m.headers.code} ${m.headers.description}`,
        );
      }
      return JSON.parse(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength).toString("utf8")) as JetStreamAck;
    });
  }

  /** Fails every message still waiting and stops listening. */
  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.sub?.unsubscribe();
    this.sub = undefined;
    this.failAll(() => true, "the publisher was closed");
  }

  // The inbox subscription and the sweeper, made on the first publish (and again after a close).
  private listen(): void {
    if (this.sub !== undefined && !this.sub.isClosed()) return;
    this.sub = this.nc.subscribe(`${this.inbox}.*`, {
      callback: (err, m) => {
        if (err !== null) return;
        const token = m.subject.slice(this.inbox.length + 1);
        const w = this.waiting.get(token);
        if (w === undefined) return;
        this.waiting.delete(token);
        w.resolve(m);
      },
    });
    clearInterval(this.sweeper);
    this.sweeper = setInterval(
      () => {
        const now = Date.now();
        if (this.nc.isClosed()) this.failAll(() => true, "the NATS connection is closed");
        else this.failAll((w) => w.due <= now, `no JetStream acknowledgement within ${this.timeoutMs} ms`);
      },
      Math.max(10, Math.min(250, this.timeoutMs / 4)),
    );
    this.sweeper.unref();
  }

  private failAll(which: (w: Waiting) => boolean, why: string): void {
    for (const [token, w] of this.waiting) {
      if (!which(w)) continue;
      this.waiting.delete(token);
      w.reject(new Error(why));
    }
  }
}
