// W3C trace context for gavel's traces: the trace id of an Execution and the span ids of its
// parts are derived from the Execution's uid, so every process (a controller replica after a
// restart, the gate, the driver handing a worker its TRACEPARENT) names the same span
// without asking anyone. Pure functions; no OpenTelemetry SDK is loaded here.
import { createHash } from "node:crypto";

/** The W3C `traceparent` header (and the TRACEPARENT env variable a worker gets). */
export const TRACEPARENT = "traceparent";
/** The env variable carrying a traceparent into a process (OpenTelemetry's env carrier). */
export const TRACEPARENT_ENV = "TRACEPARENT";

/** One span's place in a trace: what a traceparent carries. */
export interface SpanRef {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function hex(input: string, bytes: number): string {
  const h = createHash("sha256")
    .update(input)
    .digest("hex")
    .slice(0, bytes * 2);
  // All-zero ids are invalid in W3C trace context; a hash is never that in practice, but say so.
  return /^0+$/.test(h) ? `${h.slice(0, -1)}1` : h;
}

/** The trace id of an Execution's trace: from its uid (its namespace and name when it has none). */
export function executionTraceId(execution: { namespace: string; name: string; uid?: string }): string {
  return hex(`gavel/trace/${execution.uid ?? `${execution.namespace}/${execution.name}`}`, 16);
}

/** The span id of one part of a trace ("execution", "iteration/2", "validator/2/1", "judge/<child>"). */
export function spanIdOf(traceId: string, part: string): string {
  return hex(`gavel/span/${traceId}/${part}`, 8);
}

/** Formats a traceparent (version 00). */
export function formatTraceparent(ref: SpanRef): string {
  return `00-${ref.traceId}-${ref.spanId}-${ref.sampled ? "01" : "00"}`;
}

/** Parses a traceparent; undefined for anything that is not a valid version-00 one. */
export function parseTraceparent(value: string | undefined): SpanRef | undefined {
  const m = value === undefined ? null : TRACEPARENT_RE.exec(value.trim());
  if (m === null) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = m;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}
