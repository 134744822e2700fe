// Each of the seven checks passing and failing, their order, and the policy store's reloads.
import { createHash, generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Agent, GuardPolicySpec, JsonObject } from "../../api/types.js";
import { agentScope, type GuardContext, type HistoryEntry } from "./context.js";
import { runGuard } from "./guard.js";
import { compilePolicy } from "./policy.js";
import { PolicyStore } from "./policy-store.js";
import { PolicyError } from "./pattern-set.js";
import { signRegistration } from "./signature.js";

const agent: Pick<Agent, "spec"> = {
  spec: {
    tools: ["fs.read", "fs.list", "fs.write", "fs.delete", { name: "cmd.run", capability: "shell:safe|shell:full" }, "db.query"],
    security: { capabilities: ["read", "shell:safe"] },
  },
};
const sha = (s: string): string => createHash("sha256").update(s).digest("hex");

function ctx(spec: GuardPolicySpec = {}, extra: Partial<GuardContext> = {}): GuardContext {
  return { policy: compilePolicy([{ name: "test", spec }]), scope: agentScope(agent), history: [], ...extra };
}
function guard(tool: string, args: JsonObject, c: GuardContext = ctx(), step = 1) {
  return runGuard({ tool, args, step }, c);
}

describe("guard", () => {
  it("approves a harmless call with no flags", () => {
    expect(guard("fs.list", { path: "/workspace" })).toEqual({ approved: true });
  });

  it("1. revocation: a revoked tool is denied with its reason; others pass", () => {
    const c = ctx({ revoked_tools: [{ tool: "db.query", reason: "CVE-2026-1234" }] });
    expect(guard("db.query", { q: "select 1" }, c)).toEqual({
      approved: false,
      check: "revocation",
      reason: "tool_revoked: CVE-2026-1234",
    });
    expect(guard("fs.read", { path: "/workspace/a" }, c).approved).toBe(true);
  });

  it("2. hash: a registered tool passes only when its live code hash matches", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const h = sha("tool code v1");
    const spec: GuardPolicySpec = {
      tool_registry: [
        {
          tool: "db.query",
          sha256: h,
          signature: signRegistration(privateKey.export({ type: "pkcs8", format: "pem" }).toString(), "db.query", h),
        },
      ],
      trusted_keys: [{ name: "k", public_key: publicKey.export({ type: "spki", format: "pem" }).toString() }],
    };
    expect(guard("db.query", {}, ctx(spec, { liveHashes: new Map([["db.query", h]]) })).approved).toBe(true);
    expect(guard("db.query", {}, ctx(spec, { liveHashes: new Map([["db.query", sha("tampered")]]) }))).toEqual({
      approved: false,
      check: "hash",
      reason: "hash_mismatch: db.query",
    });
    expect(guard("db.query", {}, ctx(spec)).reason).toBe("hash_mismatch: db.query (no live hash of its code)");
  });

  it("3. capability: a tool outside spec.tools, or needing a capability outside the scope, is denied", () => {
    expect(guard("net.fetch", { url: "https://example.com" })).toEqual({
      approved: false,
      check: "capability",
      reason: "capability_boundary: missing tool:net.fetch",
    });
    const c = ctx({ required_capabilities: { "fs.write": "write" } });
    expect(guard("fs.write", { path: "/workspace/a", content: "x" }, c)).toEqual({
      approved: false,
      check: "capability",
      reason: "capability_boundary: missing write",
    });
    expect(guard("cmd.run", { command: "ls /workspace" }, c).approved).toBe(true);
    const narrow = { ...c, scope: agentScope({ spec: { ...agent.spec, security: { capabilities: ["read"] } } }) };
    expect(guard("cmd.run", { command: "ls" }, narrow).reason).toBe("capability_boundary: missing shell:safe|shell:full");
  });

  it("4. destructive patterns: built-in tables and policy patterns over nested values and keys", () => {
    expect(guard("cmd.run", { command: "chmod 777 /workspace/out" })).toMatchObject({
      approved: false,
      check: "destructive_pattern",
      reason: String.raw`destructive_pattern: chmod\s+777`,
    });
    // The effect model reads the command first and names its threat class and the key that carried it.
    expect(guard("cmd.run", { command: "rm -rf /" })).toMatchObject({
      approved: false,
      check: "destructive_pattern",
      reason: "destruction: deletes recursively: a system directory [command]",
    });
    expect(guard("fs.read", { opts: { paths: ["/workspace/a", "~/.ssh/id_rsa"] } }).reason).toBe(
      "secrets: reads files: a secret file [opts.paths[]]",
    );
    expect(guard("fs.list", { opts: { paths: ["/workspace/a", "/etc/ssh/sshd_config"] } }).reason).toBe(
      String.raw`destructive_pattern: ^/etc/ssh(/|$)`,
    );
    expect(guard("fs.read", { "/etc/shadow": true }).check).toBe("destructive_pattern");
    expect(guard("db.query", { q: "drop table users" }).reason).toBe(String.raw`destructive_pattern: (?i)(DROP|TRUNCATE)\s+TABLE`);
    const c = ctx({
      destructive_patterns: [{ pattern: String.raw`\bterraform\s+destroy\b` }],
      forbidden_paths: [{ pattern: "^/data/prod(/|$)" }],
    });
    expect(guard("cmd.run", { command: "terraform destroy -auto-approve" }, c).reason).toBe(
      String.raw`destructive_pattern: \bterraform\s+destroy\b`,
    );
    expect(guard("fs.read", { path: "/data/prod/../prod/db" }, c).reason).toBe("destructive_pattern: ^/data/prod(/|$)");
    expect(guard("cmd.run", { command: "terraform plan" }, c).approved).toBe(true);
  });

  it("5. sequence contracts: the trigger needs its prior tool within within_steps of this iteration", () => {
    const spec: GuardPolicySpec = {
      sequence_contracts: [{ name: "read_before_delete", requires_prior: "fs.read", triggers_for: "fs.delete", within_steps: 2 }],
    };
    const at = (history: HistoryEntry[], step: number) => guard("fs.delete", { path: "/workspace/a" }, ctx(spec, { history }), step);
    expect(at([], 1)).toEqual({ approved: false, check: "sequence_contract", reason: "sequence_contract: read_before_delete" });
    expect(at([{ tool: "fs.read", step: 1 }], 2).approved).toBe(true);
    expect(at([{ tool: "fs.read", step: 1 }], 3).approved).toBe(true);
    expect(at([{ tool: "fs.read", step: 1 }], 4).reason).toBe("sequence_contract: read_before_delete");
    expect(at([{ tool: "fs.list", step: 1 }], 2).approved).toBe(false);
    // within_steps defaults to 5
    const d = ctx(
      { sequence_contracts: [{ name: "c", requires_prior: "fs.read", triggers_for: "fs.delete" }] },
      { history: [{ tool: "fs.read", step: 1 }] },
    );
    expect(guard("fs.delete", {}, d, 6).approved).toBe(true);
    expect(guard("fs.delete", {}, d, 7).approved).toBe(false);
  });

  it("6. signature: a registration must be signed by a trusted key, for this tool and hash", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const other = generateKeyPairSync("ed25519");
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const raw = publicKey.export({ type: "spki", format: "der" }).subarray(12).toString("base64");
    const h = sha("code");
    const live = { liveHashes: new Map([["db.query", h]]) };
    const withSig = (signature: string | undefined, key = raw) =>
      ctx(
        {
          tool_registry: [{ tool: "db.query", sha256: h, ...(signature ? { signature } : {}) }],
          trusted_keys: [{ name: "ops", public_key: key }],
        },
        live,
      );
    expect(guard("db.query", {}, withSig(signRegistration(pem, "db.query", h))).approved).toBe(true);
    expect(guard("db.query", {}, withSig(undefined))).toEqual({ approved: false, check: "signature", reason: "signature_invalid" });
    expect(guard("db.query", {}, withSig(signRegistration(pem, "fs.read", h))).reason).toBe("signature_invalid");
    const otherPem = other.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    expect(guard("db.query", {}, withSig(signRegistration(otherPem, "db.query", h))).reason).toBe("signature_invalid");
  });

  it("7. adaptive rules: deny blocks (first in declaration order), flag records and allows", () => {
    const spec: GuardPolicySpec = {
      adaptive_rules: [
        { name: "watch_db", match_field: "tool", pattern: "^db\\.", action: "flag", reason: "measure" },
        { name: "no_prod_host", match_field: "args", pattern: "prod-db\\.internal", action: "deny", reason: "prod" },
        { name: "no_query_tool", match_field: "tool", pattern: "query", action: "deny", reason: "x", enabled: false },
        { name: "bad_hash", match_field: "hash", pattern: "^deadbeef", action: "deny", reason: "known bad build" },
      ],
    };
    const c = ctx(spec);
    expect(guard("db.query", { host: "staging-db.internal" }, c)).toEqual({ approved: true, check: "adaptive_rule", flags: ["watch_db"] });
    expect(guard("db.query", { host: "prod-db.internal" }, c)).toEqual({
      approved: false,
      check: "adaptive_rule",
      reason: "adaptive_rule: no_prod_host",
      flags: ["watch_db"],
    });
    expect(guard("fs.read", { path: "/workspace/x" }, c)).toEqual({ approved: true });
    const bad = ctx(spec, { liveHashes: new Map([["fs.read", "deadbeef" + "0".repeat(56)]]) });
    expect(guard("fs.read", { path: "/workspace/x" }, bad).reason).toBe("adaptive_rule: bad_hash");
  });

  it("denies arguments nested too deeply instead of exhausting the stack", () => {
    let deep: JsonObject = { path: "/workspace/a" };
    for (let i = 0; i < 10_000; i++) deep = { a: deep };
    expect(guard("fs.read", deep)).toEqual({
      approved: false,
      check: "destructive_pattern",
      reason: "destructive_pattern: arguments nested deeper than 64 levels",
    });
    let ok: JsonObject = { path: "/workspace/a" };
    for (let i = 0; i < 30; i++) ok = { a: ok };
    expect(guard("fs.read", ok).approved).toBe(true);
  });

  it("finds a dangerous line inside a large file content, line by line", () => {
    const filler = Array.from({ length: 4000 }, (_, i) => `const value${i} = compute(${i}); // harmless line ${i}`).join("\n");
    const started = performance.now();
    expect(guard("fs.write", { path: "/workspace/a.ts", content: filler }).approved).toBe(true);
    const evil = `${filler}\nexec("rm -rf /")\n${filler}`;
    expect(guard("fs.write", { path: "/workspace/a.ts", content: evil }).check).toBe("destructive_pattern");
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("runs the checks in Guardian's order: the first failing one is reported", () => {
    const spec: GuardPolicySpec = {
      revoked_tools: [{ tool: "net.fetch", reason: "gone" }],
      adaptive_rules: [{ name: "any", match_field: "args", pattern: ".", action: "deny", reason: "all" }],
    };
    // revocation beats capability (net.fetch is not even declared) and destructive patterns
    expect(guard("net.fetch", { url: "http://169.254.169.254/" }, ctx(spec)).check).toBe("revocation");
    // capability beats destructive
    expect(guard("undeclared", { c: "rm -rf /" }, ctx(spec)).check).toBe("capability");
    // destructive beats adaptive
    expect(guard("cmd.run", { c: "rm -rf /" }, ctx(spec)).check).toBe("destructive_pattern");
    expect(guard("cmd.run", { c: "ls" }, ctx(spec)).check).toBe("adaptive_rule");
  });
});

describe("policy compilation", () => {
  it("refuses a backreference with an error naming the policy and the rule (lookaround loads: lookaround.test.ts)", () => {
    const spec: GuardPolicySpec = {
      adaptive_rules: [{ name: "repeated_word", match_field: "args", pattern: "\\b(\\w+) \\1\\b", action: "deny", reason: "r" }],
    };
    expect(() => compilePolicy([{ name: "ops", namespace: "team-a", spec }])).toThrow(PolicyError);
    expect(() => compilePolicy([{ name: "ops", namespace: "team-a", spec }])).toThrow(
      /GuardPolicy team-a\/ops: adaptive_rules\[0\] \(repeated_word\).*RE2/,
    );
  });

  it("names a bad trusted key and a bad registry hash", () => {
    expect(() => compilePolicy([{ name: "p", spec: { trusted_keys: [{ name: "k1", public_key: "AAAA" }] } }])).toThrow(
      /trusted_keys\[0\] \(k1\)/,
    );
    expect(() => compilePolicy([{ name: "p", spec: { tool_registry: [{ tool: "t", sha256: "xyz" }] } }])).toThrow(
      /tool_registry\[0\] \(t\): sha256/,
    );
  });

  it("merges the cluster default with a namespace's policies; the store swaps atomically and keeps the old policy on error", () => {
    const store = new PolicyStore("gavel-system");
    const def = { name: "default", namespace: "gavel-system", spec: { revoked_tools: [{ tool: "fs.write", reason: "cluster freeze" }] } };
    const teamA = { name: "extra", namespace: "team-a", spec: { revoked_tools: [{ tool: "db.query", reason: "team-a says no" }] } };
    const scope = agentScope(agent);
    const decide = (ns: string, tool: string) => runGuard({ tool, args: {}, step: 1 }, { policy: store.get(ns), scope, history: [] });
    expect(decide("team-a", "db.query").approved).toBe(true);
    store.update([def, teamA]);
    expect(store.version).toBe(2);
    expect(decide("team-a", "db.query").reason).toBe("tool_revoked: team-a says no");
    expect(decide("team-a", "fs.write").reason).toBe("tool_revoked: cluster freeze");
    expect(decide("team-b", "fs.write").reason).toBe("tool_revoked: cluster freeze");
    expect(decide("team-b", "db.query").approved).toBe(true);
    const held = store.get("team-a");
    const broken = { name: "bad", namespace: "team-a", spec: { destructive_patterns: [{ pattern: "(a)\\1" }] } };
    expect(() => store.update([def, teamA, broken])).toThrow(/GuardPolicy team-a\/bad: destructive_patterns\[0\]/);
    expect(store.version).toBe(2);
    expect(store.get("team-a")).toBe(held);
    store.update([def]);
    expect(decide("team-a", "db.query").approved).toBe(true);
    // the snapshot a call started with is unaffected by the swap
    expect(runGuard({ tool: "db.query", args: {}, step: 1 }, { policy: held, scope, history: [] }).approved).toBe(false);
  });
});

describe("enforcementAction: deny, warn, dryrun", () => {
  it("a rule in warn mode lets the call through and lists what it would have denied; dryrun records it apart", () => {
    const spec: GuardPolicySpec = {
      revoked_tools: [{ tool: "fs.delete", reason: "being retired", enforcementAction: "warn" }],
      destructive_patterns: [
        { pattern: "DROP\\s+DATABASE", enforcementAction: "dryrun" },
        { pattern: "staging-db", enforcementAction: "warn" },
      ],
      sequence_contracts: [
        { name: "read_before_delete", requires_prior: "fs.read", triggers_for: "fs.delete", enforcementAction: "dryrun" },
      ],
      adaptive_rules: [
        { name: "no_prod", match_field: "args", pattern: "prod-db", action: "deny", reason: "x", enforcementAction: "warn" },
        { name: "watch_db", match_field: "tool", pattern: "^db\\.", action: "flag", reason: "y", enforcementAction: "dryrun" },
      ],
    };
    const c = ctx(spec);
    expect(guard("fs.delete", { path: "/workspace/a" }, c)).toEqual({
      approved: true,
      warnings: ["tool_revoked: being retired"],
      dryrun: ["sequence_contract: read_before_delete"],
    });
    // A flag rule stays a flag whatever its enforcement action.
    expect(guard("db.query", { sql: "DROP DATABASE x", host: "prod-db staging-db" }, c)).toEqual({
      approved: true,
      check: "adaptive_rule",
      flags: ["watch_db"],
      warnings: ["destructive_pattern: staging-db", "adaptive_rule: no_prod"],
      dryrun: ["destructive_pattern: DROP\\s+DATABASE"],
    });
    // A deny rule still blocks next to them, and the notes made before it are kept.
    expect(guard("db.query", { sql: "DROP DATABASE x; rm -rf /" }, c)).toEqual({
      approved: false,
      check: "destructive_pattern",
      reason: "destructive_pattern: rm\\s+-rf\\s+/(\\s|\\*|$)",
      dryrun: ["destructive_pattern: DROP\\s+DATABASE"],
    });
  });

  it("the policy's enforcementAction is every rule's default, an entry's own wins; built-in tables always deny", () => {
    const spec: GuardPolicySpec = {
      enforcementAction: "warn",
      revoked_tools: [
        { tool: "fs.delete", reason: "r" },
        { tool: "fs.write", reason: "w", enforcementAction: "deny" },
      ],
      required_capabilities: { "db.query": "db:read" },
      adaptive_rules: [{ name: "no_tmp", match_field: "args", pattern: "/tmp/", action: "deny", reason: "x" }],
    };
    const c = ctx(spec);
    expect(guard("fs.delete", { path: "/tmp/a" }, c)).toEqual({ approved: true, warnings: ["tool_revoked: r", "adaptive_rule: no_tmp"] });
    expect(guard("fs.write", { path: "/workspace/a" }, c)).toMatchObject({
      approved: false,
      check: "revocation",
      reason: "tool_revoked: w",
    });
    expect(guard("db.query", {}, c)).toEqual({ approved: true, warnings: ["capability_boundary: missing db:read"] });
    expect(guard("fs.read", { path: "/etc/shadow" }, c)).toMatchObject({ approved: false, check: "destructive_pattern" });
    // The Agent's own boundary (a tool outside spec.tools) is not a policy rule: it denies.
    expect(guard("net.fetch", {}, c)).toMatchObject({ approved: false, check: "capability" });
  });

  it("refuses an unknown enforcementAction naming the policy and the entry", () => {
    expect(() => compilePolicy([{ name: "p", spec: { enforcementAction: "audit" as "warn" } }])).toThrow(
      /GuardPolicy p: enforcementAction must be deny, warn or dryrun/,
    );
    expect(() =>
      compilePolicy([
        {
          name: "p",
          spec: {
            adaptive_rules: [
              { name: "r", match_field: "tool", pattern: "x", action: "deny", reason: "x", enforcementAction: "block" as "deny" },
            ],
          },
        },
      ]),
    ).toThrow(/GuardPolicy p: adaptive_rules\[0\] \(r\): enforcementAction must be deny, warn or dryrun/);
  });
});
