// A real OTLP receiver for the traces tests: Jaeger's all-in-one (built by build-jaeger.sh)
// on loopback ports of its own, spans kept in memory, read back over its query HTTP API.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { eventually } from "./eventually.js";
import { GAVEL_CACHE } from "./paths.js";

/** Mirrors lib.sh's JAEGER_VERSION. */
export const JAEGER = join(GAVEL_CACHE, "jaeger", "v1.76.0", "bin", "jaeger-all-in-one");

/** One span as Jaeger's query API returns it (the fields the tests read). */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: { key: string; type: string; value: unknown }[];
  logs: { timestamp: number; fields: { key: string; type: string; value: unknown }[] }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

/** Jaeger's query HTTP API. */
export interface JaegerQuery {
  /** The query HTTP API's base URL. */
  queryUrl: string;
  /** The trace of `traceId` once it holds at least `minSpans` spans. */
  trace(traceId: string, minSpans: number): Promise<JaegerTrace>;
  /** The traces of `service` (at most `limit`) with a span carrying every tag of `tags`. */
  traces(service: string, tags?: Record<string, string>, limit?: number): Promise<JaegerTrace[]>;
}

/** A running Jaeger. */
export interface Jaeger extends JaegerQuery {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for an exporter (OTLP over HTTP). */
  otlpEndpoint: string;
  /** The jaeger-all-in-one process (its CPU is read from /proc by bench/tracing.ts). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/** The e2e tier's Jaeger (test/e2e/global-setup.ts): where the chart's controller sends its traces, and its query API. */
export const E2E_OTLP_ENDPOINT_ENV = "GAVEL_E2E_OTLP_ENDPOINT";
export const E2E_JAEGER_QUERY_ENV = "GAVEL_E2E_JAEGER_QUERY";

/** The query API of a Jaeger at `queryUrl`. */
export function jaegerQuery(queryUrl: string): JaegerQuery {
  const get = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${queryUrl}${path}`);
    if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { data: T }).data;
  };
  return {
    queryUrl,
    trace: (traceId, minSpans) =>
      eventually(
        async () => {
          const [t] = await get<JaegerTrace[]>(`/api/traces/${traceId}`);
          if (t === undefined || t.spans.length < minSpans)
            throw new Error(`trace ${traceId} has ${t?.spans.length ?? 0} span(s), want >= ${minSpans}`);
          return t;
        },
        { timeoutMs: 30_000 },
      ),
    traces: (service, tags = {}, limit = 20) =>
      get<JaegerTrace[]>(
        `/api/traces?service=${encodeURIComponent(service)}&limit=${limit}&lookback=1h${Object.keys(tags).length > 0 ? `&tags=${encodeURIComponent(JSON.stringify(tags))}` : ""}`,
      ),
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no free port");
  return address.port;
}

/**
 * Starts Jaeger on free loopback ports (its OTLP/HTTP receiver on `otlpHost`, default
 * loopback: the e2e tier gives the node's address, which pods reach); throws when it is not built.
 */
export async function startJaeger(otlpHost = "127.0.0.1"): Promise<Jaeger> {
  if (!existsSync(JAEGER)) throw new Error(`${JAEGER} is missing: run test/harness/build-jaeger.sh (make test-integration does)`);
  const [otlpHttp, otlpGrpc, queryPort, queryGrpc, admin, collectorHttp, collectorGrpc] = await Promise.all(
    Array.from({ length: 7 }, () => freePort()),
  );
  const at = (p: number | undefined) => `127.0.0.1:${String(p)}`;
  const child: ChildProcess = spawn(
    JAEGER,
    [
      `--collector.otlp.http.host-port=${otlpHost}:${String(otlpHttp)}`,
      `--collector.otlp.grpc.host-port=${at(otlpGrpc)}`,
      `--query.http-server.host-port=${at(queryPort)}`,
      `--query.grpc-server.host-port=${at(queryGrpc)}`,
      `--admin.http.host-port=${at(admin)}`,
      `--collector.http-server.host-port=${at(collectorHttp)}`,
      `--collector.grpc-server.host-port=${at(collectorGrpc)}`,
    ],
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, SPAN_STORAGE_TYPE: "memory" } },
  );
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const query = jaegerQuery(`http://${at(queryPort)}`);
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`jaeger exited ${child.exitCode}: ${stderr}`);
        const r = await fetch(`${query.queryUrl}/api/services`);
        return r.ok ? true : undefined;
      },
      { timeoutMs: 30_000, what: "jaeger's query API" },
    );
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return {
    ...query,
    otlpEndpoint: `http://${otlpHost}:${String(otlpHttp)}`,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}
