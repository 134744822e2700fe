// Leader election for the controller runtime: a coordination.k8s.io Lease held by one
// `gavel controller` replica at a time (client-go's leaderelection, in small). The holder
// renews it; another replica takes it over once it has not been renewed for its duration.
import * as k8s from "@kubernetes/client-node";
import { isConflict, isNotFound } from "../../errors.js";
import { silentLogger, type Logger } from "../../telemetry/logger.js";
import { leaderElectionMetric, type Gauge, type Registry } from "../../telemetry/metrics.js";

/** Options of LeaderLease. */
export interface LeaderLeaseOptions {
  kc: k8s.KubeConfig;
  namespace: string;
  /** Lease name; default gavel-execution-controller. */
  name?: string;
  /** Who this replica is (pod name, hostname + pid). */
  identity: string;
  /** Seconds a lease stays valid without renewal. Default 15. */
  leaseDurationSeconds?: number;
  /** How often the holder renews and a candidate retries, in ms. Default 2 000. */
  retryMs?: number;
  now?: () => Date;
  logger?: Logger;
  /** Where leader_election_master_status{name} says whether this replica holds the Lease. */
  metrics?: Registry;
}

/** The decision for one attempt, from the Lease as read (pure, so it is unit-tested). */
export function leaseAction(lease: k8s.V1Lease | undefined, identity: string, now: Date): "create" | "renew" | "take" | "wait" {
  if (lease === undefined) return "create";
  const spec = lease.spec ?? {};
  if (spec.holderIdentity === identity) return "renew";
  if (spec.holderIdentity === undefined || spec.holderIdentity === "") return "take";
  const renewed = spec.renewTime === undefined ? 0 : new Date(spec.renewTime).getTime();
  const duration = (spec.leaseDurationSeconds ?? 15) * 1000;
  return now.getTime() > renewed + duration ? "take" : "wait";
}

/** One replica's hold on the Lease: acquire() resolves once it leads; onLost fires if it stops leading. */
export class LeaderLease {
  private readonly api: k8s.CoordinationV1Api;
  private readonly name: string;
  private readonly duration: number;
  private readonly retryMs: number;
  private readonly now: () => Date;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private leadingNow = false;
  private readonly status: Gauge | undefined;
  private inflight: Promise<boolean> | undefined;

  constructor(private readonly opts: LeaderLeaseOptions) {
    this.api = opts.kc.makeApiClient(k8s.CoordinationV1Api);
    this.name = opts.name ?? "gavel-execution-controller";
    this.duration = opts.leaseDurationSeconds ?? 15;
    this.retryMs = opts.retryMs ?? 2000;
    this.now = opts.now ?? (() => new Date());
    this.logger = opts.logger ?? silentLogger;
    this.status = opts.metrics === undefined ? undefined : leaderElectionMetric(opts.metrics);
    this.status?.set({ name: this.name }, 0);
  }

  private get leading(): boolean {
    return this.leadingNow;
  }

  private set leading(v: boolean) {
    this.leadingNow = v;
    this.status?.set({ name: this.name }, v ? 1 : 0);
  }

  /** Whether this replica holds the Lease now. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Tries until this replica holds the Lease (or stop() is called), then keeps renewing it. */
  async acquire(onLost: () => void): Promise<boolean> {
    while (!this.stopped) {
      this.inflight = this.attempt();
      if (await this.inflight) {
        this.leading = true;
        if (this.stopped) {
          // stop() ran while this attempt was in flight: hand the Lease back at once.
          await this.stop();
          return false;
        }
        this.logger.info({ lease: `${this.opts.namespace}/${this.name}`, identity: this.opts.identity }, "leader lease acquired");
        this.renewLoop(onLost);
        return true;
      }
      await new Promise((r) => setTimeout(r, this.retryMs));
    }
    return false;
  }

  /** Stops renewing and hands the Lease back (holder cleared) so another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    // A renewal in flight would write this replica back in after the hand-back.
    await this.inflight?.catch(() => undefined);
    if (!this.leading) return;
    this.leading = false;
    try {
      const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.opts.namespace });
      if (lease.spec?.holderIdentity !== this.opts.identity) return;
      lease.spec.holderIdentity = "";
      await this.api.replaceNamespacedLease({ name: this.name, namespace: this.opts.namespace, body: lease });
    } catch {
      // It expires by itself.
    }
  }

  private renewLoop(onLost: () => void): void {
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      this.inflight = this.attempt();
      void this.inflight.then(
        (ok) => {
          if (this.stopped) return;
          if (ok) return this.renewLoop(onLost);
          this.leading = false;
          this.logger.warn({ lease: `${this.opts.namespace}/${this.name}`, identity: this.opts.identity }, "leader lease lost");
          onLost();
        },
        () => undefined,
      );
    }, this.retryMs);
  }

  /** One create/renew/take; true when this replica holds the Lease afterwards. */
  private async attempt(): Promise<boolean> {
    const { namespace, identity } = this.opts;
    let lease: k8s.V1Lease | undefined;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace });
    } catch (err) {
      if (!isNotFound(err)) return this.stillValid();
    }
    const action = leaseAction(lease, identity, this.now());
    if (action === "wait" || this.stopped) return false;
    const now = this.now();
    const spec: k8s.V1LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: this.duration,
      renewTime: new k8s.V1MicroTime(now.getTime()),
      acquireTime:
        action === "renew" && lease?.spec?.acquireTime !== undefined
          ? new k8s.V1MicroTime(new Date(lease.spec.acquireTime).getTime())
          : new k8s.V1MicroTime(now.getTime()),
      leaseTransitions: (lease?.spec?.leaseTransitions ?? 0) + (action === "take" ? 1 : 0),
    };
    try {
      if (action === "create") {
        await this.api.createNamespacedLease({ namespace, body: { metadata: { name: this.name }, spec } });
      } else {
        // The resourceVersion read makes a concurrent take a 409: only one replica wins.
        await this.api.replaceNamespacedLease({
          name: this.name,
          namespace,
          body: { metadata: { ...lease?.metadata, name: this.name }, spec },
        });
      }
      this.lastRenew = now.getTime();
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      return this.stillValid();
    }
  }
  private lastRenew = 0;

  // An API error is not a loss while the last renewal is still valid.
  private stillValid(): boolean {
    return this.leading && this.now().getTime() < this.lastRenew + this.duration * 1000;
  }
}
