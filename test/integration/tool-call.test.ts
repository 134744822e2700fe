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
import {
  DECISION_STREAM,
  decisionSubject,
  LOCAL_RUN,
  ToolCallService,
  type Decide,
  type DecisionRecord,
  type ToolCallRecord,
  type ToolCallServiceOptions,
} from "../../src/gate/tool-call.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { eventually as eventuallyWithin, sleep, type Answer } from "../harness/eventually.js";

const enc = new TextEncoder();

function proposal(
  execution: string,
  toolCallId: string,
  tool = "fs.read",
  args: ToolCallProposal["args"] = { path: "/workspace/a" },
): ToolCallProposal {
  return { namespace: "team", execution, iteration: 1, step: 1, toolCallId, tool, args, intent: "test" };
}

function allow(p: ToolCallProposal): ToolCallDecision {
  return {
    toolCallId: p.toolCallId,
    allowed: true,
    blocked_by: "none",
    reason: "ok",
    guard: { approved: true },
    skippedJudges: true,
    judges: [],
    latencyMs: 0.1,
  };
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

/** These waits are on local NATS round trips: poll often, give up soon. */
const eventually = <T extends Answer>(probe: () => T | undefined | Promise<T | undefined>) =>
  eventuallyWithin(probe, { timeoutMs: 5000, everyMs: 25 });

describe("tool calls over NATS (real nats-server, JWT mode)", () => {
  let server: NatsServer;
  let trust: NatsTrust;
  const conns: NatsConnection[] = [];
  const services: ToolCallService[] = [];

  async function asGate(): Promise<NatsConnection> {
    const nc = await connect({
      servers: server.url,
      authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)),
    });
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

  async function startService(decide: Decide, options: Partial<ToolCallServiceOptions> = {}): Promise<ToolCallService> {
    const s = await ToolCallService.start(await asGate(), { decide, ...options });
    services.push(s);
    return s;
  }

  async function record(key: string): Promise<ToolCallRecord> {
    const jsm = await jetstreamManager(conns[0] as NatsConnection);
    const m = await jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: key });
    if (m === null) throw new Error(`no record for ${key}`);
    return m.json<ToolCallRecord>();
  }

  async function stored(key: string): Promise<DecisionRecord> {
    const r = await record(key);
    if (r.kind !== "decision") throw new Error(`${key} is ${r.kind}, not decided yet`);
    return r;
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
    const service = await startService(rules);
    const { nc } = await asWorker("rt");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 1000 });
    const ok = await client.propose(proposal("rt", "call-1", "fs.read", { path: "/workspace/a" }));
    const no = await client.propose(proposal("rt", "call-2", "cmd.run", { command: "rm -rf /" }));
    expect(ok).toMatchObject({ toolCallId: "call-1", allowed: true, blocked_by: "none" });
    expect(no).toMatchObject({ toolCallId: "call-2", allowed: false, blocked_by: "guard", reason: "destructive_pattern: rm" });
    expect(service.stats.decides).toBe(2);
    const rec = await eventually(() => stored(decisionSubject({ namespace: "team", execution: "rt", run: LOCAL_RUN }, "call-2")));
    expect(rec.decision).toEqual(no);
    // The stored record holds a hash of the call, never its argument values.
    expect(JSON.stringify(rec)).not.toContain("rm -rf");
    await service.stop();
  });

  it("a slow decide (a judge that times out): the worker re-sends, gets ONE decision, the judge runs once", async () => {
    let calls = 0;
    const service = await startService((p) => ({
      judged: async () => {
        calls++;
        await sleep(1500); // the judge's deadline passes
        return {
          ...deny(p, "judge timed out"),
          blocked_by: "judge",
          guard: { approved: true },
          judges: [{ judge: "security-judge", child: "slow-tj-1", passed: false, rejection: "timed_out" }],
        };
      },
    }));
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

  it("the gate dies holding a claim while judging: another gate takes the stale claim over, one decision, judged once there", async () => {
    const gateA = await asGate();
    let judgedA = 0;
    const crashed = await ToolCallService.start(gateA, {
      gateId: "gate-a",
      claimLeaseMs: 900,
      decide: () => ({
        judged: () => {
          judgedA++;
          return new Promise<never>(() => undefined); // never answers: the gate dies first
        },
      }),
    });
    const { nc } = await asWorker("crash");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 200, backoffInitialMs: 50, backoffMaxMs: 200 });
    const waiting = client.propose(proposal("crash", "call-c", "fs.write", { path: "/workspace/y" }));
    await eventually(() => {
      expect(judgedA).toBe(1);
      return true;
    });
    expect(await record(decisionSubject({ namespace: "team", execution: "crash", run: LOCAL_RUN }, "call-c"))).toMatchObject({
      kind: "claim",
      gate: "gate-a",
    });
    await gateA.close(); // the crash: no reply, the claim stays, nobody renews it
    let judgedB = 0;
    const b = await startService(
      (p) => ({
        judged: async () => {
          judgedB++;
          await sleep(400); // long enough for more re-sends to join this decide
          return allow(p);
        },
      }),
      { gateId: "gate-b", claimLeaseMs: 900 },
    );
    const d = await waiting;
    expect(d).toMatchObject({ toolCallId: "call-c", allowed: true });
    expect(crashed.stats.decides).toBe(1);
    expect([judgedA, judgedB]).toEqual([1, 1]);
    expect(b.stats.takeovers).toBe(1);
    expect(
      (await eventually(() => stored(decisionSubject({ namespace: "team", execution: "crash", run: LOCAL_RUN }, "call-c")))).decision,
    ).toEqual(d);
    await b.stop();
  });

  it("two gates receive every send while one is judging: the other waits on its claim; one judge run, one stored decision", async () => {
    let judged = 0;
    const slow: Decide = (p) => ({
      judged: async () => {
        judged++;
        await sleep(700);
        return allow(p);
      },
    });
    // Different queue groups: each gate gets its own copy of every send, the worst case of a re-send meeting another replica.
    const a = await startService(slow, { queue: "a", gateId: "a" });
    const b = await startService(slow, { queue: "b", gateId: "b" });
    const { nc } = await asWorker("twins");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 150, backoffInitialMs: 20, backoffMaxMs: 50 });
    const d = await client.propose(proposal("twins", "call-t", "fs.write", { path: "/workspace/t" }));
    expect(d.allowed).toBe(true);
    expect(judged).toBe(1);
    expect(a.stats.stored + b.stats.stored).toBe(1);
    expect(a.stats.waitedOnClaim + b.stats.waitedOnClaim).toBeGreaterThanOrEqual(1);
    expect((await stored(decisionSubject({ namespace: "team", execution: "twins", run: LOCAL_RUN }, "call-t"))).decision).toEqual(d);
    // Guard-only calls too: each gate answers at once (or from the other's record when it is
    // mirrored first), and the store keeps exactly one decision.
    const fast = await client.propose(proposal("twins", "call-f", "fs.read", { path: "/workspace/f" }));
    await a.stop();
    await b.stop();
    expect(a.stats.stored + b.stats.stored).toBe(2);
    expect(a.stats.lostRaces + b.stats.lostRaces + a.stats.fromDecision + b.stats.fromDecision).toBeGreaterThanOrEqual(1);
    expect((await stored(decisionSubject({ namespace: "team", execution: "twins", run: LOCAL_RUN }, "call-f"))).decision).toEqual(fast);
  });

  it("a decision made before a restart answers the re-sent proposal without deciding again", async () => {
    const gateA = await asGate();
    const a = await ToolCallService.start(gateA, { decide: (p) => Promise.resolve(deny(p, "first gate says no")) });
    const { nc } = await asWorker("restart");
    const p = proposal("restart", "call-r", "cmd.run", { command: "ls" });
    // The reply is lost: it goes to an inbox nobody listens on.
    nc.publish(toolCallSubject("team", "restart"), JSON.stringify(p), { reply: `${inboxPrefix("team", "restart")}.lost` });
    await eventually(() => stored(decisionSubject({ namespace: "team", execution: "restart", run: LOCAL_RUN }, "call-r")));
    expect(a.stats.decides).toBe(1);
    await a.stop();
    await gateA.close();

    let callsB = 0;
    const seen: number[] = [];
    const b = await startService((q, ctx) => {
      callsB++;
      seen.push(...ctx.iteration.calls(1, q.step).map((c) => c.step));
      return Promise.resolve({ ...allow(q), reason: `violations ${ctx.iteration.violations.join(",")}` });
    });
    const d = await new ToolCallClient(nc, { attemptTimeoutMs: 1000 }).propose(p);
    expect(d).toMatchObject({ allowed: false, reason: "first gate says no" });
    expect(callsB).toBe(0);
    expect(b.stats.fromDecision).toBe(1);
    // Reusing the id for a different call is refused, naming the field.
    const reuse = new ToolCallClient(nc, { attemptTimeoutMs: 1000 }).propose({ ...p, args: { command: "rm -rf /" } });
    await expect(reuse).rejects.toMatchObject({ code: "conflict", field: "/toolCallId" });
    expect(callsB).toBe(0);
    // The next step of the iteration is decided knowing the replayed one (its history and violations).
    const next = await new ToolCallClient(nc, { attemptTimeoutMs: 1000 }).propose({ ...p, toolCallId: "call-r2", step: 2 });
    expect(next.reason).toBe("violations cmd.run");
    expect(seen).toEqual([1]);
    await b.stop();
  });

  it("an oversized proposal is denied with its size, once; a hostile re-use of its id is a conflict", async () => {
    let calls = 0;
    const service = await startService(
      (p) => {
        calls++;
        return allow(p);
      },
      { maxProposalBytes: 4096 },
    );
    const { nc } = await asWorker("big");
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 1000 });
    const big = proposal("big", "call-big", "fs.write", { path: "/workspace/big", content: "x".repeat(8000) });
    const d = await client.propose(big);
    expect(d).toMatchObject({ allowed: false, blocked_by: "guard" });
    expect(d.reason).toMatch(/^argument_too_large: the proposal is \d+ bytes; the gate decides proposals of at most 4096 bytes$/);
    expect(calls).toBe(0);
    expect(await client.propose(big)).toEqual(d);
    await expect(client.propose({ ...big, args: { path: "/workspace/big", content: "small" } })).rejects.toMatchObject({
      code: "conflict",
    });
    await service.stop();
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
    // 40 KB of nested arrays: refused by name before the gate walks them (its stack would overflow and the call go unanswered).
    const deep = JSON.stringify({ ...proposal("bad", "call-b4"), args: {} }).replace(
      '"args":{}',
      `"args":{"a":${"[".repeat(20_000)}${"]".repeat(20_000)}}`,
    );
    expect(await ask(deep)).toMatchObject({ toolCallId: "call-b4", error: { code: "invalid_proposal", field: "/args" } });
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
      await expect(
        new ToolCallClient(nc, { totalTimeoutMs: 600, attemptTimeoutMs: 200 }).propose(proposal("victim", "call-i1")),
      ).rejects.toBeInstanceOf(ToolCallError);
      await nc.flush();
      await eventually(() => {
        expect(errors.join("\n")).toMatch(/Permissions Violation for Publish to "gavel\.toolcall\.team\.victim"/);
        return true;
      });
      // Its own subject with another execution in the payload: refused by the gate.
      const r = decodeReply(
        (await nc.request(toolCallSubject("team", "mallory"), JSON.stringify(proposal("victim", "call-i2")), { timeout: 2000 })).data,
      );
      expect(r.ok && r.value.kind === "error" && r.value.reply.error).toMatchObject({ code: "forbidden", field: "/execution" });
      expect(service.stats.decides).toBe(0);
      await service.stop();
    });

    it("cannot make the gate publish anywhere: a proposal whose reply subject is outside its inbox is not answered", async () => {
      const service = await startService(rules);
      const jsm = await jetstreamManager(conns[0] as NatsConnection);
      await jsm.streams.add({ name: "BAIT", subjects: ["bait.>"] });
      const { nc } = await asWorker("trudy");
      // Reply subjects are not checked against the sender's permissions, but the gate answers
      // with its own connection: a JetStream API and another stream's subject as the reply.
      for (const [id, reply] of [
        ["call-r1", "$JS.API.STREAM.DELETE.BAIT"],
        ["call-r2", "bait.forged"],
        ["call-r3", `${inboxPrefix("team", "victim")}.x`],
      ] as const) {
        nc.publish(toolCallSubject("team", "trudy"), JSON.stringify(proposal("trudy", id)), { reply });
      }
      // Its own inbox is answered, after the three above were read.
      expect((await new ToolCallClient(nc).propose(proposal("trudy", "call-r4"))).allowed).toBe(true);
      await eventually(() => (service.stats.unanswerable === 3 ? true : undefined));
      await sleep(200);
      expect((await jsm.streams.info("BAIT")).state.messages).toBe(0);
      expect(service.stats.decides).toBe(1);
      await jsm.streams.delete("BAIT");
      await service.stop();
    });

    it("cannot publish a decision, answer proposals, or read decisions and other executions' subjects", async () => {
      const { nc, errors } = await asWorker("eve");
      nc.publish(`${inboxPrefix("team", "victim")}.abc`, JSON.stringify(allow(proposal("victim", "x"))));
      nc.publish(
        decisionSubject({ namespace: "team", execution: "eve", run: LOCAL_RUN }, "forged"),
        JSON.stringify({ fingerprint: "", decision: allow(proposal("eve", "forged")) }),
      );
      nc.subscribe("gavel.toolcall.*.*", { queue: "gavel-gate" });
      nc.subscribe(toolCallSubject("team", "victim"));
      nc.subscribe("gavel.decisions.>");
      nc.subscribe(`${inboxPrefix("team", "victim")}.>`);
      await nc.flush();
      await eventually(() => {
        const text = errors.join("\n");
        expect(text).toMatch(/Permissions Violation for Publish to "_INBOX_gavel\.team\.victim\.abc"/);
        expect(text).toMatch(/Permissions Violation for Publish to "gavel\.decisions\.team\.eve\.local\.forged"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.toolcall\.\*\.\*"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.toolcall\.team\.victim"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "gavel\.decisions\.>"/);
        expect(text).toMatch(/Permissions Violation for Subscription to "_INBOX_gavel\.team\.victim\.>"/);
        return true;
      });
      // The forged decision never reached the stream.
      const jsm = await jetstreamManager(conns[0] as NatsConnection);
      await expect(
        jsm.streams.getMessage(DECISION_STREAM, {
          last_by_subj: decisionSubject({ namespace: "team", execution: "eve", run: LOCAL_RUN }, "forged"),
        }),
      ).resolves.toBeNull();
    });
  });
});
