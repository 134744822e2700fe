// Per-execution NATS credentials in NATS's decentralised (JWT) model: gavel holds an
// operator and an account key; each Execution's worker gets a user JWT, signed by the
// account, that may publish its own proposals and receive its own replies and nothing
// else. No server reload is needed to add or drop an execution.
import { createHash } from "node:crypto";
import { createAccount, createOperator, createUser, fromSeed, type KeyPair } from "@nats-io/nkeys";
import { inboxPrefix, toolCallSubject } from "./subjects.js";

const enc = new TextEncoder();
const b64url = (b: Uint8Array | string) => Buffer.from(typeof b === "string" ? enc.encode(b) : b).toString("base64url");

/** Publish/subscribe permissions of a NATS user. */
export interface Permissions {
  pub: { allow?: string[]; deny?: string[] };
  sub: { allow?: string[]; deny?: string[] };
}

/** The keys gavel signs with; seeds are secrets (a Kubernetes Secret in cluster mode). */
export interface NatsTrust {
  operatorSeed: string;
  accountSeed: string;
  systemAccountSeed: string;
}

/** The credentials a worker gets: a user JWT plus its seed, in NATS's .creds format too. */
export interface UserCredentials {
  jwt: string;
  seed: string;
  creds: string;
  publicKey: string;
}

/** Creates fresh operator, account and system-account keys. */
export function createTrust(): NatsTrust {
  const dec = new TextDecoder();
  return {
    operatorSeed: dec.decode(createOperator().getSeed()),
    accountSeed: dec.decode(createAccount().getSeed()),
    systemAccountSeed: dec.decode(createAccount().getSeed()),
  };
}

function keyPair(seed: string): KeyPair {
  return fromSeed(enc.encode(seed));
}

/** Encodes and signs a NATS JWT (header alg ed25519-nkey) with the issuer's key. */
function signJwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>, expiresInSeconds?: number): string {
  const iat = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    jti: "",
    iat,
    iss: issuer.getPublicKey(),
    name,
    sub: subject,
    ...(expiresInSeconds !== undefined ? { exp: iat + expiresInSeconds } : {}),
    nats: { ...nats, version: 2 },
  };
  // The jti is the hash of the claims without it, as NATS's own tools make it.
  claims.jti = createHash("sha256").update(JSON.stringify(claims)).digest("base64url").slice(0, 43);
  const head = b64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const body = b64url(JSON.stringify(claims));
  const sig = issuer.sign(enc.encode(`${head}.${body}`));
  return `${head}.${body}.${b64url(sig)}`;
}

const unlimited = { subs: -1, data: -1, payload: -1 };

/** The server-side configuration: operator mode with gavel's accounts preloaded in memory. */
export function serverConfig(trust: NatsTrust): { config: string; account: string } {
  const op = keyPair(trust.operatorSeed);
  const acct = keyPair(trust.accountSeed);
  const sys = keyPair(trust.systemAccountSeed);
  const operatorJwt = signJwt(op, op.getPublicKey(), "gavel", { type: "operator", system_account: sys.getPublicKey() });
  const accountLimits = {
    ...unlimited, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1,
    mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1,
  };
  const accountJwt = signJwt(op, acct.getPublicKey(), "gavel", { type: "account", limits: accountLimits, default_permissions: { pub: {}, sub: {} } });
  const sysJwt = signJwt(op, sys.getPublicKey(), "SYS", { type: "account", limits: { ...unlimited, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 } });
  const config = [
    `operator: ${operatorJwt}`,
    `system_account: ${sys.getPublicKey()}`,
    "resolver: MEMORY",
    "resolver_preload: {",
    `  ${acct.getPublicKey()}: ${accountJwt}`,
    `  ${sys.getPublicKey()}: ${sysJwt}`,
    "}",
  ].join("\n");
  return { config, account: acct.getPublicKey() };
}

/** Issues a user of gavel's account with the given permissions. */
export function issueUser(trust: NatsTrust, name: string, permissions: Permissions, expiresInSeconds?: number): UserCredentials {
  const acct = keyPair(trust.accountSeed);
  const user = createUser();
  const seed = new TextDecoder().decode(user.getSeed());
  const jwt = signJwt(acct, user.getPublicKey(), name, { type: "user", ...unlimited, pub: permissions.pub, sub: permissions.sub }, expiresInSeconds);
  return { jwt, seed, creds: formatCreds(jwt, seed), publicKey: user.getPublicKey() };
}

/** The permissions of one execution's worker: its proposals out, its replies in, nothing else. */
export function workerPermissions(namespace: string, execution: string): Permissions {
  return {
    pub: { allow: [toolCallSubject(namespace, execution)] },
    sub: { allow: [`${inboxPrefix(namespace, execution)}.>`] },
  };
}

/** Credentials for one execution's worker, valid for `ttlSeconds`. */
export function issueWorkerCredentials(trust: NatsTrust, namespace: string, execution: string, ttlSeconds = 24 * 3600): UserCredentials {
  return issueUser(trust, `worker:${namespace}/${execution}`, workerPermissions(namespace, execution), ttlSeconds);
}

/** Credentials for gavel itself (gate, controller, event stream): everything in the account. */
export function issueControllerCredentials(trust: NatsTrust): UserCredentials {
  return issueUser(trust, "gavel-controller", { pub: { allow: [">"] }, sub: { allow: [">"] } });
}

/** Formats a JWT and seed as a NATS .creds file. */
export function formatCreds(jwt: string, seed: string): string {
  return [
    "-----BEGIN NATS USER JWT-----", jwt, "------END NATS USER JWT------", "",
    "************************* IMPORTANT *************************",
    "NKEY Seed printed below can be used to sign and prove identity.",
    "NKEYs are sensitive and should be treated as secrets.", "",
    "-----BEGIN USER NKEY SEED-----", seed, "------END USER NKEY SEED------", "",
  ].join("\n");
}
