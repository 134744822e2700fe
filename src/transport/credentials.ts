// gavel's NATS trust in the decentralised (operator/JWT) model, as pure functions: the
// operator, its signing key, the system account and gavel's account with its signing key;
// the server configuration that trusts them; user credentials for the controller, the
// system account and each Execution's worker; and the account JWT re-signed with
// revocations. No I/O here: the bootstrap (src/controller/nats-secrets.ts) keeps the keys
// in Secrets, the controller mints and revokes (src/controller/execution-credentials.ts).
import { createHash, createHmac } from "node:crypto";
import { createAccount, createOperator, createUser, fromSeed, type KeyPair } from "@nats-io/nkeys";
// The seed codec is not re-exported by the package root; a user key derived from an
// Execution's uid needs it to encode 32 raw bytes as a seed.
import { Codec } from "@nats-io/nkeys/lib/codec.js";
import { Prefix } from "@nats-io/nkeys";
import { inboxPrefix, toolCallSubject } from "./subjects.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const b64url = (b: Uint8Array | string) => Buffer.from(typeof b === "string" ? enc.encode(b) : b).toString("base64url");

/** Publish/subscribe permissions of a NATS user. */
export interface Permissions {
  pub: { allow?: string[]; deny?: string[] };
  sub: { allow?: string[]; deny?: string[] };
}

/**
 * Every key of one gavel NATS deployment; seeds are secrets. The identity keys sign only
 * at bootstrap; day to day the operator signing key re-signs gavel's account (revocations)
 * and the account signing key signs users.
 */
export interface NatsTrust {
  operatorSeed: string;
  operatorSigningSeed: string;
  systemAccountSeed: string;
  accountSeed: string;
  accountSigningSeed: string;
}

/** What signs users of gavel's account: its signing seed and the account's public key. */
export interface AccountIssuer {
  accountSigningSeed: string;
  /** The account's public key (A...); derived from accountSeed when only that is known. */
  account?: string;
  accountSeed?: string;
}

/** The credentials a user gets: a JWT plus its seed, and both in NATS's .creds format. */
export interface UserCredentials {
  jwt: string;
  seed: string;
  creds: string;
  publicKey: string;
}

/** The claims of a NATS JWT (the parts gavel reads and writes). */
export interface JwtClaims {
  jti: string;
  iat: number;
  iss: string;
  sub: string;
  name: string;
  exp?: number;
  nats: Record<string, unknown> & { type: string; version: number };
  [claim: string]: unknown;
}

function seedOf(kp: KeyPair): string {
  return dec.decode(kp.getSeed());
}

/** Creates fresh keys for a new deployment. */
export function createTrust(): NatsTrust {
  return {
    operatorSeed: seedOf(createOperator()),
    operatorSigningSeed: seedOf(createOperator()),
    systemAccountSeed: seedOf(createAccount()),
    accountSeed: seedOf(createAccount()),
    accountSigningSeed: seedOf(createAccount()),
  };
}

/** The key pair of a seed; throws naming `what` when the text is not a seed of that kind. */
export function keyPair(seed: string, what = "seed"): KeyPair {
  try {
    return fromSeed(enc.encode(seed.trim()));
  } catch (err) {
    throw new Error(`${what} is not a valid NATS nkey seed`, { cause: err });
  }
}

/** The public key of a seed. */
export function publicKeyOf(seed: string, what?: string): string {
  return keyPair(seed, what).getPublicKey();
}

/** gavel's account public key as an issuer knows it. */
export function accountOf(issuer: AccountIssuer): string {
  if (issuer.account !== undefined) return issuer.account;
  if (issuer.accountSeed !== undefined) return publicKeyOf(issuer.accountSeed, "account seed");
  throw new Error("the account's public key is not known (account or accountSeed)");
}

/** Signs claims as a JWT (header alg ed25519-nkey); the jti is recomputed. */
export function signJwt(issuer: KeyPair, claims: Omit<JwtClaims, "jti" | "iss">): string {
  const body: Record<string, unknown> = { ...claims, jti: "", iss: issuer.getPublicKey() };
  // The jti is a hash of the claims without it, as NATS's own tools make it.
  body.jti = createHash("sha256").update(JSON.stringify(body)).digest("base64url").slice(0, 43);
  const head = b64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const payload = b64url(JSON.stringify(body));
  const sig = issuer.sign(enc.encode(`${head}.${payload}`));
  return `${head}.${payload}.${b64url(sig)}`;
}

/** The claims of a JWT, unverified (gavel reads only JWTs it got from its own server or keys). */
export function decodeJwt(jwt: string): JwtClaims {
  const body = jwt.trim().split(".")[1];
  if (body === undefined) throw new Error("not a JWT: no claims part");
  const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as JwtClaims;
  if (typeof claims.sub !== "string" || typeof claims.nats !== "object") throw new Error("not a NATS JWT: no sub or nats claim");
  return claims;
}

const nowSeconds = (nowMs = Date.now()) => Math.floor(nowMs / 1000);
const unlimited = { subs: -1, data: -1, payload: -1 };

/**
 * The operator JWT, naming its signing key and gavel's system account. Not strict about
 * signing keys: strict would also bar the system account's identity key from signing its
 * user; the identity seeds live only in the operator Secret anyway.
 */
export function operatorJwt(trust: NatsTrust, nowMs?: number): string {
  const op = keyPair(trust.operatorSeed, "operator seed");
  return signJwt(op, {
    iat: nowSeconds(nowMs),
    sub: op.getPublicKey(),
    name: "gavel",
    nats: {
      type: "operator",
      version: 2,
      signing_keys: [publicKeyOf(trust.operatorSigningSeed, "operator signing seed")],
      system_account: publicKeyOf(trust.systemAccountSeed, "system account seed"),
    },
  });
}

/** gavel's account JWT: JetStream without limits, users signed by its signing key, no bearer tokens. */
export function accountJwt(trust: NatsTrust, nowMs?: number): string {
  return signJwt(keyPair(trust.operatorSigningSeed, "operator signing seed"), {
    iat: nowSeconds(nowMs),
    sub: publicKeyOf(trust.accountSeed, "account seed"),
    name: "gavel",
    nats: {
      type: "account",
      version: 2,
      limits: {
        ...unlimited,
        imports: -1,
        exports: -1,
        wildcards: true,
        conn: -1,
        leaf: -1,
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
        disallow_bearer: true,
      },
      signing_keys: [publicKeyOf(trust.accountSigningSeed, "account signing seed")],
      default_permissions: { pub: {}, sub: {} },
    },
  });
}

/** The system account's JWT. */
export function systemAccountJwt(trust: NatsTrust, nowMs?: number): string {
  return signJwt(keyPair(trust.operatorSigningSeed, "operator signing seed"), {
    iat: nowSeconds(nowMs),
    sub: publicKeyOf(trust.systemAccountSeed, "system account seed"),
    name: "SYS",
    nats: { type: "account", version: 2, limits: { ...unlimited, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 } },
  });
}

/** The JWTs a server is configured with (kept beside the seeds so a restart preloads the same ones). */
export interface ServerJwts {
  operator: string;
  systemAccount: string;
  account: string;
}

/** Signs the three JWTs a server needs. */
export function serverJwts(trust: NatsTrust, nowMs?: number): ServerJwts {
  return { operator: operatorJwt(trust, nowMs), systemAccount: systemAccountJwt(trust, nowMs), account: accountJwt(trust, nowMs) };
}

/**
 * The server's trust configuration (included into nats.conf): operator mode with a full
 * resolver, which stores account JWTs in `resolverDir` and takes updates pushed on
 * `$SYS.REQ.CLAIMS.UPDATE` (how revocations reach it). The preloads are only the starting
 * point: a pushed JWT with a later iat wins over them, also after a restart. Without a
 * directory the resolver is in memory and takes no pushed update (no revocation).
 */
export function serverAuthConfig(jwts: ServerJwts, resolverDir?: string): string {
  const sys = decodeJwt(jwts.systemAccount).sub;
  const acct = decodeJwt(jwts.account).sub;
  return [
    `operator: ${jwts.operator}`,
    `system_account: ${sys}`,
    resolverDir === undefined
      ? "resolver: MEMORY"
      : `resolver: { type: full, dir: ${JSON.stringify(resolverDir)}, allow_delete: false, interval: "2m", timeout: "5s" }`,
    "resolver_preload: {",
    `  ${sys}: ${jwts.systemAccount}`,
    `  ${acct}: ${jwts.account}`,
    "}",
  ].join("\n");
}

/** serverAuthConfig from fresh JWTs of `trust`, plus gavel's account key (tests and local servers). */
export function serverConfig(trust: NatsTrust, resolverDir?: string): { config: string; account: string } {
  return { config: serverAuthConfig(serverJwts(trust), resolverDir), account: publicKeyOf(trust.accountSeed) };
}

/** Signs a user of gavel's account with the account signing key. */
export function issueUser(
  issuer: AccountIssuer,
  name: string,
  permissions: Permissions,
  opts: { expiresAt?: number; userSeed?: string; nowMs?: number } = {},
): UserCredentials {
  const user = opts.userSeed !== undefined ? keyPair(opts.userSeed, "user seed") : createUser();
  const seed = seedOf(user);
  const jwt = signJwt(keyPair(issuer.accountSigningSeed, "account signing seed"), {
    iat: nowSeconds(opts.nowMs),
    sub: user.getPublicKey(),
    name,
    ...(opts.expiresAt !== undefined ? { exp: opts.expiresAt } : {}),
    nats: { type: "user", version: 2, ...unlimited, issuer_account: accountOf(issuer), pub: permissions.pub, sub: permissions.sub },
  });
  return { jwt, seed, creds: formatCreds(jwt, seed), publicKey: user.getPublicKey() };
}

/** The permissions of one execution's worker: its proposals out, its replies in, nothing else. */
export function workerPermissions(namespace: string, execution: string): Permissions {
  return {
    pub: { allow: [toolCallSubject(namespace, execution)] },
    sub: { allow: [`${inboxPrefix(namespace, execution)}.>`] },
  };
}

/**
 * The user seed of an Execution's worker, derived from the account signing seed and the
 * Execution's uid: minting again (a retried reconcile, a restarted controller) gives the
 * same public key, so whatever was minted for an Execution is revoked by one entry.
 */
export function workerUserSeed(accountSigningSeed: string, uid: string): string {
  const raw = createHmac("sha256", accountSigningSeed.trim()).update(`gavel/nats-worker/v1/${uid}`).digest();
  return dec.decode(Codec.encodeSeed(Prefix.User, new Uint8Array(raw)));
}

/** Credentials for one execution's worker, valid until `expiresAt` (epoch seconds). */
export function issueWorkerCredentials(
  issuer: AccountIssuer,
  namespace: string,
  execution: string,
  opts: { expiresAt?: number; uid?: string; nowMs?: number } = {},
): UserCredentials {
  const expiresAt = opts.expiresAt ?? nowSeconds(opts.nowMs) + 24 * 3600;
  return issueUser(issuer, `worker:${namespace}/${execution}`, workerPermissions(namespace, execution), {
    expiresAt,
    ...(opts.uid !== undefined ? { userSeed: workerUserSeed(issuer.accountSigningSeed, opts.uid) } : {}),
    ...(opts.nowMs !== undefined ? { nowMs: opts.nowMs } : {}),
  });
}

/** Credentials for gavel itself (controller, gate, event stream): everything in its account. */
export function issueControllerCredentials(issuer: AccountIssuer): UserCredentials {
  return issueUser(issuer, "gavel-controller", { pub: { allow: [">"] }, sub: { allow: [">"] } });
}

/** Subjects the system user needs to read gavel's account JWT and push a new one. */
export const ACCOUNT_LOOKUP_SUBJECT = (account: string) => `$SYS.REQ.ACCOUNT.${account}.CLAIMS.LOOKUP`;
export const CLAIMS_UPDATE_SUBJECT = "$SYS.REQ.CLAIMS.UPDATE";

/** Credentials of a system-account user that may only look up and update account JWTs. */
export function issueSystemCredentials(trust: Pick<NatsTrust, "systemAccountSeed">): UserCredentials {
  const sys = keyPair(trust.systemAccountSeed, "system account seed");
  const user = createUser();
  const seed = seedOf(user);
  const jwt = signJwt(sys, {
    iat: nowSeconds(),
    sub: user.getPublicKey(),
    name: "gavel-revoker",
    nats: {
      type: "user",
      version: 2,
      ...unlimited,
      pub: { allow: [CLAIMS_UPDATE_SUBJECT, ACCOUNT_LOOKUP_SUBJECT("*")] },
      sub: { allow: ["_INBOX.>"] },
    },
  });
  return { jwt, seed, creds: formatCreds(jwt, seed), publicKey: user.getPublicKey() };
}

/**
 * gavel's account JWT with users revoked, re-signed by the operator signing key. A
 * revocation's time is the user JWT's expiry (NATS refuses a JWT issued at or before it),
 * so an entry can be dropped once that time has passed: the JWT has expired by then.
 */
export function withRevocations(current: string, operatorSigningSeed: string, revoke: Record<string, number>, nowMs = Date.now()): string {
  const claims = decodeJwt(current);
  const now = nowSeconds(nowMs);
  const kept: Record<string, number> = {};
  const existing = (claims.nats.revocations ?? {}) as Record<string, number>;
  for (const [key, at] of Object.entries({ ...existing, ...revoke })) {
    const t = Math.max(at, existing[key] ?? 0);
    // "*" would revoke every user; gavel never writes it, and never drops one it finds.
    if (t >= now || key === "*") kept[key] = t;
  }
  const { jti: _jti, iss: _iss, ...rest } = claims;
  return signJwt(keyPair(operatorSigningSeed, "operator signing seed"), {
    ...rest,
    // Newer than what the server holds. nats-server's directory store keeps a JWT over another
    // only when its iat is strictly greater: with an equal iat (both signed in the same second)
    // the preload of a restart would overwrite the update and bring revoked users back.
    iat: Math.max(now, claims.iat + 1),
    nats: { ...claims.nats, revocations: kept },
  });
}

/** Formats a JWT and seed as a NATS .creds file. */
export function formatCreds(jwt: string, seed: string): string {
  return [
    "-----BEGIN NATS USER JWT-----",
    jwt,
    "------END NATS USER JWT------",
    "",
    "************************* IMPORTANT *************************",
    "NKEY Seed printed below can be used to sign and prove identity.",
    "NKEYs are sensitive and should be treated as secrets.",
    "",
    "-----BEGIN USER NKEY SEED-----",
    seed,
    "------END USER NKEY SEED------",
    "",
  ].join("\n");
}

/** The JWT and seed of a .creds file; throws when it is not one. */
export function parseCreds(text: string): { jwt: string; seed: string } {
  const block = (label: string) => new RegExp(`-{3,}BEGIN ${label}-{3,}\\s*\\n\\s*(\\S+)\\s*\\n\\s*-{3,}END ${label}-{3,}`).exec(text)?.[1];
  const jwt = block("NATS USER JWT");
  const seed = block("USER NKEY SEED");
  if (jwt === undefined || seed === undefined) throw new Error("not a NATS .creds file (no user JWT and seed blocks)");
  return { jwt, seed };
}
