// The workload port: what a worker, judge, reader or copier run is (WorkloadSpec) and the
// level-triggered Workloads port (ADR 0030) both drivers use, the controller through
// runtime/kubernetes/pod-workloads.ts, local mode through runtime/docker/docker-workloads.ts
// with runToEnd (run-to-end.ts). The engine itself never imports it.
import type { EnvFromSource, EnvVar, OwnerReference } from "../api/types.js";

/** A volume a workload mounts: the worker's workspaces, read-only copies for judges. */
export interface WorkloadMount {
  /** Volume name from the Agent's `spec.volumes`. */
  name: string;
  /** Host directory (docker) or PVC name (kubernetes) that backs the volume. */
  source: string;
  /** Path inside the container, the same for the worker and its judges. */
  mountPath: string;
  readOnly: boolean;
}

/** Everything needed to start one run of one container. */
export interface WorkloadSpec {
  /** Unique, deterministic name (e.g. `<execution>-i<iteration>` or the judge child's name). */
  name: string;
  image: string;
  /**
   * The program and its arguments, replacing the image's ENTRYPOINT and CMD (Kubernetes
   * `command` semantics, on every runtime); unset runs the image's own.
   */
  command?: string[];
  /**
   * What the image runs when `command` is unset, when gavel knows it (an Agent's
   * `spec.runtime.command`, a runtime table entry's `command`, gavel's agent image). Only
   * informs: Kubernetes wraps it with gavel-launch to keep stderr apart from stdout.
   */
  entrypoint?: string[];
  env?: Record<string, string>;
  /**
   * The Agent's own variables (spec.runtime.env / envFrom): values, and Secret or ConfigMap
   * references the runtime resolves (Kubernetes: the kubelet; Docker refuses references).
   * `env` above wins over them.
   */
  agentEnv?: { env?: EnvVar[]; envFrom?: EnvFromSource[] };
  /** Written to the container's stdin, then stdin is closed. */
  stdin?: string;
  mounts: WorkloadMount[];
  /** "none" disconnects the container from every network; "allow" keeps the default. */
  network: "none" | "allow";
  /**
   * With network "allow": the only hosts (names, IPs or CIDRs) it may reach, from the Agent's
   * security.network.allowlist; empty or unset means no restriction. Kubernetes enforces it
   * with a NetworkPolicy; Docker (local mode) cannot and allows all.
   */
  egressHosts?: string[];
  resources?: { memoryBytes?: number; nanoCpus?: number };
  /** When to pull the image (the Agent's `runtime.pull_policy`); Kubernetes honours it, Docker never pulls. */
  pullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** Hard deadline: the workload is killed after this many seconds. */
  timeoutSeconds: number;
  labels?: Record<string, string>;
}

/** What a workload run to its end (runToEnd) left behind. */
export interface WorkloadResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** True when the output was longer than the cap and cut (a marker is appended). */
  truncated: boolean;
  timedOut: boolean;
  /** Ended by a stop (runToEnd's signal), not on its own or at its deadline. */
  cancelled: boolean;
  startedAt: Date;
  finishedAt: Date;
}

/**
 * Where a workload lives, as opposed to what it is (its WorkloadSpec): applied by the driver
 * (ADR 0030). Kubernetes applies every field; a driver that cannot honour one refuses it.
 */
export interface WorkloadPlacement {
  namespace: string;
  /** Who owns it: deleting the owner removes the workload (a Kubernetes ownerReference). */
  owner?: OwnerReference;
  /** Run on this node: where a ReadWriteOnce claim it mounts is attached. */
  node?: string;
  /**
   * "apart": keep stdout apart from stderr when the program is known (Kubernetes runs it under
   * gavel-launch); "merged" (default): one log, stderr in stdout.
   */
  streams?: "apart" | "merged";
  /** The Secret holding the worker's NATS credential: mounted read-only, GAVEL_NATS_CREDS_FILE names the file. */
  credentialSecret?: string;
}

/** What is observed of one workload now (the level-triggered port, ADR 0030). */
export type WorkloadObservation =
  | { state: "absent" }
  | { state: "pending" | "running"; node?: string }
  /** It cannot start (image, volume, init container...): the reason. */
  | { state: "stuck"; reason: string; node?: string }
  | { state: "ended"; exitCode: number; timedOut: boolean; finishedAt?: Date; node?: string; oomKilled?: boolean; lost?: WorkloadLoss };

/**
 * Why a workload ended that was stopped from outside before its program ended by itself: its
 * pod deleted or evicted (the Eviction API, the kubelet's node pressure, a preemption), not by
 * gavel. `id` names the lost pod (its uid): what happened to it is told once.
 */
export interface WorkloadLoss {
  reason: string;
  id: string;
}

/** An ended workload's output, capped per stream at OUTPUT_CAP_BYTES. */
export interface WorkloadOutput {
  stdout: string;
  stderr: string;
  /** Set when stderr could not be kept apart: why stdout holds it too. */
  streamsMerged?: string;
  truncated: boolean;
}

/**
 * The level-triggered workload port (ADR 0030): create when absent, observe, collect, retire.
 * Nothing in it waits for a workload to run; a driver calls it again on its next look. Names
 * are the specs' (deterministic), so a restarted driver finds its workloads again. `P` is the
 * placement a driver takes (its own fields beside WorkloadPlacement's).
 */
export interface Workloads<P extends WorkloadPlacement = WorkloadPlacement> {
  /** Creates the workload when absent; an existing one of that name is adopted. True when this call created it. */
  ensure(spec: WorkloadSpec, place: P): Promise<boolean>;
  /** What it is now, from the driver's cache where it has one; `uncached` asks the source. */
  observe(name: string, place: P, opts?: { uncached?: boolean }): Promise<WorkloadObservation>;
  /** An ended workload's output. */
  output(name: string, place: P): Promise<WorkloadOutput>;
  /**
   * Stops it if it runs and removes it, unless it ended less than `retentionSeconds` ago: then
   * it is kept (for logs) and the result is when it may go (ms since the epoch).
   */
  retire(name: string, place: P, retentionSeconds: number): Promise<number | undefined>;
  /**
   * Optional hint for a driver that waits (runToEnd): resolves when the workload may have
   * ended, so the next `observe` need not be polled for. `observe` stays the truth.
   */
  mayHaveEnded?(name: string, place: P): Promise<void>;
}

/**
 * The sweep of a driver that can find what an owner holds (the controller's pods, through its
 * cache): what an Execution that ended or went leaves behind goes by its owner's name. A
 * capability beside Workloads, not a kind of it: a driver declares both (PodWorkloads), local
 * mode's DockerWorkloads has none, and a caller names the two it needs.
 */
export interface OwnedWorkloads {
  /**
   * Retires (as `retire` does) every workload placed with a controlling owner named `owner`
   * in `namespace` (every namespace when undefined) whose labels `which` accepts (all when
   * undefined); returns when the first one kept for its retention may go.
   */
  retireOwned(
    namespace: string | undefined,
    owner: string,
    retentionSeconds: number,
    which?: (labels: Readonly<Record<string, string>>) => boolean,
  ): Promise<number | undefined>;
}

/**
 * Output cap per stream; longer output is cut and marked. As large as the largest judge
 * payload (8 MiB, children/workloads.ts MAX_PAYLOAD_BYTES), so a worker's whole output can
 * reach its judges.
 */
export const OUTPUT_CAP_BYTES = 8 * 1024 * 1024;
export const TRUNCATION_MARKER = "\n[gavel: output truncated at 8 MiB]\n";
