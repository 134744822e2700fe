// What the event stream carries about an Execution: the engine's events with their place in
// the tree. Defined here, below every layer that makes, stores or reads them (the drivers,
// the transport's JetStream stream, the traces, the live tree).

/** One event about an Execution, as stored in the stream. */
export interface GavelEvent {
  id: string;
  time: string;
  namespace: string;
  /** The top-level Execution of the tree this event belongs to. */
  root: string;
  execution: string;
  /** Dot-separated kind, e.g. "execution.phase", "iteration.finished", "toolcall.decision". */
  type: string;
  data: Record<string, unknown>;
}
