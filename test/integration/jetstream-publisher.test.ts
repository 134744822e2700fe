// The gate's JetStream publisher on the real nats-server: acknowledgements (and a stream's
// API error) come back to the message that caused them; a subject no stream takes, a reply
// that never comes and a closed publisher each fail the publish, never leave it waiting.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { JetStreamPublisher } from "../../src/transport/jetstream-publisher.js";
import { startNats, type NatsServer } from "../harness/nats.js";

describe("JetStreamPublisher (real JetStream)", () => {
  let server: NatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "PUBTEST", subjects: ["pubtest.>"], max_msgs_per_subject: 1 });
  });
  afterAll(async () => {
    await nc?.drain();
    await server?.stop();
  });

  it("resolves each publish with its own acknowledgement, many in flight at once", async () => {
    const p = new JetStreamPublisher(nc, 5000);
    const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => p.publish(`pubtest.a.${i}`, JSON.stringify({ i }))));
    expect(acks.every((a) => a.stream === "PUBTEST" && a.error === undefined)).toBe(true);
    expect(new Set(acks.map((a) => a.seq)).size).toBe(200);
    // The stream holds what each acknowledgement says it stored.
    const jsm = await jetstreamManager(nc);
    const m = await jsm.streams.getMessage("PUBTEST", { last_by_subj: "pubtest.a.7" });
    expect(m?.seq).toBe(acks[7]?.seq);
    p.close();
  });

  it("hands a refused compare-and-set back as the stream's API error", async () => {
    const p = new JetStreamPublisher(nc, 5000);
    const h = () => {
      const x = headers();
      x.set("Nats-Expected-Last-Subject-Sequence", "0");
      return x;
    };
    expect((await p.publish("pubtest.cas", "first", h())).error).toBeUndefined();
    const second = await p.publish("pubtest.cas", "second", h());
    expect(second.error?.err_code).toBe(10071);
    p.close();
  });

  it("fails a publish no stream takes, one never answered, and those waiting when closed", async () => {
    const p = new JetStreamPublisher(nc, 300);
    await expect(p.publish("nostream.x", "x")).rejects.toThrow(/no JetStream stream takes subject nostream\.x/);
    // A plain subscriber that never replies: the acknowledgement never comes.
    const sub = nc.subscribe("silent.x");
    const started = Date.now();
    await expect(p.publish("silent.x", "x")).rejects.toThrow(/no JetStream acknowledgement within 300 ms/);
    expect(Date.now() - started).toBeLessThan(2000);
    const waiting = p.publish("silent.x", "y");
    p.close();
    await expect(waiting).rejects.toThrow(/closed/);
    sub.unsubscribe();
  });

  it("rejects, never throws, once its connection is closed (a gate renewing a claim while it stops)", async () => {
    const own = await connect({ servers: server.url });
    const p = new JetStreamPublisher(own, 5000);
    await own.close();
    let sent: Promise<unknown> | undefined;
    expect(() => (sent = p.publish("pubtest.closed", "x"))).not.toThrow();
    await expect(sent).rejects.toThrow(/closed/i);
    p.close();
  });
});
