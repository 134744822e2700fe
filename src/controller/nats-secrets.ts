// The two Secrets that hold gavel's NATS keys (docs/nats.md) and the bootstrap that makes
// them: the operator Secret (every seed and the server's JWTs; only the NATS server's
// bootstrap reads it) and the credentials Secret (what the controller and the gate mount:
// their user, the account signing key to mint worker users, and what revocations need).
// Helm cannot make ed25519 keys, so `gavel nats bootstrap` creates both when absent.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { ignoreNotFound, isConflict } from "../errors.js";
import {
  createTrust,
  decodeJwt,
  issueControllerCredentials,
  issueSystemCredentials,
  parseCreds,
  publicKeyOf,
  serverJwts,
  type NatsTrust,
  type ServerJwts,
} from "../transport/credentials.js";

/** Keys of the operator Secret. */
export const OPERATOR_KEYS = {
  operatorSeed: "operator.nk",
  operatorSigningSeed: "operator-signing.nk",
  systemAccountSeed: "system-account.nk",
  accountSeed: "account.nk",
  accountSigningSeed: "account-signing.nk",
  operatorJwt: "operator.jwt",
  systemAccountJwt: "system-account.jwt",
  accountJwt: "account.jwt",
} as const;

/** Keys (and so file names, mounted) of the credentials Secret. */
export const CREDENTIALS_KEYS = {
  /** gavel's own user (controller, gate, event stream): everything in gavel's account. */
  controllerCreds: "nats.creds",
  /** gavel's account public key. */
  account: "account.pub",
  /** Signs worker users. */
  accountSigningSeed: "account-signing.nk",
  /** Re-signs gavel's account JWT with revocations (optional: without it credentials only expire). */
  operatorSigningSeed: "operator-signing.nk",
  /** A system-account user that may look up and push account JWTs (optional, as above). */
  systemCreds: "system.creds",
} as const;

const LABELS = {
  "app.kubernetes.io/part-of": "gavel",
  "app.kubernetes.io/component": "nats",
  "app.kubernetes.io/managed-by": "gavel-nats-bootstrap",
};

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

function secret(name: string, data: Record<string, string>): k8s.V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, labels: LABELS },
    type: "Opaque",
    immutable: true,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

/** The operator Secret: every seed, and the JWTs the server preloads. */
export function operatorSecret(name: string, trust: NatsTrust, jwts: ServerJwts): k8s.V1Secret {
  const K = OPERATOR_KEYS;
  return secret(name, {
    [K.operatorSeed]: trust.operatorSeed,
    [K.operatorSigningSeed]: trust.operatorSigningSeed,
    [K.systemAccountSeed]: trust.systemAccountSeed,
    [K.accountSeed]: trust.accountSeed,
    [K.accountSigningSeed]: trust.accountSigningSeed,
    [K.operatorJwt]: jwts.operator,
    [K.systemAccountJwt]: jwts.systemAccount,
    [K.accountJwt]: jwts.account,
  });
}

/** The credentials Secret for `trust`: a fresh controller user and system user. */
export function credentialsSecret(name: string, trust: NatsTrust): k8s.V1Secret {
  const K = CREDENTIALS_KEYS;
  return secret(name, {
    [K.controllerCreds]: issueControllerCredentials(trust).creds,
    [K.account]: publicKeyOf(trust.accountSeed),
    [K.accountSigningSeed]: trust.accountSigningSeed,
    [K.operatorSigningSeed]: trust.operatorSigningSeed,
    [K.systemCreds]: issueSystemCredentials(trust).creds,
  });
}

/** The trust and JWTs an operator Secret holds; the error names the Secret and key. */
export function trustOf(s: k8s.V1Secret): { trust: NatsTrust; jwts: ServerJwts } {
  const name = s.metadata?.name ?? "?";
  const get = (key: string): string => {
    const v = s.data?.[key];
    if (v === undefined || v === "") throw new Error(`Secret ${name}: key ${key} is missing`);
    return Buffer.from(v, "base64").toString("utf8").trim();
  };
  const K = OPERATOR_KEYS;
  const trust: NatsTrust = {
    operatorSeed: get(K.operatorSeed),
    operatorSigningSeed: get(K.operatorSigningSeed),
    systemAccountSeed: get(K.systemAccountSeed),
    accountSeed: get(K.accountSeed),
    accountSigningSeed: get(K.accountSigningSeed),
  };
  for (const [field, seed] of Object.entries(trust) as [string, string][]) publicKeyOf(seed, `Secret ${name}: ${field}`);
  const jwts: ServerJwts = { operator: get(K.operatorJwt), systemAccount: get(K.systemAccountJwt), account: get(K.accountJwt) };
  for (const [field, jwt] of Object.entries(jwts) as [string, string][]) {
    try {
      decodeJwt(jwt);
    } catch (err) {
      throw new Error(`Secret ${name}: ${field} JWT is not a NATS JWT`, { cause: err });
    }
  }
  return { trust, jwts };
}

function readSecret(core: k8s.CoreV1Api, namespace: string, name: string): Promise<k8s.V1Secret | undefined> {
  return core.readNamespacedSecret({ name, namespace }).catch(ignoreNotFound);
}

/** Creates a Secret unless one of that name exists; true when this call created it. */
async function createIfAbsent(core: k8s.CoreV1Api, namespace: string, body: k8s.V1Secret): Promise<boolean> {
  try {
    await core.createNamespacedSecret({ namespace, body });
    return true;
  } catch (err) {
    if (isConflict(err)) return false;
    throw err;
  }
}

/**
 * Makes sure both Secrets exist: keys are generated only when the operator Secret is
 * absent, the credentials Secret is derived from it when absent; neither is ever changed.
 * Safe to run any number of times and concurrently (the loser of a create race reads the winner's).
 */
export async function bootstrapNatsSecrets(
  core: k8s.CoreV1Api,
  opts: { namespace: string; operatorSecret: string; credentialsSecret: string; now?: () => number },
): Promise<{ trust: NatsTrust; jwts: ServerJwts; created: string[] }> {
  const created: string[] = [];
  let op = await readSecret(core, opts.namespace, opts.operatorSecret);
  if (op === undefined) {
    const trust = createTrust();
    if (await createIfAbsent(core, opts.namespace, operatorSecret(opts.operatorSecret, trust, serverJwts(trust, opts.now?.())))) {
      created.push(opts.operatorSecret);
    }
    op = await readSecret(core, opts.namespace, opts.operatorSecret);
    if (op === undefined) throw new Error(`Secret ${opts.namespace}/${opts.operatorSecret} vanished right after it was created`);
  }
  const { trust, jwts } = trustOf(op);
  if ((await readSecret(core, opts.namespace, opts.credentialsSecret)) === undefined) {
    if (await createIfAbsent(core, opts.namespace, credentialsSecret(opts.credentialsSecret, trust))) created.push(opts.credentialsSecret);
  }
  return { trust, jwts, created };
}

/** What the controller holds to mint worker users and revoke them. */
export interface MintingKeys {
  account: string;
  accountSigningSeed: string;
  /** Both present, or revocation is off (credentials then only expire). */
  revocation?: { operatorSigningSeed: string; systemCreds: string };
}

/** A file's text, undefined when it is missing or blank (a .creds file keeps its line ends: its parser needs them). */
async function readOptional(dir: string, file: string): Promise<string | undefined> {
  try {
    const text = await readFile(join(dir, file), "utf8");
    return text.trim() === "" ? undefined : text;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * Reads the minting keys from a directory holding the credentials Secret's keys as files
 * (the Secret mounted). Undefined when it holds no account signing key (credentials only
 * for gavel itself: workers then get none); an error names the file that is wrong.
 */
export async function readMintingKeys(dir: string): Promise<MintingKeys | undefined> {
  const K = CREDENTIALS_KEYS;
  const signing = (await readOptional(dir, K.accountSigningSeed))?.trim();
  if (signing === undefined) return undefined;
  publicKeyOf(signing, join(dir, K.accountSigningSeed));
  const account = (await readOptional(dir, K.account))?.trim();
  if (account === undefined || !/^A[A-Z2-7]{55}$/.test(account)) {
    throw new Error(`${join(dir, K.account)}: gavel's account public key (A...) is ${account === undefined ? "missing" : "not one"}`);
  }
  const operatorSigningSeed = (await readOptional(dir, K.operatorSigningSeed))?.trim();
  const systemCreds = await readOptional(dir, K.systemCreds);
  if (operatorSigningSeed !== undefined) publicKeyOf(operatorSigningSeed, join(dir, K.operatorSigningSeed));
  if (systemCreds !== undefined) {
    try {
      parseCreds(systemCreds);
    } catch (err) {
      throw new Error(`${join(dir, K.systemCreds)}: ${(err as Error).message}`, { cause: err });
    }
  }
  return {
    account,
    accountSigningSeed: signing,
    ...(operatorSigningSeed !== undefined && systemCreds !== undefined ? { revocation: { operatorSigningSeed, systemCreds } } : {}),
  };
}
