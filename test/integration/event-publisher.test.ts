// The controller's event publisher (src/controller/execution-events.ts) against a real
// nats-server: its outbox (a batch staged, the controller dead before publishing it) replayed
// once by the next controller, and a NATS outage that staging survives. On the cluster, with
// the chart's controller pod: test/e2e/execution-events.exclusive.test.ts.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { DiscardPolicy, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import type { GavelEvent } from "../../src/api/events.js";
import type { Execution, ExecutionStatus } from "../../src/api/types.js";
import { ExecutionEventPublisher, OUTBOX_STREAM, toGavelEvents, type EngineEvent } from "../../src/controller/execution-events.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { EVENT_STREAM } from "../../src/transport/subjects.js";
import { eventually } from "../harness/eventually.js";
import { capturedLogger } from "../harness/logs.js";
import { freePort, readEvents, startNats } from "../harness/nats.js";

/** A nats-server with JetStream on a given loopback port (startNats picks its own port; an outage needs a known one). */
async function natsOnPort(port: number): Promise<{ stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-events-nats-"));
  const server = spawn("nats-server", ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], { stdio: "ignore" });
  const exited = new Promise((r) => server.once("exit", r));
  await eventually(
    () =>
      new Promise<true | undefined>((resolve) => {
        const sock = tcpConnect(port, "127.0.0.1");
        sock.once("connect", () => (sock.destroy(), resolve(true)));
        sock.once("error", () => resolve(undefined));
      }),
    10_000,
    `nats-server on port ${port}`,
  );
  return {
    async stop() {
      server.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe("the controller's event publisher against a real nats-server", () => {
  const ex: Execution = {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: { name: "outbox", namespace: "team-a", uid: "uid-1" },
    spec: { agentRef: { name: "writer" } },
  };
  const status: ExecutionStatus = {
    phase: "Running",
    iteration: 1,
    iterations: [{ number: 1, phase: "Validating", exitCode: 0, validators: [] }],
    children: [],
  };
  const batch: EngineEvent[] = [
    { event: "worker.finished", data: { iteration: 1, exitCode: 0, timedOut: false } },
    { event: "validator.started", data: { iteration: 1, index: 0, type: "exit_code" } },
    {
      event: "validator.result",
      data: { iteration: 1, index: 0, type: "exit_code", passed: true, score: 1, confidence: 1, reasoning: "exit 0" },
    },
    { event: "validator.started", data: { iteration: 1, index: 1, type: "semantic" } },
    { event: "judge.spawned", data: { child: "outbox-i1-v1-j", judge: "j", iteration: 1, index: 1, purpose: "validation" } },
  ];

  it("Given a batch staged and partly published by a controller that died, the next one publishes the rest once; a batch whose write never happened is dropped", async () => {
    const server = await startNats();
    const nc = await connect({ servers: server.url });
    try {
      const events = toGavelEvents(ex, batch, new Date());
      const first = new ExecutionEventPublisher({ connect: () => connect({ servers: server.url }) });
      await first.recover({ ...ex, status: { phase: "Running" } });
      const seq = await first.stage(ex, events, status);
      expect(seq).toBeGreaterThan(0);
      // The status write happened; two events reached the stream before the controller died
      const stream = await EventStream.open(nc);
      await stream.publish(events[0] as GavelEvent);
      await stream.publish(events[1] as GavelEvent);
      await first.stop(0);

      const second = new ExecutionEventPublisher({ connect: () => connect({ servers: server.url }) });
      await second.recover({ ...ex, status });
      await second.stop(10_000);
      expect(second.stats).toMatchObject({ recovered: 1, published: 3, pending: 0 });
      const got = await readEvents(nc, "team-a", "outbox");
      expect(got.map((e) => e.id)).toEqual(events.map((e) => e.id));
      const jsm = await jetstreamManager(nc);
      expect(await jsm.streams.getMessage(OUTBOX_STREAM, { last_by_subj: "gavel.outbox.team-a.outbox" })).toBeNull();

      // A controller that committed a batch and staged the next before publishing the first dies: the next one publishes both, in order
      const third = { ...ex, metadata: { ...ex.metadata, name: "outbox3", uid: "uid-3" } };
      const later: ExecutionStatus = {
        ...status,
        children: [{ name: "outbox3-i1-v1-j", purpose: "validation", iteration: 1, validatorIndex: 1, judge: "j", phase: "Running" }],
      };
      const all = toGavelEvents(third, batch, new Date());
      const dying = new ExecutionEventPublisher({ connect: () => connect({ servers: server.url }), retryMs: 100 });
      await dying.recover({ ...third, status: { phase: "Running" } });
      // The event stream refuses new messages for a while, so the first batch stays queued
      const held = (await jsm.streams.info(EVENT_STREAM)).state.messages;
      await jsm.streams.update(EVENT_STREAM, { max_msgs: held, discard: DiscardPolicy.New });
      dying.commit(third, all.slice(0, 3), await dying.stage(third, all.slice(0, 3), status));
      await eventually(() => Promise.resolve(dying.stats.failures > 0 ? true : undefined), 10_000, "the first batch to be refused");
      const seq2 = await dying.stage(third, all.slice(3), later);
      expect(seq2).toBeGreaterThan(0);
      await dying.stop(0);
      expect(dying.stats.published).toBe(0);
      await jsm.streams.update(EVENT_STREAM, { max_msgs: -1, discard: DiscardPolicy.Old });
      // One of them did get through before the controller died
      await stream.publish(all[0] as GavelEvent);
      const heir = new ExecutionEventPublisher({ connect: () => connect({ servers: server.url }) });
      await heir.recover({ ...third, status: later });
      await heir.stop(10_000);
      expect((await readEvents(nc, "team-a", "outbox3")).map((e) => e.id)).toEqual(all.map((e) => e.id));
      // Nothing the stream held was sent again (the dedup window would hide it from the stream, not from this count)
      expect(heir.stats.published).toBe(all.length - 1);

      // A batch staged for a write that did not happen (the status is not the staged one) is not published
      const other = { ...ex, metadata: { ...ex.metadata, name: "outbox2", uid: "uid-2" } };
      const unlucky = new ExecutionEventPublisher({ connect: () => connect({ servers: server.url }) });
      await unlucky.recover({ ...other, status: { phase: "Running" } });
      await unlucky.stage(other, toGavelEvents(other, batch, new Date()), status);
      await unlucky.stop(0);
      const fourth = new ExecutionEventPublisher({ connect: () => connect({ servers: server.url }) });
      await fourth.recover({
        ...other,
        status: { phase: "Running", iteration: 1, iterations: [{ number: 1, phase: "Running" }], children: [] },
      });
      await fourth.stop(5_000);
      expect(fourth.stats).toMatchObject({ recovered: 0, published: 0 });
      expect(await readEvents(nc, "team-a", "outbox2")).toEqual([]);
      expect(await jsm.streams.getMessage(OUTBOX_STREAM, { last_by_subj: "gavel.outbox.team-a.outbox2" })).toBeNull();
    } finally {
      await nc.close();
      await server.stop();
    }
  }, 60_000);

  it("Given NATS is down, staging fails fast and is counted, publishing is retried, and the events arrive in order once NATS is up", async () => {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    const { logger, lines: logs } = capturedLogger();
    const publisher = new ExecutionEventPublisher({
      connect: () => connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 200 }),
      logger,
      retryMs: 100,
    });
    const events = toGavelEvents(ex, batch, new Date());
    const t0 = Date.now();
    await publisher.recover({ ...ex, status });
    const staged = await publisher.stage(ex, events, status);
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(staged).toBeUndefined();
    publisher.commit(ex, events, staged);
    await eventually(() => Promise.resolve(publisher.stats.failures >= 2 ? true : undefined), 10_000, "publish attempts to fail");
    expect(publisher.stats.pending).toBe(events.length);
    expect(publisher.stats.unstaged).toBe(1);
    expect(logs.some((l) => l.includes("publishing an event failed") && l.includes('"event":"worker.finished"'))).toBe(true);

    // When NATS comes up on that address, the queued events are published
    const server = await natsOnPort(port);
    try {
      await eventually(
        () => Promise.resolve(publisher.stats.published === events.length ? true : undefined),
        30_000,
        "the queued events to be published",
      );
      expect(publisher.stats.pending).toBe(0);
      const nc = await connect({ servers: url });
      try {
        expect((await readEvents(nc, "team-a", "outbox")).map((e) => e.id)).toEqual(events.map((e) => e.id));
      } finally {
        await nc.close();
      }
    } finally {
      await publisher.stop(1000);
      await server.stop();
    }
  }, 60_000);
});
