// The Agent Ready condition: a controller that watches Agents and writes Ready=True/False from the
// schema rules and the cross-object rules (judges exist, are judges, run one-shot). Pure part first.
import type * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import { findCondition, sameCondition, setCondition } from "../api/conditions.js";
import { crossValidateAgent, judgeReferences, readyCondition } from "../api/cross-validate.js";
import type { Agent, Condition } from "../api/types.js";
import { validateManifest } from "../api/validate.js";
import { chooseRuntime, type RuntimeTable } from "../children/runtime-table.js";
import { Controller } from "./runtime/controller.js";
import { customResource, Informer, objectKey, splitKey } from "./runtime/informer.js";
import type { WorkQueue, WorkQueueOptions } from "./runtime/work-queue.js";
import { messageOf } from "../errors.js";
import { type Logger } from "../telemetry/logger.js";
import type { Registry } from "../telemetry/metrics.js";
import { GavelResources } from "./gavel-resources.js";

/** Type of the condition this controller owns. */
export const READY = "Ready";

/** Reason when the Agent is valid but its Executions cannot run guarded (no tool-call gate serves). */
export const CANNOT_ENFORCE = "CannotEnforce";

/** Reason when a GuardPolicy covering the Agent is not yet in force on every live controller replica (ADR 0074). */
export const POLICY_NOT_ENFORCED = "PolicyNotEnforced";

/** Reason when `spec.runtime.language`/`version` name no entry of the controller's runtime table. */
export const UNKNOWN_RUNTIME = "UnknownRuntime";

/** Reason when the Agent itself breaks a schema or CEL rule (the server would refuse it now). */
export const INVALID_SPEC = "InvalidSpec";

// Kubernetes caps a condition message at 32768 characters (metav1.Condition).
const MAX_MESSAGE = 32_768;

// ---------------------------------------------------------------- pure part

/** The Ready condition the Agent should have, given the other Agents of its namespace by name. */
export function desiredReady(
  agent: Agent,
  lookup: (name: string) => Agent | undefined,
  now: Date,
  unenforceable?: string,
  runtimes?: RuntimeTable,
  policyLag?: string,
): Condition {
  const generation = agent.metadata?.generation;
  let schema: { path: string; message: string }[];
  try {
    // The stored object is checked as a manifest: status and server metadata are allowed there.
    schema = validateManifest(agent).filter((p) => p.severity === "error");
  } catch (err) {
    schema = [{ path: "", message: `cannot validate: ${messageOf(err)}` }];
  }
  let condition: Condition;
  if (schema.length > 0) {
    condition = {
      type: READY,
      status: "False",
      reason: INVALID_SPEC,
      message: schema.map((p) => `${p.path === "" ? "(object)" : p.path}: ${p.message}`).join("; "),
      lastTransitionTime: now.toISOString(),
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    };
  } else {
    condition = readyCondition(crossValidateAgent(agent, lookup), generation, now);
    // A language runtime the table does not have: its pods could never start (said before any Execution tries).
    const choice = runtimes === undefined ? undefined : chooseRuntime(agent, runtimes, "gavel's agent image");
    if (condition.status === "True" && choice !== undefined && "problem" in choice) {
      condition = { ...condition, status: "False", reason: UNKNOWN_RUNTIME, message: choice.problem };
    }
    // A valid Agent whose Executions could not run guarded here is not ready either.
    if (condition.status === "True" && unenforceable !== undefined) {
      condition = {
        ...condition,
        status: "False",
        reason: CANNOT_ENFORCE,
        message: `this cluster cannot enforce what the Agent declares: ${unenforceable}`,
      };
    }
    // Applied means enforced: a policy some replica has not taken in yet could be bypassed there.
    if (condition.status === "True" && policyLag !== undefined) {
      condition = { ...condition, status: "False", reason: POLICY_NOT_ENFORCED, message: policyLag };
    }
  }
  if (condition.message.length > MAX_MESSAGE) condition.message = `${condition.message.slice(0, MAX_MESSAGE - 3)}...`;
  return condition;
}

/** The Agent's current Ready condition, if any. */
export function currentReady(agent: Agent): Condition | undefined {
  return findCondition(agent.status?.conditions, READY);
}

/**
 * The status merge patch that moves the Agent to `desired` (its lastTransitionTime is now),
 * or undefined when it already says that; setCondition keeps the transition time while the
 * status does not change. metadata.resourceVersion makes a write from a stale cache a conflict.
 */
export function readyStatusPatch(agent: Agent, desired: Condition): Record<string, unknown> | undefined {
  const generation = agent.metadata?.generation;
  if (sameCondition(currentReady(agent), desired) && (generation === undefined || agent.status?.observedGeneration === generation))
    return undefined;
  const conditions = setCondition(agent.status?.conditions, desired, new Date(desired.lastTransitionTime), desired.observedGeneration);
  return {
    metadata: { resourceVersion: agent.metadata.resourceVersion },
    status: { ...(generation === undefined ? {} : { observedGeneration: generation }), conditions },
  };
}

/** Names of the Agents (of one namespace) that name `judgeName` as a judge. */
export function referrersOf(judgeName: string, agents: readonly Agent[]): string[] {
  return agents.filter((a) => safeRefs(a).some((r) => r.name === judgeName)).map((a) => a.metadata.name);
}

function safeRefs(agent: Agent): { name: string }[] {
  try {
    return judgeReferences(agent);
  } catch {
    // A malformed object names no judges; its own reconcile reports it.
    return [];
  }
}

// ---------------------------------------------------------------- controller

/** Options of AgentReadinessController. */
export interface AgentReadinessOptions {
  kc: k8s.KubeConfig;
  /** Namespace to watch; all namespaces when undefined. */
  namespace?: string;
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  /** Concurrent reconciles (of different keys). Default 2; 0 runs none (the caller calls reconcile()). */
  workers?: number;
  /** Every resyncMs every known Agent is reconciled again (no write unless something differs). 0 = never. Default 300 000. */
  resyncMs?: number;
  queue?: WorkQueueOptions;
  now?: () => Date;
  logger?: Logger;
  /** Why this cluster cannot enforce what an Agent declares (no tool-call gate); Ready is False then. */
  enforcement?: (agent: Agent) => string | undefined;
  /** Why the GuardPolicies covering an Agent are not yet in force on every replica (ADR 0074); Ready is False then. */
  policyLag?: (agent: Agent) => string | undefined;
  /** The controller's runtime table: an Agent whose language runtime it lacks is not Ready. */
  runtimes?: RuntimeTable;
  /** Where its counters live (the runtime's, labelled controller="agent"); default its own. */
  metrics?: Registry;
}

/** What the controller has done so far. */
export interface ReadinessStats {
  reconciles: number;
  statusWrites: number;
  conflicts: number;
  errors: number;
}

/** Watches Agents and keeps each one's Ready condition equal to what the rules say. */
export class AgentReadinessController {
  private readonly agents: Informer<Agent>;
  private readonly controller: Controller<Agent>;
  private readonly resources: GavelResources;
  private readonly now: () => Date;

  constructor(private readonly opts: AgentReadinessOptions) {
    this.resources = new GavelResources(opts.kc);
    this.now = opts.now ?? (() => new Date());
    const logger = opts.logger;
    this.agents = new Informer<Agent>({
      kc: opts.kc,
      resource: customResource<Agent>(opts.kc, "agent", "agents"),
      ...(opts.namespace !== undefined ? { namespaces: [opts.namespace] } : {}),
      ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
      ...(logger !== undefined ? { logger } : {}),
    });
    this.controller = new Controller<Agent>({
      name: "agent",
      kc: opts.kc,
      // An Agent's change wakes it and every Agent of its namespace that names it as a judge.
      primary: { informer: this.agents, keys: (agent) => this.withReferrers(agent) },
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 2,
      resyncMs: opts.resyncMs ?? 300_000,
      ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
      ...(logger !== undefined ? { logger } : {}),
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
    });
  }

  /** The work queue (keys namespace/name). */
  get queue(): WorkQueue {
    return this.controller.queue;
  }

  /** Counters: the runtime's (reconciles by its workers, those that threw, the 409s among them) and the status writes. */
  get stats(): ReadinessStats {
    const { reconciles, errors, conflicts } = this.controller.stats;
    return {
      reconciles,
      errors,
      conflicts,
      statusWrites: this.controller.metrics.reconcile.statusWrites.get(this.controller.metrics.labels),
    };
  }

  /** Lists Agents (the cache is filled when this resolves), starts the watch and the workers. */
  async start(): Promise<void> {
    await this.controller.start();
  }

  /** Why the caches are not synced yet (the informers still waiting for a first list), or undefined once they are (readiness). */
  unsynced(): string | undefined {
    return this.controller.unsynced();
  }

  /** Reconciles every known Agent again (e.g. when the tool-call gate comes or goes). */
  requeueAll(): void {
    this.controller.requeueAll();
  }

  /** Stops the watch and the workers; resolves when in-flight reconciles have finished. */
  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** The Agent's key and the keys of every Agent of its namespace that names it as a judge. */
  private withReferrers(agent: Agent): string[] {
    const key = objectKey(agent);
    if (key === undefined) return [];
    const ns = agent.metadata.namespace;
    return [key, ...referrersOf(agent.metadata.name, this.agents.list(ns)).map((name) => `${ns ?? ""}/${name}`)];
  }

  /** Level-triggered: reads the cached Agent and its peers, writes Ready only when it differs. */
  async reconcile(key: string): Promise<void> {
    const { namespace: ns, name } = splitKey(key);
    const agent = this.agents.get(name, ns === "" ? undefined : ns);
    // Gone: nothing to write; its referrers were queued by the delete event.
    if (agent === undefined || agent.metadata.deletionTimestamp !== undefined) return;
    const lookup = (n: string) => this.agents.get(n, ns === "" ? undefined : ns);
    const patch = readyStatusPatch(
      agent,
      desiredReady(agent, lookup, this.now(), this.opts.enforcement?.(agent), this.opts.runtimes, this.opts.policyLag?.(agent)),
    );
    if (patch === undefined) return;
    // Gone: nothing to write (false). A conflict (thrown) means the cache was stale: the watch brings the new version; look again then.
    if (await this.resources.patchStatus("agents", ns, name, patch))
      this.controller.metrics.reconcile.statusWrites.inc(this.controller.metrics.labels);
  }
}
