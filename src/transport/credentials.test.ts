import { describe, expect, it } from "vitest";
import {
  createTrust,
  decodeJwt,
  formatCreds,
  issueWorkerCredentials,
  parseCreds,
  publicKeyOf,
  serverAuthConfig,
  serverJwts,
  withRevocations,
  workerUserSeed,
} from "./credentials.js";

describe("NATS credentials", () => {
  const trust = createTrust();

  it("signs accounts with the operator signing key and users with the account signing key", () => {
    const jwts = serverJwts(trust);
    const op = decodeJwt(jwts.operator);
    expect(op.iss).toBe(publicKeyOf(trust.operatorSeed));
    expect(op.nats).toMatchObject({
      type: "operator",
      system_account: publicKeyOf(trust.systemAccountSeed),
      signing_keys: [publicKeyOf(trust.operatorSigningSeed)],
    });
    const acct = decodeJwt(jwts.account);
    expect(acct.iss).toBe(publicKeyOf(trust.operatorSigningSeed));
    expect(acct.nats.signing_keys).toEqual([publicKeyOf(trust.accountSigningSeed)]);
    const user = decodeJwt(issueWorkerCredentials(trust, "team", "run.1", { expiresAt: 2_000_000_000 }).jwt);
    expect(user.iss).toBe(publicKeyOf(trust.accountSigningSeed));
    expect(user.nats).toMatchObject({
      issuer_account: publicKeyOf(trust.accountSeed),
      pub: { allow: ["gavel.toolcall.team.run_1"] },
      sub: { allow: ["_INBOX_gavel.team.run_1.>"] },
    });
    expect(user.exp).toBe(2_000_000_000);
  });

  it("derives the same worker user for the same Execution uid, another for another uid or key", () => {
    const a = workerUserSeed(trust.accountSigningSeed, "uid-1");
    expect(workerUserSeed(trust.accountSigningSeed, "uid-1")).toBe(a);
    expect(workerUserSeed(trust.accountSigningSeed, "uid-2")).not.toBe(a);
    expect(workerUserSeed(createTrust().accountSigningSeed, "uid-1")).not.toBe(a);
    expect(publicKeyOf(a)).toMatch(/^U[A-Z2-7]{55}$/);
    const c1 = issueWorkerCredentials(trust, "team", "run", { uid: "uid-1" });
    const c2 = issueWorkerCredentials(trust, "team", "run", { uid: "uid-1" });
    expect(c2.publicKey).toBe(c1.publicKey);
  });

  it("adds revocations at the user's expiry, keeps the later time, drops those already past, never goes back in iat", () => {
    const now = 1_800_000_000_000;
    const start = withRevocations(
      serverJwts(trust, now - 5000).account,
      trust.operatorSigningSeed,
      { UOLD: now / 1000 - 10, UKEEP: now / 1000 + 100 },
      now - 20_000,
    );
    const next = withRevocations(start, trust.operatorSigningSeed, { UNEW: now / 1000 + 50, UKEEP: now / 1000 + 10 }, now);
    const claims = decodeJwt(next);
    expect(claims.nats.revocations).toEqual({ UKEEP: now / 1000 + 100, UNEW: now / 1000 + 50 });
    expect(claims.iss).toBe(publicKeyOf(trust.operatorSigningSeed));
    expect(claims.iat).toBeGreaterThan(decodeJwt(start).iat);
    // Everything else of the account is kept.
    expect(claims.nats.signing_keys).toEqual([publicKeyOf(trust.accountSigningSeed)]);
    expect(claims.sub).toBe(publicKeyOf(trust.accountSeed));
  });

  it("round-trips a .creds file and refuses text that is not one", () => {
    const c = issueWorkerCredentials(trust, "ns", "ex");
    expect(parseCreds(formatCreds(c.jwt, c.seed))).toEqual({ jwt: c.jwt, seed: c.seed });
    expect(() => parseCreds("hello")).toThrow(/not a NATS .creds file/);
  });

  it("configures the server with a full resolver that takes pushed updates", () => {
    const text = serverAuthConfig(serverJwts(trust), "/data/jwt");
    expect(text).toContain(`system_account: ${publicKeyOf(trust.systemAccountSeed)}`);
    expect(text).toContain('resolver: { type: full, dir: "/data/jwt"');
    expect(text).toContain(`${publicKeyOf(trust.accountSeed)}: ey`);
  });

  it("names the seed that is wrong", () => {
    expect(() => withRevocations(serverJwts(trust).account, "SOBAD", {})).toThrow(/operator signing seed is not a valid NATS nkey seed/);
  });
});
