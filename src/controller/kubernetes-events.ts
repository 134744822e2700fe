// Engine events as core/v1 Events on the Execution, what `kubectl describe ex` lists: one
// Event per engine event (reason from its type, Warning for failures), recorded best effort
// after the status write that holds them.
import type * as k8s from "@kubernetes/client-node";
import type { Execution } from "../api/types.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";

function ns(ex: Execution): string {
  return ex.metadata.namespace ?? "default";
}

/** A core/v1 Event for one engine event: reason ExecutionPhase, IterationStarted, ... (WorkerGateUnreachable for exit 75); Warning for failures. */
export function kubernetesEvent(ex: Execution, type: string, data: Record<string, unknown>, now: Date, seq: number): k8s.CoreV1Event {
  // A worker that gave up on an unreachable gate gets its own reason: `kubectl get events` then tells it from a failed agent.
  const reason =
    type === "worker.finished" && data.gateUnreachable !== undefined
      ? "WorkerGateUnreachable"
      : type
          .split(/[._]/)
          .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
          .join("");
  const bad =
    (type === "execution.phase" && ["Failed", "TimedOut", "Cancelled"].includes(String(data.phase))) ||
    (type === "validator.result" && data.passed === false) ||
    (type === "judge.finished" && data.rejection !== undefined) ||
    // stdout holds stderr too: a regex or a judge reading it may see log lines (declare spec.runtime.command).
    (type === "worker.finished" && (data.streamsMerged !== undefined || data.gateUnreachable !== undefined));
  const message = JSON.stringify(data);
  return {
    metadata: { name: `${ex.metadata.name}.${now.getTime().toString(16)}${seq.toString(16)}`.slice(0, 253), namespace: ns(ex) },
    involvedObject: {
      apiVersion: ex.apiVersion,
      kind: "Execution",
      name: ex.metadata.name,
      namespace: ns(ex),
      ...(ex.metadata.uid !== undefined ? { uid: ex.metadata.uid } : {}),
    },
    reason,
    message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
    type: bad ? "Warning" : "Normal",
    source: { component: "gavel-controller" },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

/** Records engine events as Kubernetes Events; a failed write is logged, never thrown. */
export class KubernetesEventRecorder {
  /** Orders the Events of one controller that share a millisecond (their names). */
  private seq = 0;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  /** Records each event on `ex`, in order. */
  async record(ex: Execution, events: readonly { event: string; data: Record<string, unknown> }[]): Promise<void> {
    const now = new Date(this.now());
    for (const e of events) {
      const body = kubernetesEvent(ex, e.event, e.data, now, this.seq++);
      try {
        await this.core.createNamespacedEvent({ namespace: ns(ex), body });
      } catch (err) {
        this.logger.warn(
          { execution: `${ns(ex)}/${ex.metadata.name}`, event: e.event, err: messageOf(err) },
          "recording a Kubernetes Event failed",
        );
      }
    }
  }
}
