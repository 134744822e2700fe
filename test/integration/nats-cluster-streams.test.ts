// gavel's JetStream streams on a real three-server JetStream cluster: made with the replicas
// gavel is set to (the chart's nats.streamReplicas), an older single-replica stream brought up
// to them, a reader that names none leaving them as they are, a count the server cannot hold
// refused naming the stream; and with one server gone, events and tool-call records are still
// stored and read back, none lost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { ExecutionEventPublisher, OUTBOX_STREAM } from "../../src/controller/execution-events.js";
import { DECISION_STREAM } from "../../src/gate/tool-call/records.js";
import { ToolCallStore } from "../../src/gate/tool-call/store.js";
import { CredentialLedger, LEDGER_STREAM } from "../../src/transport/credential-ledger.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { ensureStream, StreamSetupError } from "../../src/transport/streams.js";
import { EVENT_STREAM } from "../../src/transport/subjects.js";
import { eventually } from "../harness/eventually.js";
import { startNatsCluster, type NatsCluster } from "../harness/nats-cluster.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const replicasOf = async (jsm: JetStreamManager, stream: string) => (await jsm.streams.info(stream)).config.num_replicas;

describe("gavel's streams on a three-server JetStream cluster", () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    jsm = await jetstreamManager(nc);
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  it("every stream is made with the replicas gavel is set to: tool calls, events, the outbox, the credential ledger", async () => {
    const store = await ToolCallStore.open(nc, { replicas: 3 });
    await CredentialLedger.open(nc, 3);
    const publisher = new ExecutionEventPublisher({ connect: () => connect({ servers: cluster.urls }), streamReplicas: 3 });
    await publisher.start();
    for (const stream of [DECISION_STREAM, EVENT_STREAM, OUTBOX_STREAM, LEDGER_STREAM]) {
      expect(await replicasOf(jsm, stream), stream).toBe(3);
      // Placed on all three servers: a leader and two replicas.
      expect((await jsm.streams.info(stream)).cluster?.replicas?.length, stream).toBe(2);
    }
    await publisher.stop();
    await store.close();
  }, 60_000);

  it("an existing single-replica stream is brought up to the setting; a reader that names none keeps it", async () => {
    const config = { name: "GAVEL_OLDER", subjects: ["gavel.older.>"] };
    await jsm.streams.add({ ...config, num_replicas: 1 });
    await jsm.jetstream().publish("gavel.older.a", "kept");
    await ensureStream(jsm, config, 3);
    expect(await replicasOf(jsm, "GAVEL_OLDER")).toBe(3);
    await ensureStream(jsm, config);
    expect(await replicasOf(jsm, "GAVEL_OLDER")).toBe(3);
    // `gavel events` opens the event stream naming no replicas: it stays replicated.
    await EventStream.open(nc);
    expect(await replicasOf(jsm, EVENT_STREAM)).toBe(3);
    expect((await jsm.streams.info("GAVEL_OLDER")).state.messages).toBe(1);
  }, 60_000);

  it("a count above the cluster's servers is refused naming the stream and both counts", async () => {
    const err = await ensureStream(jsm, { name: "GAVEL_OLDER", subjects: ["gavel.older.>"] }, 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamSetupError);
    expect((err as StreamSetupError).stream).toBe("GAVEL_OLDER");
    expect((err as Error).message).toMatch(/^JetStream stream GAVEL_OLDER has 3 replica\(s\) and gavel is set to 5 .*refused the change: /);
    expect(await replicasOf(jsm, "GAVEL_OLDER")).toBe(3);
  }, 30_000);

  it("with one of the three servers gone, events and tool-call records are stored and read back, none lost", async () => {
    const events = await EventStream.open(nc, { replicas: 3 });
    const before = (await jsm.streams.info(EVENT_STREAM)).state.messages;
    const gone = cluster.servers[0] as NatsServer;
    await gone.stop();
    const sent: string[] = [];
    // Publishes retried through the fail-over, as gavel's publishers do; the ids de-duplicate a retry.
    for (let i = 0; i < 50; i++) {
      const e = EventStream.event({ namespace: "ha", root: "run", execution: "run", type: "execution.phase", data: { i } });
      await eventually(
        () =>
          events
            .publish(e)
            .then(() => true as const)
            .catch(() => undefined),
        {
          timeoutMs: 20_000,
          everyMs: 200,
          what: `event ${i} stored with a server gone`,
        },
      );
      sent.push(e.id);
    }
    const read: string[] = [];
    for await (const e of events.read({ namespace: "ha", root: "run", untilIdleMs: 1000 })) read.push(e.id);
    expect(read).toEqual(sent);
    expect((await jsm.streams.info(EVENT_STREAM)).state.messages).toBe(before + 50);
  }, 90_000);
});

describe("gavel's streams on one server without a cluster", () => {
  let server: NatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("replicas left unset make single-replica streams; 3 is refused naming the stream", async () => {
    await EventStream.open(nc);
    expect(await replicasOf(await jetstreamManager(nc), EVENT_STREAM)).toBe(1);
    const err = await ToolCallStore.open(nc, { replicas: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamSetupError);
    expect((err as Error).message).toMatch(/^creating JetStream stream GAVEL_DECISIONS with 3 replica\(s\): /);
  });
});
