// Feeds the guard's PolicyStore from GuardPolicy objects in the Kubernetes API: lists and watches
// them, recompiles on every change (hot reload) and reports each object's compile result in its status.
import type * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import { findCondition, setCondition } from "../api/conditions.js";
import { DEFAULT_GUARD_POLICY, type GuardPolicy, type GuardPolicySpec, type GuardPolicyStatus } from "../api/types.js";
import type { NamedPolicy, PolicyStore } from "../gate/guard.js";
import type { Logger } from "../telemetry/logger.js";
import { messageOf } from "../errors.js";
import { Controller } from "./runtime/controller.js";
import { customResource, Informer, splitKey } from "./runtime/informer.js";
import type { Registry } from "../telemetry/metrics.js";
import { GavelResources } from "./gavel-resources.js";
import { policyLag, replicaEntries, sameEntries, withMyEntry, type LiveReplicas, type ReplicaEnforcement } from "./policy-enforcement.js";

/** The replicas of the controller as GuardPolicySource sees them (runtime/replica-leases.ts). */
export interface Replicas {
  /** This replica's name in status.replicas. */
  readonly identity: string;
  /** Whether the other replicas are known yet (until then no entry of theirs is dropped). */
  readonly synced: boolean;
  /** The live replicas and since when each is alive. */
  live(): LiveReplicas;
}

const PLURAL = "guardpolicies";

/** Options of a GuardPolicySource. */
export interface GuardPolicySourceOptions {
  kc: k8s.KubeConfig;
  store: PolicyStore;
  /** Where the cluster default policy `default` lives; must be the one the store was built with. */
  controllerNamespace: string;
  /** Namespaces to watch (the controller's is always added); all namespaces when omitted. */
  namespaces?: readonly string[];
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  /** Server-side watch timeout; the watch then resumes from the last resourceVersion. */
  watchTimeoutSeconds?: number;
  /** Whether to write `status` (Ready condition, observedGeneration, counts); default true. */
  writeStatus?: boolean;
  logger?: Logger;
  /** Where its counters live (the runtime's, labelled controller="guardpolicy"); default its own. */
  metrics?: Registry;
  /** The controller's replicas: each reports in status.replicas the generation its guard took in (ADR 0074). */
  replicas?: Replicas;
  /** Called after each reconcile of a policy (a change of its status included): Agents' Ready may follow. */
  onReconciled?: () => void;
}

/** The outcome of the last compile of one object, as written to its status. */
export interface PolicyOutcome {
  /** The object the outcome is for: a recreated policy of the same name is compiled afresh. */
  uid: string;
  generation: number;
  ready: boolean;
  message: string;
}

interface Accepted {
  uid: string;
  generation: number;
  policy: NamedPolicy;
}

/**
 * The pure part: the accepted (last good) version of each policy and the outcome of each
 * object's last compile, brought in line with the observed objects one key at a time.
 */
export class GuardPolicyCompiler {
  private readonly accepted = new Map<string, Accepted>();
  private readonly outcomes = new Map<string, PolicyOutcome>();

  constructor(
    private readonly store: PolicyStore,
    private readonly logger?: Logger,
  ) {}

  /** The last compile outcome of `namespace/name`, if it was seen. */
  outcome(namespace: string, name: string): PolicyOutcome | undefined {
    return this.outcomes.get(`${namespace}/${name}`);
  }

  /** The generation of the version of key `k` in force (the last that compiled), if any. */
  enforcedGeneration(k: string): number | undefined {
    return this.accepted.get(k)?.generation;
  }

  /**
   * Level-triggered: brings the accepted set for key `k` in line with `obj` (undefined: gone).
   * Accepted policies whose objects are no longer observed are dropped first, so a compile never
   * includes a removed policy. A spec that does not compile is not accepted; the key's last good
   * version stays in the store. Returns the key's outcome (undefined when the object is gone).
   */
  reconcile(k: string, obj: GuardPolicy | undefined, observed: (key: string) => boolean): PolicyOutcome | undefined {
    let removed = false;
    for (const key of [...this.accepted.keys()]) {
      if (key !== k && !observed(key)) {
        this.accepted.delete(key);
        this.outcomes.delete(key);
        removed = true;
      }
    }
    const had = this.accepted.get(k);
    if (obj === undefined) {
      this.outcomes.delete(k);
      if (had !== undefined) this.accepted.delete(k);
      if (had !== undefined || removed) this.publish();
      return undefined;
    }
    const generation = obj.metadata.generation ?? 0;
    const uid = obj.metadata.uid ?? "";
    const known = this.outcomes.get(k);
    // A status write or a relist of the same generation changes nothing to compile.
    if (known !== undefined && known.generation === generation && known.uid === uid) {
      if (removed) this.publish();
      return known;
    }
    const candidate = new Map(this.accepted);
    candidate.set(k, {
      uid,
      generation,
      policy: { name: obj.metadata.name ?? "", namespace: obj.metadata.namespace ?? "", spec: obj.spec },
    });
    let outcome: PolicyOutcome;
    try {
      this.store.update([...candidate.values()].map((a) => a.policy));
      this.accepted.set(k, candidate.get(k) as Accepted);
      outcome = { uid, generation, ready: true, message: `compiled; store version ${this.store.version}` };
    } catch (err) {
      // A policy recreated under the same name must not keep the deleted object's rules.
      if (had !== undefined && had.uid !== uid) {
        this.accepted.delete(k);
        removed = true;
      }
      if (removed) this.publish();
      outcome = { uid, generation, ready: false, message: messageOf(err) };
      this.logger?.warn({ policy: k, generation, err: outcome.message }, "GuardPolicy rejected; previous version stays in force");
    }
    this.outcomes.set(k, outcome);
    return outcome;
  }

  /** Pushes the accepted set to the store after a removal (which cannot add a compile error). */
  private publish(): void {
    try {
      this.store.update([...this.accepted.values()].map((a) => a.policy));
    } catch (err) {
      this.logger?.error({ err }, "GuardPolicy set failed to compile after a removal");
    }
  }
}

/** Lists and watches GuardPolicies and keeps `store` equal to the last good version of each. */
export class GuardPolicySource {
  private readonly compiler: GuardPolicyCompiler;
  private readonly policies: Informer<GuardPolicy>;
  private readonly controller: Controller<GuardPolicy>;
  private readonly resources: GavelResources;

  constructor(private readonly opts: GuardPolicySourceOptions) {
    this.resources = new GavelResources(opts.kc);
    this.compiler = new GuardPolicyCompiler(opts.store, opts.logger);
    const logger = opts.logger !== undefined ? { logger: opts.logger } : {};
    this.policies = new Informer<GuardPolicy>({
      kc: opts.kc,
      resource: customResource<GuardPolicy>(opts.kc, "guardpolicy", PLURAL),
      ...(opts.namespaces !== undefined ? { namespaces: [opts.controllerNamespace, ...opts.namespaces] } : {}),
      ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
      watchTimeoutSeconds: opts.watchTimeoutSeconds ?? 300,
      ...logger,
    });
    this.controller = new Controller<GuardPolicy>({
      name: "guardpolicy",
      kc: opts.kc,
      primary: { informer: this.policies },
      reconcile: (key) => this.reconcile(key),
      workers: 1,
      ...logger,
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
    });
  }

  /** Starts listing and watching; resolves once every scope's initial list is in the store. */
  async start(): Promise<void> {
    await this.controller.start();
    // The store is filled before start() resolves (the queue writes the statuses after).
    for (const obj of this.policies.list()) this.compile(keyOf(obj));
  }

  /** Why the caches are not synced yet (the informers still waiting for a first list), or undefined once they are (readiness). */
  unsynced(): string | undefined {
    return this.controller.unsynced();
  }

  /** Stops every watch and waits for an in-flight status write. */
  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** The last compile outcome of `namespace/name`, if it was seen. */
  outcome(namespace: string, name: string): PolicyOutcome | undefined {
    return this.compiler.outcome(namespace, name);
  }

  /** Reconciles every policy again (the set of live replicas changed: entries of gone ones are dropped). */
  requeueAll(): void {
    this.controller.requeueAll();
  }

  /**
   * Why the policies covering `namespace` (its own and the cluster default) are not yet in force
   * on every live replica, or undefined when they are (or replicas are not tracked).
   */
  lagging(namespace: string): string | undefined {
    const replicas = this.opts.replicas;
    if (replicas === undefined || !replicas.synced) return undefined;
    const covering = [
      ...this.policies.list(namespace),
      ...(namespace === this.opts.controllerNamespace ? [] : this.policies.list(this.opts.controllerNamespace)).filter(
        (p) => p.metadata.name === DEFAULT_GUARD_POLICY,
      ),
    ];
    return policyLag(covering, replicas.live(), new Date());
  }

  /** How many full lists were made after the first one (reconnects after errors or 410 Gone). */
  get relistCount(): number {
    return this.policies.relistCount;
  }

  private compile(k: string): { obj: GuardPolicy; outcome: PolicyOutcome } | undefined {
    const { namespace, name } = splitKey(k);
    const obj = this.policies.get(name, namespace);
    const outcome = this.compiler.reconcile(k, obj, (key) => {
      const at = splitKey(key);
      return this.policies.get(at.name, at.namespace) !== undefined;
    });
    return obj === undefined || outcome === undefined ? undefined : { obj, outcome };
  }

  /** Compiles the key's object into the store, then writes its status when it does not already say the outcome. */
  private async reconcile(k: string): Promise<void> {
    try {
      await this.compileAndReport(k);
    } finally {
      this.opts.onReconciled?.();
    }
  }

  private async compileAndReport(k: string): Promise<void> {
    const compiled = this.compile(k);
    if (compiled === undefined || this.opts.writeStatus === false) return;
    const { obj, outcome } = compiled;
    const replicas = this.replicasAfter(k, obj, outcome);
    const ready = findCondition(obj.status?.conditions, "Ready");
    const want = outcome.ready ? "True" : "False";
    const sameReplicas = replicas === undefined || sameEntries(replicaEntries(obj.status), replicas);
    if (
      obj.status?.observedGeneration === outcome.generation &&
      ready?.status === want &&
      ready.message === statusMessage(outcome) &&
      sameReplicas
    )
      return;
    const status = desiredStatus(obj, outcome, new Date(), replicas);
    const { namespace, name } = splitKey(k);
    // Written after the store took the policy in: once a replica's entry says generation N, its
    // guard decides every call under N. The resourceVersion makes two replicas' writes of
    // status.replicas a conflict (retried) instead of one dropping the other's entry.
    const precondition = replicas === undefined ? {} : { metadata: { resourceVersion: obj.metadata.resourceVersion } };
    // Gone already: nothing to write. Anything else is thrown and retried with backoff.
    await this.resources.patchStatus(PLURAL, namespace, name, { ...precondition, status });
  }

  /** status.replicas once this replica reports what its guard took in for key `k`; undefined when replicas are not tracked. */
  private replicasAfter(k: string, obj: GuardPolicy, outcome: PolicyOutcome): ReplicaEnforcement[] | undefined {
    const replicas = this.opts.replicas;
    if (replicas === undefined) return undefined;
    const enforced = this.compiler.enforcedGeneration(k);
    const mine: ReplicaEnforcement = {
      name: replicas.identity,
      observedGeneration: outcome.generation,
      ...(enforced !== undefined ? { enforcedGeneration: enforced } : {}),
    };
    return withMyEntry(replicaEntries(obj.status), mine, replicas.synced ? replicas.live() : undefined);
  }
}

/** The status for an object given its compile outcome; lastTransitionTime moves only on a change (setCondition). */
export function desiredStatus(obj: GuardPolicy, outcome: PolicyOutcome, now: Date, replicas?: ReplicaEnforcement[]): GuardPolicyStatus {
  const ready = {
    type: "Ready",
    status: outcome.ready ? "True" : "False",
    reason: outcome.ready ? "Compiled" : "CompileError",
    message: statusMessage(outcome),
  } as const;
  return {
    observedGeneration: outcome.generation,
    counts: specCounts(obj.spec),
    conditions: setCondition(obj.status?.conditions, ready, now, outcome.generation),
    ...(replicas !== undefined ? { replicas } : {}),
  };
}

/** Entries per list of a spec, e.g. {revoked_tools: 3}; empty lists are left out. */
export function specCounts(spec: GuardPolicySpec): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [field, value] of Object.entries(spec as Record<string, unknown>)) {
    const n = Array.isArray(value) ? value.length : typeof value === "object" && value !== null ? Object.keys(value).length : 0;
    if (n > 0) counts[field] = n;
  }
  return counts;
}

function statusMessage(outcome: PolicyOutcome): string {
  // The store version in the success text changes with every update; keep status writes stable.
  return outcome.ready ? "policy compiled and in force" : `${outcome.message}; the previous version stays in force`;
}

function keyOf(o: GuardPolicy): string {
  return `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;
}
