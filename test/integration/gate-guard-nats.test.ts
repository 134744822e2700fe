// Each of the guard's seven checks, passing and failing, for proposals a worker sends over
// the real nats-server (JWT mode, its own credentials) to the real gate behind the
// tool-call service; and a policy reload between two calls without restarting anything.
import { createHash, generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallProposal } from "../../src/api/protocol.js";
import type { Agent, GuardPolicySpec, JsonObject } from "../../src/api/types.js";
import { decisionEvent } from "../../src/gate/audit.js";
import { createGate } from "../../src/gate/gate.js";
import { PolicyStore } from "../../src/gate/guard/policy-store.js";
import { signRegistration } from "../../src/gate/guard/signature.js";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { inboxPrefix } from "../../src/transport/subjects.js";
import { ToolCallClient } from "../../src/transport/tool-call-client.js";
import { ToolCallService } from "../../src/gate/tool-call.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const enc = new TextEncoder();
const sha = (s: string): string => createHash("sha256").update(s).digest("hex");
const pem = (k: { export(o: { type: "pkcs8" | "spki"; format: "pem" }): string | Buffer }, type: "pkcs8" | "spki"): string =>
  k.export({ type, format: "pem" }).toString();

const NS = "team";
const EXECUTION = "guarded";

const agent: Pick<Agent, "spec"> = {
  spec: {
    tools: ["fs.read", "fs.list", "fs.write", "fs.delete", "cmd.run", "db.query", "db.tampered", "db.unsigned", "db.admin", "net.fetch"],
    security: { capabilities: ["read"] },
  },
};

// Tool registrations, signed by a trusted key (db.unsigned is signed by a key the policy does
// not trust), and the hashes of the code the worker runs, which it sends with each proposal.
const trusted = generateKeyPairSync("ed25519");
const untrusted = generateKeyPairSync("ed25519");
const queryHash = sha("db.query v1");
const unsignedHash = sha("db.unsigned v1");
const tamperedHash = sha("db.tampered v1");
const liveHashes = new Map([
  ["db.query", queryHash],
  ["db.unsigned", unsignedHash],
  ["db.tampered", sha("db.tampered v1, patched by someone")],
]);

const policy: GuardPolicySpec = {
  revoked_tools: [{ tool: "net.fetch", reason: "exfiltration risk" }],
  tool_registry: [
    { tool: "db.query", sha256: queryHash, signature: signRegistration(pem(trusted.privateKey, "pkcs8"), "db.query", queryHash) },
    {
      tool: "db.tampered",
      sha256: tamperedHash,
      signature: signRegistration(pem(trusted.privateKey, "pkcs8"), "db.tampered", tamperedHash),
    },
    {
      tool: "db.unsigned",
      sha256: unsignedHash,
      signature: signRegistration(pem(untrusted.privateKey, "pkcs8"), "db.unsigned", unsignedHash),
    },
  ],
  trusted_keys: [{ name: "ops", public_key: pem(trusted.publicKey, "spki") }],
  required_capabilities: { "db.admin": "db:admin" },
  sequence_contracts: [{ name: "read_before_delete", requires_prior: "fs.read", triggers_for: "fs.delete", within_steps: 3 }],
  adaptive_rules: [
    { name: "watch_db", match_field: "tool", pattern: "^db\\.", action: "flag", reason: "measure db use" },
    { name: "no_prod_host", match_field: "args", pattern: "prod-db\\.internal", action: "deny", reason: "no production database" },
    // Guardian's own rule, verbatim: its lookahead runs bounded (ADR 0022).
    {
      name: "block_external_drive_writes",
      match_field: "args",
      pattern: "/Volumes/(?!MAC_MINI_1TB)",
      action: "deny",
      reason: "Writes to non-canonical external drives are blocked",
    },
  ],
};

describe("the guard's seven checks over NATS (real nats-server, JWT mode)", () => {
  let server: NatsServer;
  let trust: NatsTrust;
  let store: PolicyStore;
  let service: ToolCallService;
  let client: ToolCallClient;
  const conns: NatsConnection[] = [];
  /** The `toolcall.decision` events the gate's audit produced, by toolCallId. */
  const audited = new Map<string, Record<string, unknown>>();
  let step = 0;

  async function propose(tool: string, args: JsonObject): Promise<ToolCallDecision> {
    step++;
    const toolHash = liveHashes.get(tool);
    const p: ToolCallProposal = {
      namespace: NS,
      execution: EXECUTION,
      iteration: 1,
      step,
      toolCallId: `call-${step}`,
      tool,
      args,
      ...(toolHash !== undefined ? { toolHash } : {}),
    };
    return client.propose(p);
  }

  beforeAll(async () => {
    trust = createTrust();
    server = await startNats({ extraConfig: serverConfig(trust).config });
    const gateNc = await connect({
      servers: server.url,
      authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)),
    });
    const workerNc = await connect({
      servers: server.url,
      authenticator: credsAuthenticator(enc.encode(issueWorkerCredentials(trust, NS, EXECUTION).creds)),
      inboxPrefix: inboxPrefix(NS, EXECUTION),
    });
    conns.push(gateNc, workerNc);
    store = new PolicyStore();
    store.update([{ name: "team-policy", namespace: NS, spec: policy }]);
    const gate = createGate({
      policyStore: store,
      agent,
      judgeRunner: () => Promise.reject(new Error("no tool_validation judges are configured")),
      audit: { record: (r) => void audited.set(r.toolCallId, decisionEvent(r)) },
    });
    service = await ToolCallService.start(gateNc, { decide: (p, ctx) => gate.decide(p, ctx), onDecided: (p, d) => void gate.record(p, d) });
    client = new ToolCallClient(workerNc, { attemptTimeoutMs: 2000, totalTimeoutMs: 20_000 });
  });
  afterAll(async () => {
    await service?.stop(1000).catch(() => undefined);
    for (const c of conns) await c.close().catch(() => undefined);
    await server?.stop();
  });

  it("1. revocation: a revoked tool is denied with its reason; fs.list passes", async () => {
    expect(await propose("net.fetch", { url: "https://example.com" })).toMatchObject({
      allowed: false,
      blocked_by: "guard",
      guard: { check: "revocation" },
      reason: "tool_revoked: exfiltration risk",
    });
    expect(await propose("fs.list", { path: "/workspace" })).toMatchObject({ allowed: true, blocked_by: "none" });
  });

  it("2. hash: a tool whose live code (the hash its proposal carries) differs from its registration is denied", async () => {
    expect(await propose("db.tampered", { sql: "select 1" })).toMatchObject({
      allowed: false,
      guard: { check: "hash" },
      reason: "hash_mismatch: db.tampered",
    });
  });

  it("3. capability: a tool outside spec.tools or outside the capability scope is denied", async () => {
    expect(await propose("http.post", { url: "https://example.com" })).toMatchObject({
      allowed: false,
      guard: { check: "capability" },
      reason: "capability_boundary: missing tool:http.post",
    });
    expect(await propose("db.admin", { op: "vacuum" })).toMatchObject({
      allowed: false,
      guard: { check: "capability" },
      reason: "capability_boundary: missing db:admin",
    });
  });

  it("4. destructive patterns over nested arguments; a harmless command passes", async () => {
    const d = await propose("cmd.run", { options: { argv: ["sh", "-c", "rm  -rf  /"] } });
    expect(d).toMatchObject({ allowed: false, guard: { check: "destructive_pattern" } });
    expect(d.reason).toMatch(/^destructive_pattern: /);
    expect(await propose("fs.read", { path: "/etc/../etc/shadow" })).toMatchObject({
      allowed: false,
      guard: { check: "destructive_pattern" },
    });
    expect(await propose("cmd.run", { command: "ls /workspace" })).toMatchObject({ allowed: true });
  });

  it("5. sequence contract: a delete without a recent read is denied, after a read it passes", async () => {
    expect(await propose("fs.delete", { path: "/workspace/old.txt" })).toMatchObject({
      allowed: false,
      guard: { check: "sequence_contract" },
      reason: "sequence_contract: read_before_delete",
    });
    expect(await propose("fs.read", { path: "/workspace/old.txt" })).toMatchObject({ allowed: true });
    expect(await propose("fs.delete", { path: "/workspace/old.txt" })).toMatchObject({ allowed: true });
  });

  it("6. signature: a registration signed by an untrusted key is denied, a trusted one passes", async () => {
    expect(await propose("db.unsigned", { sql: "select 1" })).toMatchObject({
      allowed: false,
      guard: { check: "signature" },
      reason: "signature_invalid",
    });
    const ok = await propose("db.query", { host: "staging-db.internal", sql: "select 1" });
    expect(ok).toMatchObject({ allowed: true, guard: { approved: true, check: "adaptive_rule", flags: ["watch_db"] } });
    // The flag reaches the audit and the event stream's decision (the call still allowed).
    await vi.waitFor(() => expect(audited.get(ok.toolCallId)).toMatchObject({ tool: "db.query", allowed: true, flags: ["watch_db"] }));
  });

  it("7. adaptive rules: deny blocks, flag records and allows", async () => {
    expect(await propose("db.query", { host: "prod-db.internal", sql: "select 1" })).toMatchObject({
      allowed: false,
      guard: { check: "adaptive_rule", flags: ["watch_db"] },
      reason: "adaptive_rule: no_prod_host",
    });
  });

  it("7. Guardian's lookahead rule as written: other drives denied, the canonical one allowed", async () => {
    expect(await propose("fs.write", { path: "/Volumes/USB_STICK/dump.txt", content: "x" })).toMatchObject({
      allowed: false,
      guard: { check: "adaptive_rule" },
      reason: "adaptive_rule: block_external_drive_writes",
    });
    expect(await propose("fs.write", { path: "/Volumes/MAC_MINI_1TB/backup.txt", content: "x" })).toMatchObject({ allowed: true });
  });

  it("a policy update takes effect for the next call without restarting the gate or the service", async () => {
    expect(await propose("net.fetch", { url: "https://example.com" })).toMatchObject({ allowed: false, guard: { check: "revocation" } });
    store.update([{ name: "team-policy", namespace: NS, spec: { ...policy, revoked_tools: [] } }]);
    expect(await propose("net.fetch", { url: "https://example.com" })).toMatchObject({ allowed: true });
    // Every call above was decided once, by the one service.
    expect(service.stats.decides).toBe(step);
  });

  it("enforcementAction: the same rules in warn and dryrun mode let the calls through and say what they would have denied", async () => {
    store.update([
      {
        name: "team-policy",
        namespace: NS,
        spec: {
          ...policy,
          enforcementAction: "warn",
          adaptive_rules: policy.adaptive_rules?.map((r) =>
            r.name === "no_prod_host" ? { ...r, enforcementAction: "dryrun" as const } : r,
          ),
        },
      },
    ]);
    const revoked = await propose("net.fetch", { url: "https://example.com" });
    expect(revoked).toMatchObject({ allowed: true, guard: { approved: true, warnings: ["tool_revoked: exfiltration risk"] } });
    const prod = await propose("db.query", { host: "prod-db.internal", sql: "select 1" });
    expect(prod).toMatchObject({ allowed: true, guard: { flags: ["watch_db"], dryrun: ["adaptive_rule: no_prod_host"] } });
    expect(prod.guard.warnings).toBeUndefined();
    await vi.waitFor(() =>
      expect(audited.get(prod.toolCallId)).toMatchObject({ allowed: true, flags: ["watch_db"], dryrun: ["adaptive_rule: no_prod_host"] }),
    );
    await vi.waitFor(() =>
      expect(audited.get(revoked.toolCallId)).toMatchObject({ allowed: true, warnings: ["tool_revoked: exfiltration risk"] }),
    );
    // The built-in tables still deny.
    expect(await propose("cmd.run", { command: "rm -rf /" })).toMatchObject({ allowed: false, guard: { check: "destructive_pattern" } });
  });
});
