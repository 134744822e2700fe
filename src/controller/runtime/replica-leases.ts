// Which controller replicas are alive: each replica holds a coordination.k8s.io Lease of its
// own, labelled with its group and renewed while it runs, as each kube-apiserver announces itself
// with an identity Lease (KEP-1965). A replica reads the group's Leases from an informer; one not
// renewed within its duration is gone. GuardPolicy enforcement (policy-enforcement.ts) asks this
// which replicas must report a policy before an Agent counts as Ready (ADR 0074).
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { isConflict, isNotFound, messageOf } from "../../errors.js";
import { silentLogger, type Logger } from "../../telemetry/logger.js";
import { Informer, type Resource } from "./informer.js";

/** The label every replica Lease of a group carries (its value: the group). */
export const REPLICA_OF_LABEL = "gavel.dev/replica-of";

/** Options of ReplicaLeases. */
export interface ReplicaLeasesOptions {
  kc: k8s.KubeConfig;
  /** Where the Leases live (the controller's namespace). */
  namespace: string;
  /** Who this replica is (pod name, or hostname + pid): the Lease's holderIdentity. */
  identity: string;
  /** The group of replicas, e.g. gavel-controller: the label's value and the Leases' name prefix. */
  group?: string;
  /** Seconds a Lease counts without renewal. Default 30. */
  leaseDurationSeconds?: number;
  /** How often this replica renews its Lease and looks again at who is alive, in ms. Default 10 000. */
  renewMs?: number;
  /** How long start() waits for the first list of Leases before going on without it, in ms. Default 10 000. */
  listTimeoutMs?: number;
  now?: () => Date;
  logger?: Logger;
}

/** The replicas (holder identities) whose Leases were renewed within their duration at `now`, each with its Lease's acquireTime. */
export function liveHolders(leases: readonly k8s.V1Lease[], now: Date): Map<string, Date> {
  const live = new Map<string, Date>();
  for (const lease of leases) {
    const spec = lease.spec;
    const holder = spec?.holderIdentity;
    if (holder === undefined || holder === "" || spec?.renewTime === undefined) continue;
    const until = new Date(spec.renewTime).getTime() + (spec.leaseDurationSeconds ?? 30) * 1000;
    if (now.getTime() <= until) live.set(holder, new Date(spec.acquireTime ?? spec.renewTime));
  }
  return live;
}

/** The name of a replica's Lease: the group, then the identity made a DNS label (hashed when long or changed). */
export function replicaLeaseName(group: string, identity: string): string {
  const clean = identity
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  const name = `${group}-${clean}`;
  if (clean === identity && name.length <= 63) return name;
  const hash = createHash("sha256").update(identity).digest("hex").slice(0, 10);
  return `${name.slice(0, 63 - 11).replace(/-+$/, "")}-${hash}`;
}

/** This replica's Lease, renewed while it runs, and the group's live replicas read from an informer. */
export class ReplicaLeases {
  private readonly api: k8s.CoordinationV1Api;
  private readonly informer: Informer<k8s.V1Lease>;
  private readonly group: string;
  private readonly name: string;
  private readonly duration: number;
  private readonly renewMs: number;
  private readonly now: () => Date;
  private readonly logger: Logger;
  private readonly listeners: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last = "";
  private stopped = false;
  private announced = false;
  private started = new Date(0);

  constructor(private readonly opts: ReplicaLeasesOptions) {
    this.api = opts.kc.makeApiClient(k8s.CoordinationV1Api);
    this.group = opts.group ?? "gavel-controller";
    this.name = replicaLeaseName(this.group, opts.identity);
    this.duration = opts.leaseDurationSeconds ?? 30;
    this.renewMs = opts.renewMs ?? 10_000;
    this.now = opts.now ?? (() => new Date());
    this.logger = opts.logger ?? silentLogger;
    const labelSelector = `${REPLICA_OF_LABEL}=${this.group}`;
    const api = this.api;
    const leases: Resource<k8s.V1Lease> = {
      kind: "lease",
      labelSelector,
      path: (ns) => `/apis/coordination.k8s.io/v1/namespaces/${ns ?? opts.namespace}/leases`,
      list: (ns) => api.listNamespacedLease({ namespace: ns ?? opts.namespace, labelSelector }),
    };
    this.informer = new Informer<k8s.V1Lease>({ kc: opts.kc, resource: leases, namespaces: [opts.namespace], logger: this.logger });
    this.informer.on(() => this.look());
  }

  /** This replica's identity. */
  get identity(): string {
    return this.opts.identity;
  }

  /** Calls `listener` whenever the set of live replicas changes (a Lease comes, goes or expires). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Lists and watches the group's Leases, then creates this replica's and renews it every renewMs. */
  async start(): Promise<void> {
    // A controller without list/watch on Leases (an older Role) still starts: until the list
    // succeeds no other replica is known, so no report of theirs is dropped and no Agent waits.
    const listed = this.informer.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([listed, new Promise((r) => (timer = setTimeout(r, this.opts.listTimeoutMs ?? 10_000)))]);
    clearTimeout(timer);
    if (!this.informer.synced)
      this.logger.warn(
        { namespace: this.opts.namespace, why: this.informer.unsynced() },
        "replica Leases not listed yet; going on without them",
      );
    this.started = this.now();
    await this.renew();
    this.announced = true;
    this.look();
    this.schedule();
  }

  /** The live replicas and since when each holds its Lease; this one counts while it runs, even before its Lease is seen. */
  live(): Map<string, Date> {
    const live = liveHolders(this.informer.list(this.opts.namespace), this.now());
    if (this.announced && !this.stopped && !live.has(this.opts.identity)) live.set(this.opts.identity, this.started);
    return live;
  }

  /** Whether the group's Leases have been listed (until then no other replica is known to be alive). */
  get synced(): boolean {
    return this.informer.synced;
  }

  /** Stops renewing and deletes this replica's Lease, so the others stop waiting for it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.api.deleteNamespacedLease({ name: this.name, namespace: this.opts.namespace }).catch((err: unknown) => {
      if (!isNotFound(err))
        this.logger.warn({ lease: this.name, err: messageOf(err) }, "deleting the replica Lease failed; it expires by itself");
    });
    await this.informer.stop();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      void this.renew().finally(() => {
        if (this.stopped) return;
        // Expiry is not a watch event: look again on every tick.
        this.look();
        this.schedule();
      });
    }, this.renewMs);
  }

  private look(): void {
    const live = [...this.live().keys()].sort().join(",");
    if (live === this.last) return;
    this.last = live;
    for (const listener of this.listeners) listener();
  }

  /** Creates or renews this replica's Lease; an error is logged and tried again at the next tick. */
  private async renew(): Promise<void> {
    const { namespace, identity } = this.opts;
    const now = new k8s.V1MicroTime(this.now().getTime());
    const spec: k8s.V1LeaseSpec = { holderIdentity: identity, leaseDurationSeconds: this.duration, renewTime: now };
    const metadata = { name: this.name, namespace, labels: { [REPLICA_OF_LABEL]: this.group } };
    try {
      const lease = await this.api.readNamespacedLease({ name: this.name, namespace }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (lease === undefined) {
        await this.api.createNamespacedLease({ namespace, body: { metadata, spec: { ...spec, acquireTime: now } } });
      } else {
        await this.api.replaceNamespacedLease({
          name: this.name,
          namespace,
          body: { metadata: { ...lease.metadata, ...metadata }, spec: { ...lease.spec, ...spec } },
        });
      }
    } catch (err) {
      if (isConflict(err)) return;
      this.logger.warn({ lease: `${namespace}/${this.name}`, err: messageOf(err) }, "renewing the replica Lease failed");
    }
  }
}
