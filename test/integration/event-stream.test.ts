// gavel's event stream on the real nats-server: durable, ordered, filtered per tree, and
// de-duplicated when a publish is retried.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { GavelEvent } from "../../src/api/events.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { startNats, type NatsServer } from "../harness/nats.js";

describe("EventStream (real JetStream)", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let stream: EventStream;

  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    stream = await EventStream.open(nc);
  });
  afterAll(async () => {
    await nc?.drain();
    await server?.stop();
  });

  async function collect(filter: Parameters<EventStream["read"]>[0]): Promise<(GavelEvent & { seq: number })[]> {
    const out: (GavelEvent & { seq: number })[] = [];
    for await (const e of stream.read({ untilIdleMs: 500, ...filter })) out.push(e);
    return out;
  }

  it("keeps events of each tree apart, in order, and drops a re-published id", async () => {
    const a1 = EventStream.event({
      namespace: "ns",
      root: "run-a",
      execution: "run-a",
      type: "execution.phase",
      data: { phase: "Running" },
    });
    const a2 = EventStream.event({
      namespace: "ns",
      root: "run-a",
      execution: "run-a-v0-judge",
      type: "judge.verdict",
      data: { score: 0.9 },
    });
    const b1 = EventStream.event({
      namespace: "ns",
      root: "run.b",
      execution: "run.b",
      type: "execution.phase",
      data: { phase: "Failed" },
    });
    const s1 = await stream.publish(a1);
    await stream.publish(b1);
    await stream.publish(a2);
    // A retry of the same event (same id) is not stored twice.
    expect(await stream.publish(a1)).toBe(s1);

    const treeA = await collect({ namespace: "ns", root: "run-a" });
    expect(treeA.map((e) => e.id)).toEqual([a1.id, a2.id]);
    expect(treeA[1]?.data).toEqual({ score: 0.9 });
    const treeB = await collect({ namespace: "ns", root: "run.b" });
    expect(treeB.map((e) => e.execution)).toEqual(["run.b"]);
    expect((await collect({ namespace: "ns" })).length).toBe(3);
  });

  it("survives a reconnect: a new connection reads what an old one published", async () => {
    const e = EventStream.event({ namespace: "other", root: "r", execution: "r", type: "iteration.finished", data: { n: 1 } });
    await stream.publish(e);
    const nc2 = await connect({ servers: server.url });
    try {
      const s2 = await EventStream.open(nc2);
      const seen: string[] = [];
      for await (const x of s2.read({ namespace: "other", untilIdleMs: 500 })) seen.push(x.id);
      expect(seen).toEqual([e.id]);
    } finally {
      await nc2.close();
    }
  });
});
