// Tool calls over the real nats-server in JWT mode: the gate's service answers each
// proposal exactly once per toolCallId, through slow decides, re-sends and restarts, and a
// worker's credentials keep it inside its own execution.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { ToolCallDecision, ToolCallProposal } from "../../src/api/protocol.js";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { decodeReply } from "../../src/transport/codec.js";
import { inboxPrefix, toolCallSubject } from "../../src/transport/subjects.js";
import { ToolCallClient, ToolCallError } from "../../src/transport/tool-call-client.js";
import { ToolCallService, type Decide } from "../../src/transport/tool-call-service.js";
import { DECISION_STREAM, decisionSubject, type StoredDecision } from "../../src/transport/tool-call-store.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const enc = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function proposal(execution: string, toolCallId: string, tool = "fs.read", args: ToolCallProposal["args"] = { path: "/workspace/a" }): ToolCallProposal {
  return { namespace: "team", execution, iteration: 1, step: 1, toolCallId, tool, args, intent: "test" };
}

function allow(p: ToolCallProposal): ToolCallDecision {
  return { toolCallId: p.toolCallId, allowed: true, blocked_by: "none", reason: "ok", guard: { approved: true }, skippedJudges: true, judges: [], latencyMs: 0.1 };
}

function deny(p: ToolCallProposal, reason: string): ToolCallDecision {
  return {
    toolCallId: p.toolCallId,
    allowed: false,
    blocked_by: "guard",
    reason,
    guard: { approved: false, check: "destructive_pattern", reason },
    skippedJudges: false,
    judges: [],
    latencyMs: 0.1,
  };
}

// A deterministic decide: shell commands containing "rm" are denied.
const rules: Decide = (p) =>
  Promise.resolve(p.tool === "cmd.run" && JSON.stringify(p.args).includes("rm") ? deny(p, "destructive_pattern: rm") : allow(p));

async function eventually<T>(f: () => T | Promise<T>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > end) throw err;
      await sleep(25);
    }
  }
}

describe("tool calls over NATS (real nats-server, JWT mode)", () => {
  let server: NatsServer;
  let trust: NatsTrust;
  const conns: NatsConnection[] = [];
  const services: ToolCallService[] = [];

  async function asGate(): Promise<NatsConnection> {
    const nc = await connect({ servers: server.url, authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)) });
    conns.push(nc);
    return nc;
  }

  async function asWorker(execution: string): Promise<{ nc: NatsConnection; errors: string[] }> {
    const creds = issueWorkerCredentials(trust, "team", execution);
    const nc = await connect({
      servers: server.url,
      authenticator: credsAuthenticator(enc.encode(creds.creds)),
      inboxPrefix: inboxPrefix("team", execution),
    });
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error") errors.push(s.error.message);
    })();
    conns.push(nc);
    return { nc, errors };
  }

  async function startService(decide: Decide, nc?: NatsConnection): Promise<ToolCallService> {
    const s = await ToolCallService.start(nc ?? (await asGate()), { decide });
    services.push(s);
    return s;
  }

  async function stored(key: string): Promise<StoredDecision> {
    const jsm = await jetstreamManager(conns[0] as NatsConnection);
    const m = await jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: key });
    if (m === null) throw new Error(`no stored decision for ${key}`);
    return m.json<StoredDecision>();
  }

  beforeAll(async () => {
    trust = createTrust();
    server = await startNats({ extraConfig: serverConfig(trust).config });
    await asGate();
  });
  afterAll(async () => {
    for (const s of services) await Promise.race([s.stop(), sleep(1000)]).catch(() => undefined);
    for (const c of conns) await c.close().catch(() => undefined);
    await server?.stop();
  });

  it("round-trips allowed and denied decisions, one decide per call, each stored durably", async () => {
    const service = await ToolCallService.start(await asGate(), { decide: rules, store: { acknowledged: true } });
    services.push(service);
    const { nc } = await asWorker("rt");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 1000 });
    const ok = await client.propose(proposal("rt", "call-1", "fs.read", { path: "/workspace/a" }));
    const no = await client.propose(proposal("rt", "call-2", "cmd.run", { command: "rm -rf /" }));
    expect(ok).toMatchObject({ toolCallId: "call-1", allowed: true, blocked_by: "none" });
    expect(no).toMatchObject({ toolCallId: "call-2", allowed: false, blocked_by: "guard", reason: "destructive_pattern: rm" });
    expect(service.stats.decides).toBe(2);
    const rec = await eventually(() => stored(decisionSubject("team", "rt", "call-2")));
    expect(rec.decision).toEqual(no);
    // The stored record holds a hash of the call, never its argument values.
    expect(JSON.stringify(rec)).not.toContain("rm -rf");
    await service.stop();
  });

  it("a slow decide (a judge that times out): the worker re-sends, gets ONE decision, decide runs once", async () => {
    let calls = 0;
    const service = await startService(async (p) => {
      calls++;
      await sleep(1500); // the judge's deadline passes
      return { ...deny(p, "judge timed out"), blocked_by: "judge", guard: { approved: true }, judges: [{ judge: "security-judge", child: "slow-tj-1", passed: false, rejection: "timed_out" }] };
    });
    const { nc } = await asWorker("slow");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 200, backoffInitialMs: 50, backoffMaxMs: 100 });
    const d = await client.propose(proposal("slow", "call-slow", "fs.write", { path: "/workspace/x" }));
    expect(d).toMatchObject({ allowed: false, blocked_by: "judge", judges: [{ rejection: "timed_out" }] });
    expect(client.sends.get("call-slow")).toBeGreaterThanOrEqual(3);
    expect(calls).toBe(1);
    expect(service.stats.decides).toBe(1);
    expect(service.stats.fromInFlight).toBeGreaterThanOrEqual(2);
    // A later re-send of the same call is answered from the decision, not decided again.
    expect(await client.propose(proposal("slow", "call-slow", "fs.write", { path: "/workspace/x" }))).toEqual(d);
    expect(calls).toBe(1);
    await service.stop();
  });

  it("the gate crashes during a decide and restarts while the worker waits: one decision, one decide on the new gate", async () => {
    const gateA = await asGate();
    let callsA = 0;
    const crashed = await ToolCallService.start(gateA, {
      decide: () => {
        callsA++;
        return new Promise<never>(() => undefined); // never answers: the gate dies first
      },
    });
    const { nc } = await asWorker("crash");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 200, backoffInitialMs: 50, backoffMaxMs: 200 });
    const waiting = client.propose(proposal("crash", "call-c", "fs.write", { path: "/workspace/y" }));
    await eventually(() => expect(crashed.stats.decides).toBe(1));
    await gateA.close(); // the crash: no reply, nothing stored
    await sleep(300); // the worker keeps re-sending into the void
    let callsB = 0;
    const b = await startService(async (p) => {
      callsB++;
      await sleep(400); // long enough for more re-sends to join this decide
      return allow(p);
    });
    const d = await waiting;
    expect(d).toMatchObject({ toolCallId: "call-c", allowed: true });
    expect(callsA).toBe(1);
    expect(callsB).toBe(1);
    expect(b.stats.decides).toBe(1);
    expect((await eventually(() => stored(decisionSubject("team", "crash", "call-c")))).decision).toEqual(d);
    await b.stop();
  });

  it("a decision made before a restart answers the re-sent proposal without deciding again", async () => {
    const gateA = await asGate();
    const a = await ToolCallService.start(gateA, { decide: (p) => Promise.resolve(deny(p, "first gate says no")) });
    const { nc } = await asWorker("restart");
    const p = proposal("restart", "call-r", "cmd.run", { command: "ls" });
    // The reply is lost: it goes to an inbox nobody listens on.
    nc.publish(toolCallSubject("team", "restart"), JSON.stringify(p), { reply: `${inboxPrefix("team", "restart")}.lost` });
    await eventually(() => stored(decisionSubject("team", "restart", "call-r")));
    expect(a.stats.decides).toBe(1);
    await a.stop();
    await gateA.close();

    let callsB = 0;
    const b = await startService((q) => {
      callsB++;
      return Promise.resolve(allow(q));
    });
    const d = await new ToolCallClient(nc, { attemptTimeoutMs: 1000 }).propose(p);
    expect(d).toMatchObject({ allowed: false, reason: "first gate says no" });
    expect(callsB).toBe(0);
    expect(b.stats.fromDecision).toBe(1);
    // Reusing the id for a different call is refused, naming the field.
    const reuse = new ToolCallClient(nc, { attemptTimeoutMs: 1000 }).propose({ ...p, args: { command: "rm -rf /" } });
    await expect(reuse).rejects.toMatchObject({ code: "conflict", field: "/toolCallId" });
    expect(callsB).toBe(0);
    await b.stop();
  });

  it("a second gate following the stream live answers a re-send decided by the first", async () => {
    let calls = 0;
    const counting: Decide = (p) => {
      calls++;
      return Promise.resolve(allow(p));
    };
    const options = { decide: counting, queue: "replicas", store: { followLive: true } };
    const replicas = [await ToolCallService.start(await asGate(), options), await ToolCallService.start(await asGate(), options)];
    services.push(...replicas);
    const { nc } = await asWorker("replicas");
    const p = proposal("replicas", "call-rep");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 1000 });
    const first = await client.propose(p);
    // Stop the replica that decided: only the other one is left to answer the re-send,
    // and it started before the decision existed, so it knows it only by following live.
    const decided = replicas.find((r) => r.stats.decides === 1);
    const other = replicas.find((r) => r !== decided);
    if (decided === undefined || other === undefined) throw new Error("expected exactly one replica to decide");
    await eventually(() => stored(decisionSubject("team", "replicas", "call-rep")));
    await decided.stop();
    await sleep(100); // the live consumer delivers the stored decision
    const again = await client.propose(p);
    expect(again).toEqual(first);
    expect(calls).toBe(1);
    expect(other.stats.fromDecision).toBe(1);
    await other.stop();
  });

  it("answers malformed proposals with an error naming the field, and keeps serving", async () => {
    const service = await startService(rules);
    const { nc } = await asWorker("bad");
    const subject = toolCallSubject("team", "bad");
    const ask = async (body: string) => {
      const r = decodeReply((await nc.request(subject, body, { timeout: 2000 })).data);
      if (!r.ok || r.value.kind !== "error") throw new Error(`expected an error reply, got ${JSON.stringify(r)}`);
      return r.value.reply;
    };
    expect((await ask("{oops")).error).toMatchObject({ code: "invalid_proposal", field: "/" });
    const noArgs = { ...proposal("bad", "call-b1"), args: undefined };
    expect(await ask(JSON.stringify(noArgs))).toMatchObject({ toolCallId: "call-b1", error: { code: "invalid_proposal", field: "/args" } });
    expect((await ask(JSON.stringify({ ...proposal("bad", "call-b2"), step: "one" }))).error.field).toBe("/step");
    expect((await ask(JSON.stringify({ ...proposal("bad", "call-b3"), extra: 1 }))).error.field).toBe("/extra");
    // The client refuses to send an invalid proposal at all.
    await expect(new ToolCallClient(nc).propose({ ...proposal("bad", "has space") })).rejects.toThrow(/\/toolCallId/);
    expect(service.stats.decides).toBe(0);
    const d = await new ToolCallClient(nc).propose(proposal("bad", "call-ok"));
    expect(d.allowed).toBe(true);
    await service.stop();
  });

  it("a decide that throws or returns garbage denies the call (fail closed), still once", async () => {
    let calls = 0;
    const service = await startService((p) => {
      calls++;
      if (p.toolCallId === "call-throw") return Promise.reject(new Error("judge store down"));
      return Promise.resolve({ ...allow(p), blocked_by: "judge" } as ToolCallDecision);
    });
    const { nc } = await asWorker("failing");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 1000 });
    const thrown = await client.propose(proposal("failing", "call-throw"));
    expect(thrown).toMatchObject({ allowed: false, reason: "gate_error: judge store down" });
    const garbage = await client.propose(proposal("failing", "call-garbage"));
    expect(garbage.allowed).toBe(false);
    expect(garbage.reason).toMatch(/gate_error: .*blocked_by/);
    await client.propose(proposal("failing", "call-throw"));
    expect(calls).toBe(2);
    await service.stop();
  });

  describe("a worker's credentials", () => {
    it("cannot impersonate another execution, even on its own subject", async () => {
      const service = await startService(rules);
      const { nc, errors } = await asWorker("mallory");
      // Another execution's subject: refused by the server.
      await expect(new ToolCallClient(nc, { totalTimeoutMs: 600, attemptTimeoutMs: 200 }).propose(proposal("victim", "call-i1"))).rejects.toBeInstanceOf(ToolCallError);
      await nc.flush();
      await eventually(() => expect(errors.join("\n")).toMatch(/Permissions Violation for Publish to "gavel\.toolcall\.team\.victim"/));
      // Its own subject with another execution in the payload: refused by the gate.
      const r = decodeReply((await nc.request(toolCallSubject("team", "mallory"), JSON.stringify(proposal("victim", "call-i2")), { timeout: 2000 })).data);
      expect(r.ok && r.value.kind === "error" && r.value.reply.error).toMatchObject({ code: "forbidden", field: "/execution" });
      expect(service.stats.decides).toBe(0);
      await service.stop();
    });

    it("cannot publish a decision, answer proposals, or read decisions and other executions' subjects", async () => {
      const { nc, errors } = await asWorker("eve");
      nc.publish(`${inboxPrefix("team", "victim")}.abc`, JSON.stringify(allow(proposal("victim", "x"))));
      nc.publish(decisionSubject("team", "eve", "forged"), JSON.stringify({ fingerprint: "", decision: allow(proposal("eve", "forged")) }));
      nc.subscribe("gavel.toolcall.*.*", { queue: "gavel-gate" });
      nc.subscribe(toolCallSubject("team", "victim"));
      nc.subscribe("gavel.decisions.>");
      nc.subscribe(`${inboxPrefix("team", "victim")}.>`);
      await nc.flush();
      await eventually(() => {
        const text = errors.join("\n");
        expect(text).toMatch(/Permissions Violation for Publish to "_INBOX_gavel\.team\.victim\.abc"/);
        expect(text).toMatch(/Permissions Violation for Publish to "gavel\.decisions\.team\.eve\.forged"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.toolcall\.\*\.\*"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.toolcall\.team\.victim"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.decisions\.>"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "_INBOX_gavel\.team\.victim\.>"/);
      });
      // The forged decision never reached the stream.
      const jsm = await jetstreamManager(conns[0] as NatsConnection);
      await expect(jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: decisionSubject("team", "eve", "forged") })).resolves.toBeNull();
    });
  });
});
