// gavel's traces: OpenTelemetry's Node SDK, configured the OpenTelemetry way (OTEL_* env:
// OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL, _HEADERS, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES ...), built in the composition root and passed down. Off unless an
// exporter is configured: then the SDK is never even loaded (docs/adr/0036-traces.md). A span
// is handed to the SDK after the turn that ends it, with the times it recorded (docs/adr/0049).
import type { Attributes, Context, ContextManager, HrTime, Span, SpanStatusCode, Tracer } from "@opentelemetry/api";
import type { tracing as sdkTracing } from "@opentelemetry/sdk-node";
import { spanTime } from "./span-clock.js";
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
  /** A function: called when the span is handed to the SDK, off the caller's path. */
  attributes?: Attributes | (() => Attributes);
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
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (exporters.includes("none")) return false;
  return exporters.length > 0 || (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "") !== "" || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? "") !== "";
}

/** The samplers the OpenTelemetry JS SDK builds from OTEL_TRACES_SAMPLER. */
const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

/**
 * What is wrong with the environment's sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG),
 * or undefined. The SDK itself replaces an unknown sampler by parentbased_always_on and a bad
 * ratio by 1, and says so only in its own diagnostics, which nobody reads: an operator who
 * asked for 1 % of the traces would get all of them.
 */
export function samplerEnvError(env: NodeJS.ProcessEnv): string | undefined {
  const sampler = env.OTEL_TRACES_SAMPLER;
  if (sampler === undefined || sampler.trim() === "") return undefined;
  if (!SAMPLERS.includes(sampler.trim()))
    return `OTEL_TRACES_SAMPLER: "${sampler}" is not a sampler the OpenTelemetry SDK knows (${SAMPLERS.join(", ")})`;
  const arg = (env.OTEL_TRACES_SAMPLER_ARG ?? "").trim();
  if (!sampler.includes("traceidratio") || arg === "") return undefined;
  const ratio = Number(arg);
  return Number.isNaN(ratio) || ratio < 0 || ratio > 1
    ? `OTEL_TRACES_SAMPLER_ARG: "${arg}" is not a ratio between 0 and 1 (for ${sampler.trim()})`
    : undefined;
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
 * The active context for synchronous code only. gavel hands every span its parent (SpanStart),
 * nothing reads the active context across an await, and no instrumentation is loaded: the SDK's
 * default (AsyncLocalStorage) would put an async hook on every promise of the process, traced
 * call or not, for nothing (docs/adr/0049).
 */
class SyncContextManager implements ContextManager {
  private current: Context;

  constructor(private readonly root: Context) {
    this.current = root;
  }

  active(): Context {
    return this.current;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const previous = this.current;
    this.current = context;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = previous;
    }
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== "function") return target;
    const fn = target as (...args: unknown[]) => unknown;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the bound function runs fn in `context`
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(context, () => fn.apply(this, args));
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.current = this.root;
    return this;
  }
}

/** How long ended spans wait, in milliseconds, before the SDK gets them (DeferredSpans). */
const DRAIN_DELAY_MS = 10;

/** What DeferredSpans needs of the SDK: a span begun at a given time, and the ERROR status code. */
interface SdkSpans {
  start(s: SpanStart, startTime: HrTime): Span;
  error: SpanStatusCode;
}

/** The spans ended since the last drain; a drain hands them to the SDK (docs/adr/0049). */
class DeferredSpans {
  private ended: DeferredSpan[] = [];

  constructor(readonly sdk: SdkSpans) {}

  push(span: DeferredSpan): void {
    // Not setImmediate: right after a reply, the SDK's work would compete for the CPU with the
    // reply on its way (NATS, the worker); a timer lands between calls (docs/benchmarks.md, "Tracing
    // overhead"). Unref'd: flush and shutdown drain what is left.
    if (this.ended.push(span) === 1) setTimeout(() => this.drain(), DRAIN_DELAY_MS).unref();
  }

  /** Makes and ends the SDK's span of every span ended so far. */
  drain(): void {
    const batch = this.ended;
    this.ended = [];
    for (const d of batch) d.build();
  }
}

/**
 * A span whose SDK span is made after the turn that ends it (or when its ref is first read:
 * then the SDK decides its ids and sampling), from what was recorded: the same name, parent,
 * ids, attributes, events, status, and the start, event and end times read from the clock when
 * they happened. So neither the SDK's span objects nor its processor, nor a batch export that
 * falls due in the SDK's span.end(), run on the caller's path (a tool call's reply).
 */
class DeferredSpan implements TraceSpan {
  private span: Span | undefined;
  private readonly startTime: Date | number;
  private readonly later: Attributes = {};
  private readonly events: { name: string; attributes: Attributes; time: Date | number }[] = [];
  private error: { type: string; message?: string } | undefined;
  private endTime: Date | number | undefined;

  constructor(
    private readonly spans: DeferredSpans,
    private readonly s: SpanStart,
  ) {
    // A performance.now() reading: start, events and end become wall-clock times through the
    // one offset of span-clock.ts, so spans nest as they happened (durations to the µs).
    this.startTime = s.startTime ?? performance.now();
  }

  get ref(): SpanRef {
    const c = this.sdkSpan().spanContext();
    return { traceId: c.traceId, spanId: c.spanId, sampled: (c.traceFlags & 1) === 1 /* W3C sampled flag */ };
  }

  setAttributes(a: Attributes): void {
    Object.assign(this.later, a);
  }

  addEvent(name: string, attributes: Attributes, time?: Date | number): void {
    this.events.push({ name, attributes, time: time ?? performance.now() });
  }

  setError(type: string, message?: string): void {
    this.error = { type, ...(message !== undefined ? { message } : {}) };
  }

  end(time?: Date | number): void {
    if (this.endTime !== undefined) return;
    this.endTime = time ?? performance.now();
    this.spans.push(this);
  }

  /** Ends the SDK's span (made now if its ref was never read) with what was recorded. */
  build(): void {
    const span = this.sdkSpan();
    span.setAttributes(this.later);
    for (const e of this.events) span.addEvent(e.name, e.attributes, spanTime(e.time));
    if (this.error !== undefined) {
      span.setAttribute("error.type", this.error.type);
      span.setStatus({ code: this.spans.sdk.error, ...(this.error.message !== undefined ? { message: this.error.message } : {}) });
    }
    span.end(this.endTime === undefined ? undefined : spanTime(this.endTime));
  }

  private sdkSpan(): Span {
    return (this.span ??= this.spans.sdk.start(this.s, spanTime(this.startTime)));
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
  const bad = samplerEnvError(env);
  if (bad !== undefined) throw new Error(bad);
  const sdkNode = await import("@opentelemetry/sdk-node");
  const { api, tracing } = sdkNode;
  const ids = new PlannedIds(new tracing.RandomIdGenerator());
  const sdk = new sdkNode.NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? service.name,
    idGenerator: ids,
    instrumentations: [],
    // gavel emits no OpenTelemetry logs or metrics (its metrics are Prometheus'): no exporter for them.
    logRecordProcessors: [],
    contextManager: new SyncContextManager(api.ROOT_CONTEXT),
  });
  sdk.start();
  const tracer: Tracer = api.trace.getTracer("gavel", service.version);
  const kinds = { internal: api.SpanKind.INTERNAL, server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT };

  /** The SDK's span of a SpanStart, begun at `startTime`. */
  function sdkStart(s: SpanStart, startTime: HrTime): Span {
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
    const attributes = typeof s.attributes === "function" ? s.attributes() : s.attributes;
    const span = tracer.startSpan(
      s.name,
      { kind: kinds[s.kind ?? "internal"], ...(attributes !== undefined ? { attributes } : {}), startTime, root: s.parent === undefined },
      ctx,
    );
    ids.nextTraceId = undefined;
    ids.nextSpanId = undefined;
    return span;
  }
  const deferred = new DeferredSpans({ start: sdkStart, error: api.SpanStatusCode.ERROR });

  return {
    start: (s: SpanStart): TraceSpan => new DeferredSpan(deferred, s),
    async flush() {
      deferred.drain();
      // The global provider is a proxy in front of the SDK's; the SDK's flushes.
      const proxy = api.trace.getTracerProvider() as { getDelegate?: () => unknown };
      await (proxy.getDelegate?.() as { forceFlush?: () => Promise<void> } | undefined)?.forceFlush?.();
    },
    shutdown: () => {
      deferred.drain();
      return sdk.shutdown();
    },
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
        attributes: { ...(typeof s.attributes === "function" ? s.attributes() : s.attributes) },
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
