// Per-Execution NATS credentials on Kubernetes: before a worker pod is created the
// controller mints the Execution's user (its own proposal subject out, its own replies in),
// keeps it in a Secret the Execution owns and mounts it into the pod. When the Execution
// ends or is deleted the user is revoked on the server; its JWT also expires at the
// Execution's deadline, so a revocation that never happened still ends it. Judges get none.
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Execution } from "../api/types.js";
import { judgeTimeoutSeconds } from "../engine/durations.js";
import { isTerminal, type AgentPlan } from "../engine/outer-loop.js";
import { isConflict, messageOf } from "../errors.js";
import { AccountRevoker } from "../transport/account-revocations.js";
import { CredentialLedger, type LedgerEntry } from "../transport/credential-ledger.js";
import { issueWorkerCredentials } from "../transport/credentials.js";
import { CHILD_LABELS, labelValue, ownerOf } from "../children/workloads.js";
import type { MintingKeys } from "./nats-secrets.js";
import { silentLogger, type Logger } from "../telemetry/logger.js";
import { WORKER_CREDS_KEY } from "../runtime/kubernetes.js";
import { GavelResources } from "./gavel-resources.js";

/**
 * Name of the Secret holding an Execution's worker credential: `<execution>-nats-<uid[:8]>`.
 * The uid makes each run of a name its own Secret: one of a deleted Execution of the same
 * name, not yet removed by the garbage collector, holds a revoked user and is never adopted
 * (the controller may only create Secrets, never read or replace them).
 */
export function credentialsSecretName(execution: string, uid: string): string {
  const run = uid.replace(/[^a-z0-9]/g, "").slice(0, 8);
  const name = `${execution}-nats-${run}`;
  if (name.length <= 253) return name;
  const hash = createHash("sha256").update(execution).digest("hex").slice(0, 8);
  return `${execution.slice(0, 253 - 23).replace(/[-.]+$/, "")}-${hash}-nats-${run}`;
}

/**
 * When an Execution's worker credential expires (epoch seconds): its deadline
 * (spec.timeoutSeconds or the Agent's timeout_seconds) from its start; without one, the
 * longest run the engine's own deadlines allow (every iteration to its deadline, every
 * validator's judges to theirs) plus ten minutes of scheduling slack.
 */
export function credentialExpiry(plan: AgentPlan, startMs: number): number {
  const overall = plan.limits.executionSeconds;
  if (overall !== undefined) return Math.ceil(startMs / 1000 + overall);
  let validation = 0;
  for (const v of plan.validators) {
    if (v.type === "semantic") validation += judgeTimeoutSeconds(v, plan.judges.get(v.judge_agent)) + 10;
    else if (v.type === "multi_judge") for (const j of v.judges) validation += judgeTimeoutSeconds(v, plan.judges.get(j)) + 10;
    else validation += 60; // a file read
  }
  const perIteration = plan.limits.iterationSeconds + 30 + validation;
  return Math.ceil(startMs / 1000 + plan.limits.maxIterations * perIteration + 600);
}

/** The Secret with an Execution's worker credential, owned by the Execution. */
export function workerCredentialsSecret(ex: Execution, creds: string, user: string, expiresAt: number): k8s.V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: credentialsSecretName(ex.metadata.name, ex.metadata.uid ?? ""),
      labels: { [CHILD_LABELS.execution]: labelValue(ex.metadata.name), [CHILD_LABELS.role]: "worker" },
      // Public facts only: who the user is and until when its JWT is valid.
      annotations: { "gavel.dev/nats-user": user, "gavel.dev/nats-expires": new Date(expiresAt * 1000).toISOString() },
      ownerReferences: [ownerOf(ex)],
    },
    type: "Opaque",
    immutable: true,
    stringData: { [WORKER_CREDS_KEY]: creds },
  };
}

export interface ExecutionCredentialsOptions {
  kc: k8s.KubeConfig;
  keys: MintingKeys;
  /** Connects as gavel's own user (the ledger lives in its account's JetStream). */
  connect: () => Promise<NatsConnection>;
  /** Pushes revocations; without it a credential only expires. */
  revoker?: AccountRevoker;
  /** How often the ledger is checked against the Executions that exist; default 60 s, 0 = never. */
  sweepMs?: number;
  /** Replicas of the ledger's stream on a JetStream cluster; undefined keeps an existing stream's. */
  streamReplicas?: number;
  /** Only the leader sweeps (two writers of the account JWT could lose an update). Default: always. */
  isLeader?: () => boolean;
  now?: () => number;
  logger?: Logger;
}

/** Mints, records and revokes the worker credentials of Executions. */
export class ExecutionCredentials {
  /** Figures for logs and tests: time to a ready credential, revocations made. */
  readonly stats = { minted: 0, revoked: 0, lastMintMs: 0, lastRevokeMs: 0 };
  private readonly core: k8s.CoreV1Api;
  private readonly resources: GavelResources;
  private readonly now: () => number;
  private readonly logger: Logger;
  private ledger: Promise<CredentialLedger> | undefined;
  /** Users that may still work, by public key: the ledger as this process knows it. */
  private readonly live = new Map<string, LedgerEntry>();
  private loaded = false;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(private readonly opts: ExecutionCredentialsOptions) {
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
    this.resources = new GavelResources(opts.kc);
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger ?? silentLogger;
    if (opts.keys.revocation === undefined || opts.revoker === undefined) {
      this.logger.warn(
        "NATS revocation is off (no operator signing key or system credentials): worker credentials end only at their Execution's deadline",
      );
    }
  }

  /** Starts the periodic sweep (the first one at once; a NATS outage is logged and retried). */
  start(): void {
    const every = this.opts.sweepMs ?? 60_000;
    this.sweepSoon();
    if (every > 0) this.timer = setInterval(() => this.sweepSoon(), every);
  }

  /** Stops sweeping; in-flight work finishes first. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.sweeping;
    await this.opts.revoker?.close();
    const ledger = await this.ledger?.catch(() => undefined);
    await ledger?.connection.close().catch(() => undefined);
  }

  /**
   * Makes sure the Execution's worker credential exists: mints it (the same user for the
   * same Execution uid), records it in the ledger, creates its Secret; returns the Secret's
   * name. Users minted for an earlier Execution of the same name are revoked first.
   */
  async ensure(ex: Execution, plan: AgentPlan, startMs: number): Promise<string> {
    const t0 = this.now();
    const namespace = ex.metadata.namespace ?? "default";
    const uid = ex.metadata.uid;
    if (uid === undefined || uid === "") throw new Error(`Execution ${namespace}/${ex.metadata.name} has no uid`);
    const expiresAt = credentialExpiry(plan, startMs);
    const creds = issueWorkerCredentials(this.opts.keys, namespace, ex.metadata.name, { expiresAt, uid, nowMs: this.now() });
    const ledger = await this.loadedLedger();
    const stale = [...this.live.values()].filter((e) => e.namespace === namespace && e.name === ex.metadata.name && e.uid !== uid);
    if (stale.length > 0) await this.revoke(stale);
    const known = this.live.get(creds.publicKey);
    if (known === undefined || known.expiresAt < expiresAt) {
      // Recorded before the Secret exists: a user the ledger does not know could never be revoked.
      const entry: LedgerEntry = { user: creds.publicKey, namespace, name: ex.metadata.name, uid, expiresAt };
      await ledger.put(entry);
      this.live.set(entry.user, entry);
    }
    const body = workerCredentialsSecret(ex, creds.creds, creds.publicKey, expiresAt);
    try {
      await this.core.createNamespacedSecret({ namespace, body });
      this.stats.minted++;
      this.stats.lastMintMs = this.now() - t0;
    } catch (err) {
      // Minted before (a retried reconcile, a restarted controller): the same user, keep it.
      if (!isConflict(err)) throw err;
    }
    return body.metadata?.name as string;
  }

  /**
   * Revokes the worker users of an Execution that ended or is gone (all of that name
   * without a uid). Only users this process knows from the ledger cost any I/O.
   */
  async release(namespace: string, name: string, uid?: string): Promise<void> {
    const mine = [...this.live.values()].filter(
      (e) => e.namespace === namespace && e.name === name && (uid === undefined || e.uid === uid),
    );
    if (mine.length > 0) await this.revoke(mine);
  }

  /** Checks every recorded user against its Execution: gone, replaced or finished means revoked. */
  async sweep(): Promise<void> {
    // Read again: another replica (before a leader change) may have recorded users.
    this.loaded = false;
    const ledger = await this.loadedLedger();
    const now = this.now() / 1000;
    const ended: LedgerEntry[] = [];
    for (const e of [...this.live.values()]) {
      if (e.expiresAt < now) {
        // Expired: the server refuses it anyway, and the account's revocation of it is pruned.
        await ledger.remove(e.user);
        this.live.delete(e.user);
        continue;
      }
      const ex = await this.resources.execution(e.namespace, e.name);
      if (ex === undefined || ex.metadata.uid !== e.uid || isTerminal(ex.status?.phase)) ended.push(e);
    }
    if (ended.length > 0) await this.revoke(ended);
  }

  private sweepSoon(): void {
    if (this.sweeping !== undefined || (this.opts.isLeader !== undefined && !this.opts.isLeader())) return;
    this.sweeping = this.sweep()
      .catch((err: unknown) => this.logger.warn({ err: messageOf(err) }, "NATS credential sweep failed (retried in the next one)"))
      .finally(() => (this.sweeping = undefined));
  }

  /** Revokes users on the server (when revocation is on), then forgets them. */
  private async revoke(entries: LedgerEntry[]): Promise<void> {
    const t0 = this.now();
    const ledger = await this.loadedLedger();
    if (this.opts.revoker !== undefined) {
      await this.opts.revoker.revoke(Object.fromEntries(entries.map((e) => [e.user, e.expiresAt])));
      this.stats.revoked += entries.length;
      this.stats.lastRevokeMs = this.now() - t0;
      for (const e of entries) {
        await ledger.remove(e.user);
        this.live.delete(e.user);
      }
      this.logger.info(
        { executions: entries.map((e) => `${e.namespace}/${e.name}`), ms: this.now() - t0 },
        "revoked NATS worker credentials",
      );
    }
    // Without revocation the entries stay until they expire: the sweep drops them then.
  }

  private async loadedLedger(): Promise<CredentialLedger> {
    if (this.ledger !== undefined) {
      const l = await this.ledger.catch(() => undefined);
      if (l === undefined || l.connection.isClosed()) this.ledger = undefined;
    }
    this.ledger ??= this.opts.connect().then((nc) => CredentialLedger.open(nc, this.opts.streamReplicas));
    const ledger = await this.ledger.catch((err: unknown) => {
      this.ledger = undefined;
      throw new Error(`the NATS credential ledger is not reachable: ${messageOf(err)}`, { cause: err });
    });
    if (!this.loaded) {
      for (const e of await ledger.list()) this.live.set(e.user, e);
      this.loaded = true;
    }
    return ledger;
  }
}

/** ExecutionCredentials for a NATS server at `servers`, from the keys of the credentials Secret. */
export function executionCredentials(opts: {
  kc: k8s.KubeConfig;
  keys: MintingKeys;
  servers: string;
  /** gavel's own user (.creds text), for the ledger. */
  controllerCreds?: Uint8Array;
  sweepMs?: number;
  streamReplicas?: number;
  isLeader?: () => boolean;
  logger?: Logger;
}): ExecutionCredentials {
  const dial = (creds: Uint8Array | undefined) => () =>
    connect({
      servers: opts.servers,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
      ...(creds !== undefined ? { authenticator: credsAuthenticator(creds) } : {}),
    });
  const r = opts.keys.revocation;
  const revoker =
    r === undefined
      ? undefined
      : new AccountRevoker({
          connect: dial(new TextEncoder().encode(r.systemCreds)),
          account: opts.keys.account,
          operatorSigningSeed: r.operatorSigningSeed,
        });
  return new ExecutionCredentials({
    kc: opts.kc,
    keys: opts.keys,
    connect: dial(opts.controllerCreds),
    ...(revoker !== undefined ? { revoker } : {}),
    ...(opts.sweepMs !== undefined ? { sweepMs: opts.sweepMs } : {}),
    ...(opts.streamReplicas !== undefined ? { streamReplicas: opts.streamReplicas } : {}),
    ...(opts.isLeader !== undefined ? { isLeader: opts.isLeader } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
  });
}
