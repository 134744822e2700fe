// The real nats-server with JetStream: request/reply and a durable publish/consume.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import { startNats, type NatsServer } from "../harness/nats.js";

describe("NATS with JetStream (real nats-server)", () => {
  let server: NatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.drain();
    await server?.stop();
  });

  it("answers a request with the responder's reply", async () => {
    const sub = nc.subscribe("gavel.test.echo");
    void (async () => {
      for await (const m of sub) m.respond(`echo:${m.string()}`);
    })();
    const reply = await nc.request("gavel.test.echo", "ping", { timeout: 2000 });
    expect(reply.string()).toBe("echo:ping");
    sub.unsubscribe();
  });

  it("fails a request nobody answers instead of hanging", async () => {
    await expect(nc.request("gavel.test.nobody", "x", { timeout: 500 })).rejects.toThrow();
  });

  it("stores published events in a stream and delivers them to a durable consumer in order", async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "GAVEL_TEST", subjects: ["gavel.test.events.>"] });
    await jsm.consumers.add("GAVEL_TEST", { durable_name: "reader", ack_policy: AckPolicy.Explicit });
    const js = jetstream(nc);
    for (let i = 0; i < 5; i++) {
      const ack = await js.publish(`gavel.test.events.e${i}`, JSON.stringify({ i }));
      expect(ack.seq).toBe(i + 1);
    }
    const consumer = await js.consumers.get("GAVEL_TEST", "reader");
    const seen: number[] = [];
    const messages = await consumer.fetch({ max_messages: 5, expires: 2000 });
    for await (const m of messages) {
      seen.push(m.json<{ i: number }>().i);
      // ackAck waits for the server to record the ack, so the info below is exact.
      expect(await m.ackAck()).toBe(true);
    }
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    const info = await jsm.consumers.info("GAVEL_TEST", "reader");
    expect(info.num_ack_pending).toBe(0);
    expect(info.delivered.stream_seq).toBe(5);
  });
});
