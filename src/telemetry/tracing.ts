// gavel's traces: OpenTelemetry's Node SDK, configured the OpenTelemetry way (OTEL_* env:
// OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL, _HEADERS, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES ...), built in the composition root and passed down. Off unless an
// exporter is configured: then the SDK is never even loaded (docs/adr/0036-traces.md).
import type { Attributes, Span, Tracer } from "@opentelemetry/api";
import type { tracing as sdkTracing } from "@opentelemetry/sdk-node";
import type { SpanRef } from "./trace-context.js";

/** A span of gavel's: attributes, events, status, end; its place in the trace. */
export interface TraceSpan {
  readonly ref: SpanRef;
  setAttributes(attributes: Attributes): void;
  addEvent(name: string, attributes: Attributes, time?: Date | number): void;
  /** Marks the span failed (OpenTelemetry status ERROR) with `error.type`. */
  setError(errorType: string, message?: string): void;
  /** `time`: a Date or epoch milliseconds. */
  end(time?: Date | number): void;
}

/** What a span is: its name, parent (none: a trace root), planned ids, attributes, start. */
export interface SpanStart {
  name: string;
  parent?: SpanRef;
  /** The trace id of a root span (a child takes its parent's). */
  traceId?: string;
  /** The span's own id when it is planned (trace-context.ts), else random. */
  spanId?: string;
  attributes?: Attributes;
  /** A Date or epoch milliseconds. */
  startTime?: Date | number;
  kind?: "internal" | "server" | "client";
}

/** Starts spans; flushes and stops the exporter. */
export interface Tracing {
  start(span: SpanStart): TraceSpan;
  /** Exports what is buffered. */
  flush(): Promise<void>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * True when the environment asks for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an explicit OTEL_TRACES_EXPORTER other than `none`,
 * and OTEL_SDK_DISABLED is not `true`.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (exporters.includes("none")) return false;
  return exporters.length > 0 || (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "") !== "" || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? "") !== "";
}

/**
 * Hands the SDK the ids gavel planned for the span it starts next (startSpan is synchronous,
 * so nothing can come between), random ids otherwise.
 */
class PlannedIds implements sdkTracing.IdGenerator {
  nextTraceId: string | undefined;
  nextSpanId: string | undefined;

  constructor(private readonly random: sdkTracing.IdGenerator) {}

  generateTraceId(): string {
    const id = this.nextTraceId ?? this.random.generateTraceId();
    this.nextTraceId = undefined;
    return id;
  }

  generateSpanId(): string {
    const id = this.nextSpanId ?? this.random.generateSpanId();
    this.nextSpanId = undefined;
    return id;
  }
}

/**
 * The tracing the environment asks for (tracingRequested), or undefined: then nothing of the
 * SDK is loaded and callers skip their spans. `service` names the process (OTEL_SERVICE_NAME
 * wins). The SDK reads its own settings (exporter, protocol, headers, sampler, batch sizes) from
 * process.env, as every OpenTelemetry SDK does: `env` is that environment at the CLI's edge.
 */
export async function tracingFromEnv(env: NodeJS.ProcessEnv, service: { name: string; version?: string }): Promise<Tracing | undefined> {
  if (!tracingRequested(env)) return undefined;
  const sdkNode = await import("@opentelemetry/sdk-node");
  const { api, tracing } = sdkNode;
  const ids = new PlannedIds(new tracing.RandomIdGenerator());
  const sdk = new sdkNode.NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? service.name,
    idGenerator: ids,
    instrumentations: [],
    // gavel emits no OpenTelemetry logs or metrics (its metrics are Prometheus'): no exporter for them.
    logRecordProcessors: [],
  });
  sdk.start();
  const tracer: Tracer = api.trace.getTracer("gavel", service.version);
  const kinds = { internal: api.SpanKind.INTERNAL, server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT };

  function wrap(span: Span): TraceSpan {
    const c = span.spanContext();
    return {
      ref: { traceId: c.traceId, spanId: c.spanId, sampled: (c.traceFlags & 1) === 1 /* W3C sampled flag */ },
      setAttributes: (a) => void span.setAttributes(a),
      addEvent: (name, a, time) => void span.addEvent(name, a, time),
      setError: (errorType, message) => {
        span.setAttribute("error.type", errorType);
        span.setStatus({ code: api.SpanStatusCode.ERROR, ...(message !== undefined ? { message } : {}) });
      },
      end: (time) => span.end(time),
    };
  }

  return {
    start(s: SpanStart): TraceSpan {
      const ctx =
        s.parent === undefined
          ? api.ROOT_CONTEXT
          : api.trace.setSpanContext(api.ROOT_CONTEXT, {
              traceId: s.parent.traceId,
              spanId: s.parent.spanId,
              traceFlags: s.parent.sampled ? api.TraceFlags.SAMPLED : api.TraceFlags.NONE,
              isRemote: true,
            });
      ids.nextTraceId = s.parent === undefined ? s.traceId : undefined;
      ids.nextSpanId = s.spanId;
      const span = tracer.startSpan(
        s.name,
        { kind: kinds[s.kind ?? "internal"], ...(s.attributes !== undefined ? { attributes: s.attributes } : {}), ...(s.startTime !== undefined ? { startTime: s.startTime } : {}), root: s.parent === undefined },
        ctx,
      );
      ids.nextTraceId = undefined;
      ids.nextSpanId = undefined;
      return wrap(span);
    },
    async flush() {
      // The global provider is a proxy in front of the SDK's; the SDK's flushes.
      const proxy = api.trace.getTracerProvider() as { getDelegate?: () => unknown };
      await (proxy.getDelegate?.() as { forceFlush?: () => Promise<void> } | undefined)?.forceFlush?.();
    },
    shutdown: () => sdk.shutdown(),
  };
}

/** A span as recordingTracing keeps it. */
export interface RecordedSpan {
  name: string;
  ref: SpanRef;
  parent?: SpanRef;
  attributes: Attributes;
  events: { name: string; attributes: Attributes }[];
  error?: string;
  ended: boolean;
}

/** Tracing that keeps its spans in memory, in start order (unit tests of what is traced). */
export function recordingTracing(): Tracing & { spans: RecordedSpan[] } {
  const spans: RecordedSpan[] = [];
  let n = 0;
  return {
    spans,
    start(s) {
      const traceId = s.parent?.traceId ?? s.traceId ?? (++n).toString(16).padStart(32, "0");
      const rec: RecordedSpan = {
        name: s.name,
        ref: { traceId, spanId: s.spanId ?? (++n).toString(16).padStart(16, "0"), sampled: s.parent?.sampled ?? true },
        ...(s.parent !== undefined ? { parent: s.parent } : {}),
        attributes: { ...s.attributes },
        events: [],
        ended: false,
      };
      spans.push(rec);
      return {
        ref: rec.ref,
        setAttributes: (a) => Object.assign(rec.attributes, a),
        addEvent: (name, a) => void rec.events.push({ name, attributes: a }),
        setError: (t) => (rec.error = t),
        end: () => (rec.ended = true),
      };
    },
    flush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}
