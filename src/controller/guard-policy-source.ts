// Feeds the guard's PolicyStore from GuardPolicy objects in the Kubernetes API: lists and watches
// them, recompiles on every change (hot reload) and reports each object's compile result in its status.
import * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Condition, type GuardPolicy, type GuardPolicySpec, type GuardPolicyStatus } from "../api/types.js";
import type { NamedPolicy } from "../gate/guard/policy.js";
import type { PolicyStore } from "../gate/guard/policy-store.js";
import type { Logger } from "../telemetry/logger.js";
import { messageOf } from "../errors.js";

const PLURAL = "guardpolicies";

/** Options of a GuardPolicySource. */
export interface GuardPolicySourceOptions {
  kc: k8s.KubeConfig;
  store: PolicyStore;
  /** Where the cluster default policy `default` lives; must be the one the store was built with. */
  controllerNamespace: string;
  /** Namespaces to watch (the controller's is always added); all namespaces when omitted. */
  namespaces?: readonly string[];
  /** Server-side watch timeout; the watch then resumes from the last resourceVersion. */
  watchTimeoutSeconds?: number;
  /** Whether to write `status` (Ready condition, observedGeneration, counts); default true. */
  writeStatus?: boolean;
  logger?: Logger;
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

/** Lists and watches GuardPolicies and keeps `store` equal to the last good version of each. */
export class GuardPolicySource {
  private readonly observed = new Map<string, GuardPolicy>();
  private readonly accepted = new Map<string, Accepted>();
  private readonly outcomes = new Map<string, PolicyOutcome>();
  private readonly streams: PolicyStream[];
  private readonly api: k8s.CustomObjectsApi;
  private statusQueue: Promise<void> = Promise.resolve();
  private stopped = false;
  private relists = 0;

  constructor(private readonly opts: GuardPolicySourceOptions) {
    this.api = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    const scopes: (string | undefined)[] =
      opts.namespaces === undefined ? [undefined] : [...new Set([opts.controllerNamespace, ...opts.namespaces])];
    this.streams = scopes.map((ns) => new PolicyStream(this, opts.kc, this.api, ns, opts.watchTimeoutSeconds ?? 300, opts.logger));
  }

  /** Starts listing and watching; resolves once every scope's initial list is in the store. */
  async start(): Promise<void> {
    await Promise.all(this.streams.map((s) => s.start()));
  }

  /** Stops every watch and waits for pending status writes. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.streams.map((s) => s.stop()));
    await this.statusQueue;
  }

  /** The last compile outcome of `namespace/name`, if it was seen. */
  outcome(namespace: string, name: string): PolicyOutcome | undefined {
    return this.outcomes.get(key(namespace, name));
  }

  /** How many full lists were made after the first one (reconnects after errors or 410 Gone). */
  get relistCount(): number {
    return this.relists;
  }

  /** Called by a stream with a full list of its scope: objects missing from it were deleted. */
  replaceScope(namespace: string | undefined, items: readonly GuardPolicy[], initial: boolean): void {
    if (!initial) this.relists++;
    const listed = new Set(items.map((o) => keyOf(o)));
    for (const [k, o] of this.observed) {
      if ((namespace === undefined || o.metadata.namespace === namespace) && !listed.has(k)) this.observed.delete(k);
    }
    for (const o of items) this.observed.set(keyOf(o), o);
    this.reconcileAll();
  }

  /** Called by a stream for one watch event. */
  observe(type: "ADDED" | "MODIFIED" | "DELETED", obj: GuardPolicy): void {
    const k = keyOf(obj);
    if (type === "DELETED") this.observed.delete(k);
    else this.observed.set(k, obj);
    this.reconcile(k);
  }

  private reconcileAll(): void {
    // Deletions first so that a relist never compiles a set that still holds a removed policy.
    for (const k of new Set([...this.accepted.keys(), ...this.outcomes.keys()])) if (!this.observed.has(k)) this.reconcile(k);
    for (const k of [...this.observed.keys()]) this.reconcile(k);
  }

  /**
   * Level-triggered: brings the accepted set for one key in line with the observed object. A spec
   * that does not compile is not accepted; the key's last good version stays in the store.
   */
  private reconcile(k: string): void {
    const obj = this.observed.get(k);
    const had = this.accepted.get(k);
    if (obj === undefined) {
      this.outcomes.delete(k);
      if (had === undefined) return;
      this.accepted.delete(k);
      this.publish();
      return;
    }
    const generation = obj.metadata.generation ?? 0;
    const uid = obj.metadata.uid ?? "";
    const known = this.outcomes.get(k);
    // A status write or a relist of the same generation changes nothing to compile.
    if (known !== undefined && known.generation === generation && known.uid === uid) {
      this.ensureStatus(obj, known);
      return;
    }
    const candidate = new Map(this.accepted);
    candidate.set(k, { uid, generation, policy: { name: obj.metadata.name ?? "", namespace: obj.metadata.namespace ?? "", spec: obj.spec } });
    let outcome: PolicyOutcome;
    try {
      this.opts.store.update([...candidate.values()].map((a) => a.policy));
      this.accepted.set(k, candidate.get(k) as Accepted);
      outcome = { uid, generation, ready: true, message: `compiled; store version ${this.opts.store.version}` };
    } catch (err) {
      // A policy recreated under the same name must not keep the deleted object's rules.
      if (had !== undefined && had.uid !== uid) {
        this.accepted.delete(k);
        this.publish();
      }
      outcome = { uid, generation, ready: false, message: messageOf(err) };
      this.opts.logger?.warn({ policy: k, generation, err: outcome.message }, "GuardPolicy rejected; previous version stays in force");
    }
    this.outcomes.set(k, outcome);
    this.ensureStatus(obj, outcome);
  }

  /** Pushes the accepted set to the store after a removal (which cannot add a compile error). */
  private publish(): void {
    try {
      this.opts.store.update([...this.accepted.values()].map((a) => a.policy));
    } catch (err) {
      this.opts.logger?.error({ err }, "GuardPolicy set failed to compile after a removal");
    }
  }

  /** Queues a status write when the object's status does not already say `outcome`. */
  private ensureStatus(obj: GuardPolicy, outcome: PolicyOutcome): void {
    if (this.opts.writeStatus === false || this.stopped) return;
    const ready = obj.status?.conditions?.find((c) => c.type === "Ready");
    const want = outcome.ready ? "True" : "False";
    if (obj.status?.observedGeneration === outcome.generation && ready?.status === want && ready.message === statusMessage(outcome)) return;
    const status = desiredStatus(obj, outcome, new Date());
    const namespace = obj.metadata.namespace ?? "";
    const name = obj.metadata.name ?? "";
    this.statusQueue = this.statusQueue.then(async () => {
      if (this.stopped) return;
      try {
        await this.api.patchNamespacedCustomObjectStatus(
          { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
        );
      } catch (err) {
        // Gone already, or a transient error: the next event or relist writes it again.
        this.opts.logger?.debug({ policy: `${namespace}/${name}`, err }, "GuardPolicy status write failed");
      }
    });
  }
}

/** The status for an object given its compile outcome; lastTransitionTime moves only on a change. */
export function desiredStatus(obj: GuardPolicy, outcome: PolicyOutcome, now: Date): GuardPolicyStatus {
  const previous = obj.status?.conditions?.find((c) => c.type === "Ready");
  const status = outcome.ready ? "True" : "False";
  const ready: Condition = {
    type: "Ready",
    status,
    reason: outcome.ready ? "Compiled" : "CompileError",
    message: statusMessage(outcome),
    lastTransitionTime: previous?.status === status ? previous.lastTransitionTime : now.toISOString(),
    observedGeneration: outcome.generation,
  };
  const others = (obj.status?.conditions ?? []).filter((c) => c.type !== "Ready");
  return { observedGeneration: outcome.generation, counts: specCounts(obj.spec), conditions: [...others, ready] };
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

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function keyOf(o: GuardPolicy): string {
  return key(o.metadata.namespace ?? "", o.metadata.name ?? "");
}

/** How a watch ended: cleanly (resume from the last resourceVersion), or needing a full list. */
type WatchEnd = { relist: false } | { relist: true; err: unknown };

/** List + watch of one scope (a namespace, or all), reconnecting with a relist after errors. */
class PolicyStream {
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly source: GuardPolicySource,
    private readonly kc: k8s.KubeConfig,
    private readonly api: k8s.CustomObjectsApi,
    private readonly namespace: string | undefined,
    private readonly timeoutSeconds: number,
    private readonly logger: Logger | undefined,
  ) {}

  /** Lists once (errors reject), then watches in the background. */
  async start(): Promise<void> {
    let rv = await this.list(true);
    this.loop = (async () => {
      let backoffMs = 200;
      let needList = false;
      while (!this.stopped) {
        try {
          if (needList) rv = await this.list(false);
          const end = await this.watchFrom(rv, (v) => (rv = v));
          needList = end.relist;
          if (!end.relist) {
            backoffMs = 200;
            continue;
          }
          this.logger?.info({ scope: this.namespace ?? "*", err: end.err }, "GuardPolicy watch broke; relisting");
        } catch (err) {
          needList = true;
          this.logger?.warn({ scope: this.namespace ?? "*", err }, "GuardPolicy list failed; retrying");
        }
        await this.sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
    await this.loop;
  }

  private async list(initial: boolean): Promise<string> {
    const list = (
      this.namespace === undefined
        ? await this.api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })
        : await this.api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL })
    ) as { items: GuardPolicy[]; metadata?: { resourceVersion?: string } };
    if (this.stopped) return "";
    this.source.replaceScope(this.namespace, list.items, initial);
    return list.metadata?.resourceVersion ?? "";
  }

  private watchFrom(resourceVersion: string, seen: (rv: string) => void): Promise<WatchEnd> {
    const path =
      this.namespace === undefined
        ? `/apis/${GROUP}/${VERSION}/${PLURAL}`
        : `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${PLURAL}`;
    return new Promise<WatchEnd>((resolve) => {
      let result: WatchEnd = { relist: false };
      const onEvent = (type: string, obj: unknown): void => {
        if (this.stopped) return;
        if (type === "ERROR") {
          // 410 Gone (resourceVersion too old) or any other error event: only a relist is safe.
          result = { relist: true, err: obj };
          this.abort?.abort();
          return;
        }
        const o = obj as GuardPolicy;
        const rv = o.metadata?.resourceVersion;
        if (rv !== undefined && rv !== "") seen(rv);
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") this.source.observe(type, o);
      };
      const onDone = (err: unknown): void => {
        if (err !== null && err !== undefined && !result.relist && !this.stopped) result = { relist: true, err };
        resolve(result);
      };
      new k8s.Watch(this.kc)
        .watch(path, { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: this.timeoutSeconds }, onEvent, onDone)
        .then((ac) => {
          this.abort = ac;
          if (this.stopped) ac.abort();
        })
        .catch((err: unknown) => resolve({ relist: true, err }));
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}
