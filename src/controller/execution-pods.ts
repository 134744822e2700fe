// The objects the Execution reconciler creates for one Execution, built without I/O: worker
// and judge pods (pod-spec.ts's hardened manifest, deterministic names, owned by the
// Execution), workspace claims, the stored worker result, and judge child Executions.
import type * as k8s from "@kubernetes/client-node";
import { agentEnvironment } from "../agent/config.js";
import { API_VERSION, type Agent, type Execution, type JsonObject, type VolumeSpec } from "../api/types.js";
import type { JudgeChildRequest, WorkerObservation } from "../engine/outer-loop.js";
import { parseMemoryBytes, parseNanoCpus } from "../local/resources.js";
import { podManifest, podName, stuckReason, userFor, type PodUser } from "../runtime/kubernetes/pod-spec.js";
import type { WorkloadMount, WorkloadSpec } from "../runtime/workload.js";

/** Runtime-instance label value of every pod the reconciler makes (pod names end in it). */
export const EXECUTION_INSTANCE = "ex";
/** Labels the reconciler adds, so `kubectl get pods -l` finds an Execution's pods. */
export const EXECUTION_LABELS = {
  execution: "gavel.dev/execution",
  role: "gavel.dev/role",
  iteration: "gavel.dev/iteration",
  parent: "gavel.dev/parent",
} as const;
/** Annotation on a judge child that could not be given a payload: the child ends Failed with this text. */
export const SPAWN_ERROR_ANNOTATION = "gavel.dev/spawn-error";
/** Annotation a user sets (any value) to cancel a running Execution. */
export const CANCEL_ANNOTATION = "gavel.dev/cancel";
/** Image a worker runs when its Agent names none. */
export const DEFAULT_WORKER_IMAGE = "gavel/agent:dev";
/** Largest judge payload passed in env GAVEL_INPUT (Linux caps one env string at 128 KiB). */
export const ENV_PAYLOAD_LIMIT = 96 * 1024;
/** Largest worker output kept in the result ConfigMap (a ConfigMap holds at most 1 MiB). */
export const STORED_OUTPUT_LIMIT = 900 * 1024;
const STORED_MARKER = "\n[gavel: worker output cut at 900 KiB when stored]\n";

/** A label value (≤ 63 characters, alphanumeric at both ends) for any object name. */
export function labelValue(name: string): string {
  if (name.length <= 63) return name;
  return name.slice(0, 63).replace(/[^a-z0-9]+$/, "");
}

/** The controller ownerReference of objects an Execution owns (deleting it collects them). */
export function ownerOf(execution: Execution): k8s.V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: "Execution",
    name: execution.metadata.name,
    uid: execution.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The name of the Execution that controls an object, if it is one. */
export function controllingExecution(obj: { metadata?: { ownerReferences?: { kind: string; name: string; controller?: boolean; apiVersion: string }[] } }): string | undefined {
  const ref = obj.metadata?.ownerReferences?.find((o) => o.controller === true && o.kind === "Execution" && o.apiVersion === API_VERSION);
  return ref?.name;
}

/** Pod name of a workload (worker run `<exec>-i<N>` or judge child): `gavel-<name>-ex`, ≤ 63 characters. */
export function workloadPodName(workload: string): string {
  return podName(workload, EXECUTION_INSTANCE);
}

/** Name of the claim backing one workspace volume of an Execution: `<exec>-<volume>`. */
export function claimName(execution: string, volume: string): string {
  const name = `${execution}-${volume}`.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/-+/g, "-").replace(/^-|-$/g, "");
  return name.slice(0, 253).replace(/-+$/, "");
}

/** Name of the ConfigMap holding a finished worker run's result. */
export function resultName(worker: string): string {
  return `${worker}-result`.slice(0, 253);
}

/** The mounts of an Execution's workspace volumes (read-only for judges and readers). */
export function workspaceMounts(execution: string, agent: Agent, readOnly: boolean): WorkloadMount[] {
  return (agent.spec.volumes ?? []).map((v) => ({ name: v.name, source: claimName(execution, v.name), mountPath: v.mount_path, readOnly }));
}

/** The PersistentVolumeClaim of one workspace volume, owned by the Execution. */
export function claimManifest(execution: Execution, volume: VolumeSpec): k8s.V1PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claimName(execution.metadata.name, volume.name),
      labels: { [EXECUTION_LABELS.execution]: labelValue(execution.metadata.name) },
      ownerReferences: [ownerOf(execution)],
    },
    spec: {
      accessModes: [volume.access_mode ?? "ReadWriteOnce"],
      resources: { requests: { storage: volume.size ?? "1Gi" } },
      ...(volume.storage_class !== undefined ? { storageClassName: volume.storage_class } : {}),
    },
  };
}

/** Memory and CPU limits of an Agent, as a WorkloadSpec holds them. */
export function resourcesOf(agent: Agent): WorkloadSpec["resources"] {
  const r = agent.spec.security?.resources;
  const memoryBytes = parseMemoryBytes(r?.memory);
  const nanoCpus = parseNanoCpus(r?.cpu);
  return { ...(memoryBytes !== undefined ? { memoryBytes } : {}), ...(nanoCpus !== undefined ? { nanoCpus } : {}) };
}

/** Options that shape every pod the reconciler creates. */
export interface PodOptions {
  /** Pull policy when the Agent's runtime.pull_policy is not set. */
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** User of workloads with a writable mount; default nobody. */
  writerUser?: PodUser;
  /** NATS URL handed to workers (the inner-loop gate), "" when none runs. */
  natsUrl?: string;
}

function pullPolicy(agent: Agent, opts: PodOptions): "Always" | "IfNotPresent" | "Never" {
  return agent.spec.runtime?.pull_policy ?? opts.imagePullPolicy ?? "IfNotPresent";
}

/** The pod of iteration N's worker: the local driver's env contract, the workspace claims read-write. */
export function workerPod(execution: Execution, agent: Agent, run: { name: string; iteration: number; feedback?: string; timeoutSeconds: number }, opts: PodOptions): k8s.V1Pod {
  const ns = execution.metadata.namespace ?? "default";
  const mounts = workspaceMounts(execution.metadata.name, agent, false);
  const env: Record<string, string> = {
    ...agentEnvironment({
      namespace: ns,
      execution: execution.metadata.name,
      iteration: run.iteration,
      task: agent.spec.task?.instruction ?? "",
      tools: agent.spec.tools ?? [],
      mounts: mounts.map((m) => ({ path: m.mountPath, readOnly: false })),
      natsUrl: opts.natsUrl ?? "",
    }),
    GAVEL_INPUT: JSON.stringify(execution.spec.input ?? null),
    GAVEL_FEEDBACK: run.feedback ?? "",
    GAVEL_WORKSPACE: mounts.map((m) => m.mountPath).join(":"),
  };
  const spec: WorkloadSpec = {
    name: run.name,
    image: agent.spec.runtime?.image ?? DEFAULT_WORKER_IMAGE,
    env,
    mounts,
    network: agent.spec.security?.network?.mode === "none" ? "none" : "allow",
    resources: resourcesOf(agent),
    timeoutSeconds: run.timeoutSeconds,
    labels: {
      [EXECUTION_LABELS.execution]: labelValue(execution.metadata.name),
      [EXECUTION_LABELS.role]: "worker",
      [EXECUTION_LABELS.iteration]: String(run.iteration),
    },
  };
  return podManifest({
    spec,
    name: workloadPodName(run.name),
    instance: EXECUTION_INSTANCE,
    user: userFor(mounts, opts.writerUser),
    imagePullPolicy: pullPolicy(agent, opts),
    ownerReferences: [ownerOf(execution)],
  });
}

/** The pod of a judge child: its payload in env GAVEL_INPUT, the parent's claims read-only. */
export function judgePod(child: Execution, judge: Agent, mounts: WorkloadMount[], opts: PodOptions): k8s.V1Pod | string {
  const image = judge.spec.runtime?.image;
  if (image === undefined) return `judge Agent ${judge.metadata.name} names no image (spec.runtime.image)`;
  const input = JSON.stringify(child.spec.input ?? {});
  if (Buffer.byteLength(input) > ENV_PAYLOAD_LIMIT) {
    return `the judge payload is ${Buffer.byteLength(input)} bytes; on Kubernetes it is passed in env GAVEL_INPUT, which holds at most ${ENV_PAYLOAD_LIMIT}`;
  }
  const spec: WorkloadSpec = {
    name: child.metadata.name,
    image,
    env: { GAVEL_INPUT: input, GAVEL_EXECUTION: child.metadata.name },
    mounts: mounts.map((m) => ({ ...m, readOnly: true })),
    network: judge.spec.security?.network?.mode === "allow" ? "allow" : "none",
    resources: resourcesOf(judge),
    timeoutSeconds: child.spec.timeoutSeconds ?? 300,
    labels: {
      [EXECUTION_LABELS.execution]: labelValue(child.metadata.name),
      [EXECUTION_LABELS.role]: "judge",
      ...(child.spec.parent !== undefined ? { [EXECUTION_LABELS.parent]: labelValue(child.spec.parent.name) } : {}),
    },
  };
  return podManifest({
    spec,
    name: workloadPodName(child.metadata.name),
    instance: EXECUTION_INSTANCE,
    user: userFor(spec.mounts),
    imagePullPolicy: pullPolicy(judge, opts),
    ownerReferences: [ownerOf(child)],
  });
}

/** A judge child Execution: spec.parent (with depth) and a controller ownerReference to the parent. */
export function childExecution(parent: Execution, c: JudgeChildRequest, payload: JsonObject | undefined, spawnError?: string): Execution {
  return {
    apiVersion: API_VERSION,
    kind: "Execution",
    metadata: {
      name: c.name,
      namespace: parent.metadata.namespace ?? "default",
      labels: { [EXECUTION_LABELS.parent]: labelValue(parent.metadata.name), [EXECUTION_LABELS.role]: "judge" },
      ...(spawnError !== undefined ? { annotations: { [SPAWN_ERROR_ANNOTATION]: spawnError.slice(0, 4000) } } : {}),
      ownerReferences: [ownerOf(parent)],
    },
    spec: {
      agentRef: { name: c.judge },
      ...(payload !== undefined ? { input: payload } : {}),
      parent: {
        name: parent.metadata.name,
        uid: parent.metadata.uid ?? "",
        purpose: "validation",
        iteration: c.iteration,
        validatorIndex: c.validatorIndex,
        depth: c.depth,
      },
      timeoutSeconds: c.timeoutSeconds,
    },
  };
}

/** The ConfigMap that keeps a finished worker run's result, so a restarted controller still has it. */
export function resultConfigMap(execution: Execution, worker: string, w: WorkerObservation): k8s.V1ConfigMap {
  const stdout = Buffer.byteLength(w.stdout) > STORED_OUTPUT_LIMIT
    ? Buffer.from(w.stdout).subarray(0, STORED_OUTPUT_LIMIT).toString("utf8") + STORED_MARKER
    : w.stdout;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: resultName(worker),
      labels: { [EXECUTION_LABELS.execution]: labelValue(execution.metadata.name), [EXECUTION_LABELS.iteration]: String(w.iteration) },
      ownerReferences: [ownerOf(execution)],
    },
    immutable: true,
    data: {
      iteration: String(w.iteration),
      exitCode: String(w.exitCode),
      timedOut: String(w.timedOut),
      cancelled: String(w.cancelled),
      stdout,
      stderr: w.stderr.slice(-4096),
    },
  };
}

/** The worker result a resultConfigMap holds; undefined when it is not one. */
export function workerResultOf(cm: k8s.V1ConfigMap): WorkerObservation | undefined {
  const d = cm.data;
  if (d === undefined) return undefined;
  const iteration = Number(d.iteration);
  const exitCode = Number(d.exitCode);
  if (!Number.isInteger(iteration) || !Number.isInteger(exitCode)) return undefined;
  return { iteration, exitCode, stdout: d.stdout ?? "", stderr: d.stderr ?? "", timedOut: d.timedOut === "true", cancelled: d.cancelled === "true" };
}

/** How a pod that will not run again ended: exit code, deadline, or why it can never start. */
export interface PodEnd {
  exitCode: number;
  timedOut: boolean;
  /** Set when the pod never ran (image missing, bad config): the reason. */
  stuck?: string;
}

/** The end of a pod, or undefined while it may still run. */
export function podEnd(pod: k8s.V1Pod): PodEnd | undefined {
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") {
    const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
    return { exitCode: terminated?.exitCode ?? 137, timedOut: pod.status?.reason === "DeadlineExceeded" };
  }
  const stuck = stuckReason(pod);
  return stuck === undefined ? undefined : { exitCode: -1, timedOut: false, stuck };
}
