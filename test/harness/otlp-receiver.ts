// An OTLP/HTTP receiver for unit tests of what gavel exports: the real SDK's real exporter
// (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) posts to it over loopback, and it keeps the spans,
// flattened, with their attributes decoded. Jaeger (test/harness/jaeger.ts) is the receiver
// of the integration and e2e tiers.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { tracingFromEnv, type Tracing } from "../../src/telemetry/tracing.js";

/** An OTLP attribute value as the JSON encoding carries it. */
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
}

interface KeyValue {
  key: string;
  value: AnyValue;
}

/** One exported span, as the receiver got it. */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  /** Epoch nanoseconds. */
  start: bigint;
  end: bigint;
  attributes: Record<string, unknown>;
  events: { name: string; time: bigint; attributes: Record<string, unknown> }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
}

interface JsonSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: KeyValue[];
  events?: { name: string; timeUnixNano: string | number; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}

interface ExportRequest {
  resourceSpans?: { scopeSpans?: { spans?: JsonSpan[] }[] }[];
}

function valueOf(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

const attributesOf = (kvs: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

function received(s: JsonSpan): ReceivedSpan {
  return {
    name: s.name,
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId !== undefined && s.parentSpanId !== "" ? { parentSpanId: s.parentSpanId } : {}),
    kind: s.kind,
    start: BigInt(s.startTimeUnixNano),
    end: BigInt(s.endTimeUnixNano),
    attributes: attributesOf(s.attributes),
    events: (s.events ?? []).map((e) => ({ name: e.name, time: BigInt(e.timeUnixNano), attributes: attributesOf(e.attributes) })),
    status: { code: s.status?.code ?? 0, ...(s.status?.message !== undefined ? { message: s.status.message } : {}) },
  };
}

/** A running receiver: its endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) and the spans it got, in arrival order. */
export interface OtlpReceiver {
  endpoint: string;
  spans: ReceivedSpan[];
  /** Export requests received. */
  requests: number;
  stop(): Promise<void>;
}

/** Starts a receiver of OTLP/HTTP JSON trace exports on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const state = { requests: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || !(req.headers["content-type"] ?? "").includes("json")) {
        res
          .writeHead(400)
          .end(
            `this receiver takes OTLP/HTTP JSON trace exports on POST /v1/traces, not ${req.method ?? "?"} ${req.url ?? "?"} (${req.headers["content-type"] ?? "no content-type"})`,
          );
        return;
      }
      state.requests++;
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest;
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push(received(s));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${String(port)}`,
    spans,
    get requests() {
      return state.requests;
    },
    stop: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}

/** gavel's tracing (tracingFromEnv: the real SDK, its OTLP/HTTP JSON exporter) sending to a new receiver; one per test file (the SDK registers globally). */
export async function tracingToReceiver(): Promise<{ tracing: Tracing; receiver: OtlpReceiver; stop: () => Promise<void> }> {
  const receiver = await startOtlpReceiver();
  const saved = { ...process.env };
  // The SDK reads its settings from process.env (src/telemetry/tracing.ts).
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
  const tracing = await tracingFromEnv(process.env, { name: "gavel-unit" });
  if (tracing === undefined) throw new Error("tracing did not start");
  return {
    tracing,
    receiver,
    async stop() {
      await tracing.shutdown();
      await receiver.stop();
      process.env = saved;
    },
  };
}

/** tracingToReceiver for the calling test file: started before its tests, stopped after; the fields are set once its beforeAll ran. */
export function tracingToReceiverPerFile(): { tracing: Tracing; receiver: OtlpReceiver } {
  const fixture = {} as { tracing: Tracing; receiver: OtlpReceiver };
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const started = await tracingToReceiver();
    Object.assign(fixture, { tracing: started.tracing, receiver: started.receiver });
    stop = started.stop;
  });
  afterAll(async () => {
    await stop?.();
  });
  return fixture;
}
