// Per-execution NATS credentials on the real nats-server (operator/JWT mode): a worker
// can propose only as its own execution, receive only its own replies, and cannot
// publish a decision to another execution or read another execution's subjects.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { inboxPrefix, toolCallSubject, TOOL_CALL_WILDCARD } from "../../src/transport/subjects.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const enc = new TextEncoder();

describe("per-execution NATS credentials (real nats-server, JWT mode)", () => {
  let server: NatsServer;
  let trust: NatsTrust;
  let gate: NatsConnection;
  const conns: NatsConnection[] = [];

  async function asWorker(execution: string, ns = "team"): Promise<{ nc: NatsConnection; errors: Error[] }> {
    const creds = issueWorkerCredentials(trust, ns, execution);
    const errors: Error[] = [];
    const nc = await connect({
      servers: server.url,
      authenticator: credsAuthenticator(enc.encode(creds.creds)),
      inboxPrefix: inboxPrefix(ns, execution),
    });
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error") errors.push(s.error);
    })();
    conns.push(nc);
    return { nc, errors };
  }

  beforeAll(async () => {
    trust = createTrust();
    server = await startNats({ extraConfig: serverConfig(trust).config });
    gate = await connect({ servers: server.url, authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)) });
    // The gate answers every proposal with the execution it came in on.
    const sub = gate.subscribe(TOOL_CALL_WILDCARD, { queue: "gate" });
    void (async () => {
      for await (const m of sub) m.respond(`decision for ${m.subject}`);
    })();
  });
  afterAll(async () => {
    for (const c of conns) await c.close().catch(() => undefined);
    await gate?.close();
    await server?.stop();
  });

  it("refuses a connection without credentials", async () => {
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it("lets a worker propose as its own execution and get the reply", async () => {
    const { nc } = await asWorker("run-a");
    const r = await nc.request(toolCallSubject("team", "run-a"), "{}", { timeout: 2000 });
    expect(r.string()).toBe(`decision for ${toolCallSubject("team", "run-a")}`);
  });

  it("does not let a worker impersonate another execution", async () => {
    const { nc, errors } = await asWorker("run-b");
    await expect(nc.request(toolCallSubject("team", "run-a"), "{}", { timeout: 1500 })).rejects.toThrow();
    await nc.flush();
    expect(errors.map((e) => e.message).join("\n")).toMatch(/Permissions Violation for Publish to "gavel\.toolcall\.team\.run-a"/);
  });

  it("does not let a worker publish a decision into another execution's inbox", async () => {
    const { nc, errors } = await asWorker("run-c");
    nc.publish(`${inboxPrefix("team", "run-a")}.forged`, "allowed");
    nc.publish("_INBOX.anything", "allowed");
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    const text = errors.map((e) => e.message).join("\n");
    expect(text).toMatch(/Permissions Violation for Publish to "_INBOX_gavel\.team\.run-a\.forged"/);
    expect(text).toMatch(/Permissions Violation for Publish to "_INBOX\.anything"/);
  });

  it("does not let a worker read another execution's proposals or replies", async () => {
    const { nc, errors } = await asWorker("run-d");
    nc.subscribe(toolCallSubject("team", "run-a"));
    nc.subscribe(`${inboxPrefix("team", "run-a")}.>`);
    nc.subscribe(">");
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    const text = errors.map((e) => e.message).join("\n");
    expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.toolcall\.team\.run-a"/);
    expect(text).toMatch(/Permissions Violation for Subscription to "_INBOX_gavel\.team\.run-a\.>"/);
    expect(text).toMatch(/Permissions Violation for Subscription to ">"/);
  });

  it("gives gavel's own user JetStream in the account (the event stream works in JWT mode)", async () => {
    const stream = await EventStream.open(gate);
    const seq = await stream.publish(EventStream.event({ namespace: "team", root: "run-a", execution: "run-a", type: "execution.phase", data: { phase: "Running" } }));
    expect(seq).toBeGreaterThan(0);
    const { nc, errors } = await asWorker("run-e");
    // A worker cannot reach the JetStream API at all.
    await expect(nc.request("$JS.API.STREAM.INFO.GAVEL_EVENTS", "", { timeout: 1000 })).rejects.toThrow();
    await nc.flush();
    expect(errors.map((e) => e.message).join("\n")).toMatch(/Permissions Violation for Publish to "\$JS\.API\.STREAM\.INFO\.GAVEL_EVENTS"/);
  });
});
