// Trace ids derived from an Execution, and W3C traceparent in and out.
import { describe, expect, it } from "vitest";
import { executionTraceId, formatTraceparent, parseTraceparent, spanIdOf } from "./trace-context.js";
import { samplerEnvError, tracingFromEnv, tracingRequested } from "./tracing.js";

describe("trace context", () => {
  it("derives the same ids for the same Execution in every process, different ones otherwise", () => {
    const a = executionTraceId({ namespace: "n", name: "ex", uid: "u-1" });
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(executionTraceId({ namespace: "other", name: "x", uid: "u-1" })).toBe(a);
    expect(executionTraceId({ namespace: "n", name: "ex", uid: "u-2" })).not.toBe(a);
    expect(spanIdOf(a, "iteration/1")).toMatch(/^[0-9a-f]{16}$/);
    expect(spanIdOf(a, "iteration/1")).not.toBe(spanIdOf(a, "iteration/2"));
  });

  it("formats and parses traceparent; anything invalid is ignored", () => {
    const ref = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true };
    expect(formatTraceparent(ref)).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    expect(parseTraceparent(formatTraceparent(ref))).toEqual(ref);
    expect(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")?.sampled).toBe(false);
    for (const bad of [
      undefined,
      "",
      "garbage",
      "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });

  it("is off unless an exporter is configured the OpenTelemetry way", () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "console" })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBe(false);
  });

  it("names a sampler setting the SDK would silently replace, and stops before starting the SDK", async () => {
    for (const ok of [
      {},
      { OTEL_TRACES_SAMPLER: "always_off" },
      { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" },
      { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "" },
      { OTEL_TRACES_SAMPLER: "always_on", OTEL_TRACES_SAMPLER_ARG: "whatever" },
    ]) {
      expect(samplerEnvError(ok)).toBeUndefined();
    }
    expect(samplerEnvError({ OTEL_TRACES_SAMPLER: "parentbased_traceidration" })).toMatch(
      /^OTEL_TRACES_SAMPLER: "parentbased_traceidration" is not a sampler .*parentbased_traceidratio/,
    );
    expect(samplerEnvError({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1%" })).toBe(
      'OTEL_TRACES_SAMPLER_ARG: "1%" is not a ratio between 0 and 1 (for traceidratio)',
    );
    expect(samplerEnvError({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "10" })).toMatch(
      /^OTEL_TRACES_SAMPLER_ARG: "10" is not a ratio/,
    );
    await expect(
      tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_TRACES_SAMPLER: "sometimes" }, { name: "t" }),
    ).rejects.toThrow(/^OTEL_TRACES_SAMPLER: "sometimes"/);
  });
});
