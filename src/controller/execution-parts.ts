// What every concern of the Execution reconciler is handed (runs, judge children, workspace
// copies, file readers, status): its ports and settings, built once by ExecutionReconciler,
// so each concern can be constructed alone (the controller's fast test tier does).
import type * as k8s from "@kubernetes/client-node";
import type { Execution } from "../api/types.js";
import type { RuntimeTable } from "../children/runtime-table.js";
import type { Agent } from "../api/types.js";
import type { OwnerMarks, WorkerProgram } from "../children/workloads.js";
import type { EngineContext } from "../engine/outer-loop.js";
import type { PodPlacement } from "../runtime/kubernetes.js";
import type { OwnedWorkloads, WorkloadMount, WorkloadOutput, Workloads, WorkloadSpec } from "../runtime/workload.js";
import type { Logger } from "../telemetry/logger.js";
import type { GavelResources } from "./gavel-resources.js";

/**
 * A run's context through one reconcile: the engine's, and what is worked out once for the
 * concerns: its Agent, how its Execution marks what it owns, its workspace, and what its
 * Agent's containers run. What the engine takes from the Agent (AgentPlan) is handed beside it.
 */
export interface RunContext extends EngineContext {
  /** The Execution's Agent, defaults applied. */
  agent: Agent;
  owner: OwnerMarks;
  /** Its workspace: the claim of each of its Agent's volumes at the volume's path, read-write (judges and readers mount them read-only). */
  mounts: WorkloadMount[];
  /** The worker Agent's runtime, limits and network (workerProgram): its worker pods run it, its image's file readers read its image. */
  program: WorkerProgram;
}

/** What the concerns count (the controller runtime's reconcile metrics). */
export interface ReconcileCounts {
  statusWrite(): void;
  podCreated(): void;
  childCreated(): void;
}

/** The settings the concerns shape their workloads with. */
export interface ExecutionSettings {
  /** Image of the file readers and copiers (sh, cat, cp, tar). */
  readerImage: string;
  /** NATS URL handed to workers for the inner-loop gate; "" when none runs. */
  natsUrl: string;
  /** Images of language runtimes; undefined: the built-in table. */
  runtimes?: RuntimeTable;
  /** Seconds a finished pod gavel no longer needs is kept (for `kubectl logs`). */
  retentionSeconds: number;
}

/**
 * The Workloads port over the reconciler's pods with its owner sweep: PodWorkloads in the
 * controller, the in-memory double in the fast tier; never local mode's containers.
 */
export type PodPort = Workloads<PodPlacement> & OwnedWorkloads;

/** The ports and settings of the Execution reconciler's concerns. */
export interface ExecutionParts {
  /** gavel's Executions and Agents (typed). */
  resources: GavelResources;
  /** ConfigMaps (stored results), claims, Services: the core API. */
  core: k8s.CoreV1Api;
  /** The worker, judge, reader and copier workloads (the Workloads port, ADR 0030). */
  workloads: PodPort;
  settings: ExecutionSettings;
  count: ReconcileCounts;
  now: () => number;
  logger: Logger;
}

/** The namespace of an Execution. */
export function namespaceOf(ex: Execution): string {
  return ex.metadata.namespace ?? "default";
}

/** Creates a workload when it is absent, counting it. */
export async function ensureWorkload(parts: ExecutionParts, spec: WorkloadSpec, place: PodPlacement): Promise<void> {
  if (await parts.workloads.ensure(spec, place)) parts.count.podCreated();
}

/** A workload's two output streams (and why they are merged, if so), without its truncation mark. */
export function streamsOf(out: WorkloadOutput): { stdout: string; stderr: string; streamsMerged?: string } {
  return { stdout: out.stdout, stderr: out.stderr, ...(out.streamsMerged !== undefined ? { streamsMerged: out.streamsMerged } : {}) };
}

/** How long to wait to look again at `at` (ms since the epoch): 50 ms past it, at least 50 ms. */
export function requeueAt(at: number, now: number): number {
  return Math.max(50, at - now + 50);
}
