// What a driver creates for one run of a worker or a judge: the WorkloadSpec with the worker
// runtime's env contract, the judge payload, the mounts (read-only for judges), network,
// resources, deadline and labels. Docker (local mode) and Kubernetes run the same spec.
import { agentEnvironment } from "../agent/config.js";
import type { Agent, Execution } from "../api/types.js";
import { childTimeoutSeconds } from "../engine/durations.js";
import type { WorkloadMount, WorkloadSpec } from "../runtime/workload.js";
import { defaultImages } from "./images.js";
import { resourcesOf } from "./quantities.js";

/** Largest judge payload also passed in env GAVEL_INPUT (Linux caps one env string at 128 KiB, MAX_ARG_STRLEN). */
export const ENV_PAYLOAD_LIMIT = 96 * 1024;

/** Labels on every workload of an Execution, so `kubectl get pods -l` (or `docker ps -f`) finds them. */
export const CHILD_LABELS = {
  execution: "gavel.dev/execution",
  role: "gavel.dev/role",
  iteration: "gavel.dev/iteration",
  parent: "gavel.dev/parent",
} as const;

/** A label value (≤ 63 characters, alphanumeric at both ends) for any object name. */
export function labelValue(name: string): string {
  if (name.length <= 63) return name;
  return name.slice(0, 63).replace(/[^a-z0-9]+$/, "");
}

/** The Agent's own env (spec.runtime.env / envFrom), for the runtime to resolve; the contract's variables win over it. */
export function agentEnvOf(agent: Agent): Pick<WorkloadSpec, "agentEnv"> {
  const env = agent.spec.runtime?.env;
  const envFrom = agent.spec.runtime?.envFrom;
  if ((env ?? []).length === 0 && (envFrom ?? []).length === 0) return {};
  return { agentEnv: { ...(env !== undefined ? { env } : {}), ...(envFrom !== undefined ? { envFrom } : {}) } };
}

/** One run of the worker: the engine's start_worker action. */
export interface WorkerRun {
  name: string;
  iteration: number;
  feedback?: string;
  timeoutSeconds: number;
}

/** What the driver adds to a worker's spec. */
export interface WorkerOptions {
  /** NATS URL the worker proposes its tool calls on (the inner-loop gate); "" when none runs. */
  natsUrl?: string;
  /** Extra env (local mode's `workerEnv`); wins over the contract's variables. */
  env?: Record<string, string>;
  /** Image when the Agent names none; default defaultImages().worker. */
  defaultImage?: string;
}

/**
 * The workload of iteration N's worker: the env contract of the worker runtime
 * (src/agent/config.ts) plus GAVEL_WORKSPACE for plain scripts; feedback and input are always
 * set so a script can read them blindly. The workspace mounts are read-write.
 */
export function workerWorkload(execution: Execution, agent: Agent, run: WorkerRun, mounts: WorkloadMount[], opts: WorkerOptions = {}): WorkloadSpec {
  const writable = mounts.map((m) => ({ ...m, readOnly: false }));
  const env: Record<string, string> = {
    ...agentEnvironment({
      namespace: execution.metadata.namespace ?? "default",
      execution: execution.metadata.name,
      iteration: run.iteration,
      task: agent.spec.task?.instruction ?? "",
      tools: agent.spec.tools ?? [],
      mounts: writable.map((m) => ({ path: m.mountPath, readOnly: false })),
      natsUrl: opts.natsUrl ?? "",
    }),
    GAVEL_INPUT: JSON.stringify(execution.spec.input ?? null),
    GAVEL_FEEDBACK: run.feedback ?? "",
    GAVEL_WORKSPACE: writable.map((m) => m.mountPath).join(":"),
    ...opts.env,
  };
  const pullPolicy = agent.spec.runtime?.pull_policy;
  return {
    name: run.name,
    image: agent.spec.runtime?.image ?? opts.defaultImage ?? defaultImages().worker,
    env,
    ...agentEnvOf(agent),
    mounts: writable,
    network: agent.spec.security?.network?.mode === "none" ? "none" : "allow",
    resources: resourcesOf(agent),
    ...(pullPolicy !== undefined ? { pullPolicy } : {}),
    timeoutSeconds: run.timeoutSeconds,
    labels: {
      [CHILD_LABELS.execution]: labelValue(execution.metadata.name),
      [CHILD_LABELS.role]: "worker",
      [CHILD_LABELS.iteration]: String(run.iteration),
    },
  };
}

/** How a driver hands a judge its payload. */
export interface JudgeWorkloadOptions {
  /**
   * True when the driver writes stdin (local mode): the payload always goes there, and to
   * env GAVEL_INPUT too when it fits. False (the controller's pods): env only, so a larger
   * payload is refused.
   */
  stdin: boolean;
}

/**
 * The workload of a judge child: its payload (the child's spec.input) as GAVEL_INPUT and/or
 * stdin, the worker's mounts read-only at the same paths, no network unless the judge's
 * manifest allows it, the child's deadline. A string says why it cannot run.
 */
export function judgeWorkload(child: Execution, judge: Agent, workerMounts: WorkloadMount[], opts: JudgeWorkloadOptions): WorkloadSpec | string {
  const image = judge.spec.runtime?.image;
  if (image === undefined) return `judge Agent ${judge.metadata.name} names no image (spec.runtime.image)`;
  const input = JSON.stringify(child.spec.input ?? {});
  const fits = Buffer.byteLength(input) <= ENV_PAYLOAD_LIMIT;
  if (!fits && !opts.stdin) {
    return `the judge payload is ${Buffer.byteLength(input)} bytes; on Kubernetes it is passed in env GAVEL_INPUT, which holds at most ${ENV_PAYLOAD_LIMIT}`;
  }
  const pullPolicy = judge.spec.runtime?.pull_policy;
  const parent = child.spec.parent?.name;
  return {
    name: child.metadata.name,
    image,
    env: { ...(fits ? { GAVEL_INPUT: input } : {}), GAVEL_EXECUTION: child.metadata.name },
    ...agentEnvOf(judge),
    ...(opts.stdin ? { stdin: input } : {}),
    mounts: workerMounts.map((m) => ({ ...m, readOnly: true })),
    network: judge.spec.security?.network?.mode === "allow" ? "allow" : "none",
    resources: resourcesOf(judge),
    ...(pullPolicy !== undefined ? { pullPolicy } : {}),
    timeoutSeconds: childTimeoutSeconds(child, judge),
    labels: {
      [CHILD_LABELS.execution]: labelValue(child.metadata.name),
      [CHILD_LABELS.role]: "judge",
      ...(parent !== undefined ? { [CHILD_LABELS.parent]: labelValue(parent) } : {}),
    },
  };
}
