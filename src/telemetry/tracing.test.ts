// gavel's spans through the real OpenTelemetry SDK and its OTLP exporter, to a receiver on
// loopback: a span is handed to the SDK after the turn that ends it, and is exported with what
// was recorded when it happened (docs/adr/0049).
import { describe, expect, it } from "vitest";
import { tracingToReceiverPerFile, type ReceivedSpan } from "../../test/harness/otlp-receiver.js";

const PARENT = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true };

/** Keeps the CPU for `ms` milliseconds (a span's duration that no timer rounds). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

const ms = (ns: bigint): number => Number(ns) / 1e6;

describe("tracingFromEnv (OpenTelemetry SDK, OTLP/HTTP JSON to a receiver)", () => {
  const t = tracingToReceiverPerFile();

  const exported = async (name: string): Promise<ReceivedSpan> => {
    await t.tracing.flush();
    const s = t.receiver.spans.find((x) => x.name === name);
    if (s === undefined) throw new Error(`no span ${name} among ${t.receiver.spans.map((x) => x.name).join(", ")}`);
    return s;
  };

  it("builds a span's attributes after the turn that ends it, and exports what was recorded with the times it happened", async () => {
    let built = 0;
    const wallBefore = Date.now();
    const before = performance.now();
    const span = t.tracing.start({
      name: "execute_tool fs.read",
      parent: PARENT,
      kind: "server",
      attributes: () => (
        built++,
        { "gen_ai.tool.name": "fs.read", "gavel.tool.arg_keys": ["path", "options.limit"], "gavel.tool.step": 3 }
      ),
    });
    busy(3);
    span.setAttributes({ "gavel.guard.decision": "blocked" });
    span.addEvent("gen_ai.evaluation.result", { "gen_ai.evaluation.name": "sec", "gen_ai.evaluation.score.value": 0.25 });
    busy(2);
    span.setError("timeout", "judge rejected: timeout");
    span.end();
    const elapsed = performance.now() - before;
    const wallAfter = Date.now();
    // Nothing of the SDK ran in this turn: the attributes are still unbuilt.
    expect(built).toBe(0);

    const s = await exported("execute_tool fs.read");
    expect(built).toBe(1);
    expect(s).toMatchObject({
      traceId: PARENT.traceId,
      parentSpanId: PARENT.spanId,
      kind: 2,
      attributes: {
        "gen_ai.tool.name": "fs.read",
        "gavel.tool.arg_keys": ["path", "options.limit"],
        "gavel.tool.step": 3,
        "gavel.guard.decision": "blocked",
        "error.type": "timeout",
      },
      status: { code: 2, message: "judge rejected: timeout" },
    });
    expect(s.spanId).toMatch(/^[0-9a-f]{16}$/);
    // The times are those of the calls, not of the build (which came >= 10 ms later).
    expect(ms(s.start)).toBeGreaterThanOrEqual(wallBefore - 1);
    expect(ms(s.start)).toBeLessThanOrEqual(wallAfter + 1);
    const duration = ms(s.end - s.start);
    expect(duration).toBeGreaterThanOrEqual(5);
    expect(duration).toBeLessThanOrEqual(elapsed + 0.01);
    expect(s.events).toHaveLength(1);
    const event = s.events[0];
    expect(event).toMatchObject({
      name: "gen_ai.evaluation.result",
      attributes: { "gen_ai.evaluation.name": "sec", "gen_ai.evaluation.score.value": 0.25 },
    });
    expect(ms((event?.time ?? 0n) - s.start)).toBeGreaterThanOrEqual(3);
    expect(ms(s.end - (event?.time ?? 0n))).toBeGreaterThanOrEqual(2);
  });

  it("makes a span in the SDK when its ref is read: planned ids, and children exported under it", async () => {
    const root = t.tracing.start({
      name: "gavel.execution planned",
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
    });
    expect(root.ref).toEqual({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true });
    const child = t.tracing.start({
      name: "invoke_agent planned-judge",
      parent: root.ref,
      attributes: { "gen_ai.agent.name": "planned-judge" },
    });
    const childRef = child.ref;
    child.end();
    root.end();
    const c = await exported("invoke_agent planned-judge");
    const r = await exported("gavel.execution planned");
    expect(r).toMatchObject({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", kind: 1 });
    expect(r.parentSpanId).toBeUndefined();
    expect(c).toMatchObject({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: childRef.spanId,
      parentSpanId: "00f067aa0ba902b7",
      attributes: { "gen_ai.agent.name": "planned-judge" },
    });
    // Every span's times go through one offset (span-clock.ts): the child lies within its parent.
    expect(ms(c.start - r.start)).toBeGreaterThanOrEqual(0);
    expect(ms(r.end - c.end)).toBeGreaterThanOrEqual(0);
  });

  it("exports a span ended once, and every span of a burst larger than an export batch", async () => {
    const n = 600;
    for (let i = 0; i < n; i++) {
      const span = t.tracing.start({ name: `burst ${i}`, parent: PARENT });
      span.end();
      span.end();
    }
    await t.tracing.flush();
    const burst = t.receiver.spans.filter((s) => s.name.startsWith("burst "));
    expect(burst).toHaveLength(n);
    expect(new Set(burst.map((s) => s.name)).size).toBe(n);
  });
});
