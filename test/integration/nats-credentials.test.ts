// Per-execution NATS credentials on the real nats-server (operator/JWT mode, full resolver):
// a worker can propose only as its own execution, receive only its own replies, and cannot
// publish a decision to another execution or read another execution's subjects; an expired
// credential is refused, and a revocation pushed to the running server closes the worker's
// connection and refuses it from then on, also after the server restarts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AccountRevoker } from "../../src/transport/account-revocations.js";
import {
  createTrust,
  decodeJwt,
  issueControllerCredentials,
  issueSystemCredentials,
  issueWorkerCredentials,
  serverJwts,
  serverAuthConfig,
  type NatsTrust,
  type ServerJwts,
} from "../../src/transport/credentials.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { inboxPrefix, toolCallSubject, TOOL_CALL_WILDCARD } from "../../src/transport/subjects.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const enc = new TextEncoder();

describe("per-execution NATS credentials (real nats-server, JWT mode)", () => {
  let server: NatsServer;
  let trust: NatsTrust;
  let jwts: ServerJwts;
  let gate: NatsConnection;
  let resolverDir: string;
  const conns: NatsConnection[] = [];

  async function asWorker(
    execution: string,
    ns = "team",
    opts: { expiresAt?: number; uid?: string } = {},
  ): Promise<{ nc: NatsConnection; errors: Error[] }> {
    const creds = issueWorkerCredentials(trust, ns, execution, opts);
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
    jwts = serverJwts(trust);
    // The resolver's store outlives a server restart, as the chart's volume does.
    resolverDir = await mkdtemp(join(tmpdir(), "gavel-resolver-"));
    server = await startNats({ extraConfig: serverAuthConfig(jwts, resolverDir) });
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
    if (resolverDir) await rm(resolverDir, { recursive: true, force: true });
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
    const seq = await stream.publish(
      EventStream.event({ namespace: "team", root: "run-a", execution: "run-a", type: "execution.phase", data: { phase: "Running" } }),
    );
    expect(seq).toBeGreaterThan(0);
    const { nc, errors } = await asWorker("run-e");
    // A worker cannot reach the JetStream API at all.
    await expect(nc.request("$JS.API.STREAM.INFO.GAVEL_EVENTS", "", { timeout: 1000 })).rejects.toThrow();
    await nc.flush();
    expect(errors.map((e) => e.message).join("\n")).toMatch(/Permissions Violation for Publish to "\$JS\.API\.STREAM\.INFO\.GAVEL_EVENTS"/);
  });

  it("refuses a worker credential past its expiry", async () => {
    const creds = issueWorkerCredentials(trust, "team", "run-old", { expiresAt: Math.floor(Date.now() / 1000) - 1 });
    await expect(
      connect({ servers: server.url, reconnect: false, authenticator: credsAuthenticator(enc.encode(creds.creds)) }),
    ).rejects.toThrow(/expired|Authorization/i);
  });

  it("revokes a worker on the running server: its connection is closed and it is refused from then on, also after a restart", async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 3600;
    const uid = "5c3a1f4e-0000-4000-8000-000000000001";
    const uid2 = "5c3a1f4e-0000-4000-8000-000000000002";
    const creds = issueWorkerCredentials(trust, "team", "run-r", { uid, expiresAt });
    // No reconnect: the close the server makes is the moment the revocation took effect.
    const nc = await connect({
      servers: server.url,
      reconnect: false,
      inboxPrefix: inboxPrefix("team", "run-r"),
      authenticator: credsAuthenticator(enc.encode(creds.creds)),
    });
    conns.push(nc);
    const other = await asWorker("run-s");
    await nc.request(toolCallSubject("team", "run-r"), "{}", { timeout: 2000 });
    const closed = nc.closed();
    const revoker = new AccountRevoker({
      connect: () => connect({ servers: server.url, authenticator: credsAuthenticator(enc.encode(issueSystemCredentials(trust).creds)) }),
      account: decodeJwt(jwts.account).sub,
      operatorSigningSeed: trust.operatorSigningSeed,
    });
    const second = issueWorkerCredentials(trust, "team", "run-r2", { uid: uid2, expiresAt }).publicKey;
    const t0 = performance.now();
    // Two revocations asked for at once are both held by the account JWT the server takes.
    await Promise.all([revoker.revoke({ [creds.publicKey]: expiresAt }), revoker.revoke({ [second]: expiresAt })]);
    await closed;
    console.log(`revocation: pushed and the worker's connection closed in ${(performance.now() - t0).toFixed(1)} ms`);
    await revoker.close();
    await expect(asWorker("run-r2", "team", { uid: uid2, expiresAt })).rejects.toThrow(/revoked|Authorization/i);
    // A new connection with the same credential (minted again for the same uid: same user) is refused.
    await expect(asWorker("run-r", "team", { uid, expiresAt })).rejects.toThrow(/revoked|Authorization/i);
    // Another execution's worker is untouched.
    const r = await other.nc.request(toolCallSubject("team", "run-s"), "{}", { timeout: 2000 });
    expect(r.string()).toContain("run-s");

    // The server keeps the pushed account JWT in its resolver store: a restart with the same
    // (older) preload does not bring the user back.
    await gate.close();
    await server.stop();
    server = await startNats({ extraConfig: serverAuthConfig(jwts, resolverDir) });
    gate = await connect({ servers: server.url, authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)) });
    await expect(asWorker("run-r", "team", { uid, expiresAt })).rejects.toThrow(/revoked|Authorization/i);
    const fresh = await asWorker("run-t");
    expect(fresh.nc.isClosed()).toBe(false);
  });
});
