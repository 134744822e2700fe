// The one writer of core/v1 Events (client-go's record.EventRecorder, in small): what
// `kubectl describe` lists under Events. A note is a reason (CamelCase, stable: tests, docs
// and alerts name it) and a sentence a reader understands; structured detail belongs in
// gavel's event stream, not here. Recording is best effort: a failed write is logged, never thrown.
import { randomBytes } from "node:crypto";
import type * as k8s from "@kubernetes/client-node";
import { isConflict, messageOf } from "../../errors.js";
import type { Logger } from "../../telemetry/logger.js";

/** The object an Event is about (its involvedObject). */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string };
}

/** What one Event says. */
export interface EventNote {
  type: "Normal" | "Warning";
  /** CamelCase and stable, e.g. ExecutionPhase, ToolCallBlocked. */
  reason: string;
  /** A sentence, e.g. "Worker of iteration 1 finished: exit 0". Cut at 1024 characters. */
  message: string;
  /**
   * Names the Event deterministically (`<object>.<once>`) so it is recorded once: a second
   * record of it is a 409 and the first is kept. Unset: every record is a new Event.
   */
  once?: string;
}

/** The largest message an Event keeps; the API server allows more, `kubectl describe` readers do not. */
const MAX_MESSAGE = 1024;

/** The core/v1 Event of a note on an object, from `component`, at `now`. */
export function coreEvent(obj: EventSubject, note: EventNote, component: string, now: Date): k8s.CoreV1Event {
  const namespace = obj.metadata?.namespace ?? "default";
  const name = obj.metadata?.name ?? "";
  const uid = obj.metadata?.uid;
  // Unique across replicas and within a millisecond: the time orders them, random bytes keep them apart.
  const suffix = note.once ?? `${now.getTime().toString(16)}${randomBytes(4).toString("hex")}`;
  return {
    metadata: { name: `${name.slice(0, 200)}.${suffix}`.slice(0, 253), namespace },
    involvedObject: {
      ...(obj.apiVersion !== undefined ? { apiVersion: obj.apiVersion } : {}),
      ...(obj.kind !== undefined ? { kind: obj.kind } : {}),
      name,
      namespace,
      ...(uid !== undefined ? { uid } : {}),
    },
    reason: note.reason,
    message: note.message.length > MAX_MESSAGE ? `${note.message.slice(0, MAX_MESSAGE - 3)}...` : note.message,
    type: note.type,
    source: { component },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

/** Records notes as core/v1 Events from one component (gavel-controller, gavel-gate, ...). */
export class EventRecorder {
  constructor(
    private readonly core: Pick<k8s.CoreV1Api, "createNamespacedEvent">,
    private readonly component: string,
    private readonly logger: Logger | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records a note on an object, at `at` (default now); a failure is logged, and an Event recorded `once` already is kept as is. */
  async record(obj: EventSubject, note: EventNote, at?: Date): Promise<void> {
    const body = coreEvent(obj, note, this.component, at ?? new Date(this.now()));
    try {
      await this.core.createNamespacedEvent({ namespace: body.metadata?.namespace ?? "default", body });
    } catch (err) {
      if (note.once !== undefined && isConflict(err)) return;
      this.logger?.warn(
        { object: `${body.involvedObject.namespace ?? ""}/${body.involvedObject.name ?? ""}`, reason: note.reason, err: messageOf(err) },
        "recording a Kubernetes Event failed",
      );
    }
  }
}
