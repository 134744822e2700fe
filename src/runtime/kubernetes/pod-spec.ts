// Turns a WorkloadSpec into the hardened Pod (plus the NetworkPolicies that restrict it)
// PodWorkloads creates (pod-workloads.ts). Pure, so the hardening policy is tested without a cluster.
import { createHash } from "node:crypto";
import type * as k8s from "@kubernetes/client-node";
import type { EnvFromSource, EnvVar } from "../../api/types.js";
import type { WorkloadMount, WorkloadSpec } from "../workload.js";
import { FRAMED, LAUNCHER_DIR, LAUNCHER_PATH, LAUNCHER_VOLUME, LOG_STREAMS_ANNOTATION } from "./log-streams.js";

/** Labels on every object PodWorkloads creates; leftovers are found by them. */
export const LABELS = {
  managed: "gavel.dev/managed-by",
  instance: "gavel.dev/runtime-instance",
  workload: "gavel.dev/workload",
  /** "none" selects the pod into the deny-all NetworkPolicy. */
  network: "gavel.dev/network",
} as const;
export const MANAGED_BY = "gavel-kubernetes-runtime";
/** Annotation of a pod whose egress is limited to hosts (JSON list): the allowlist its NetworkPolicy is made from. */
export const EGRESS_HOSTS_ANNOTATION = "gavel.dev/egress-hosts";
/** Name of the per-namespace NetworkPolicy that isolates `network: "none"` pods. */
export const NETWORK_POLICY_NAME = "gavel-workload-no-network";
/** The one container of a workload pod (logs are read from it). */
export const MAIN_CONTAINER = "main";
/** `nobody`: the user of workloads that only read, and the default for writers. */
export const NOBODY = { uid: 65534, gid: 65534 } as const;

/** A numeric user and group to run a container as. */
export interface PodUser {
  uid: number;
  gid: number;
}

/** DNS-1123 label (63 chars max): pod names double as label values and hostnames. */
const MAX_NAME = 63;

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 6);
}

/**
 * Deterministic, DNS-safe pod name: `gavel-<cleaned spec name>-<instance>`. When cleaning
 * or shortening changed the name, a hash of the original keeps distinct names distinct.
 */
export function podName(specName: string, instance: string): string {
  const lowered = specName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-+|-+$/g, "");
  const suffix = `-${instance}`;
  const room = MAX_NAME - "gavel-".length - suffix.length;
  let core = lowered === "" ? "workload" : lowered;
  if (core !== specName || core.length > room) {
    const hash = shortHash(specName);
    core = `${core.slice(0, room - hash.length - 1).replace(/-+$/, "")}-${hash}`;
  }
  return `gavel-${core}${suffix}`;
}

/** Checks a spec before anything is created; returns a message naming the bad field. */
export function specProblem(spec: WorkloadSpec): string | undefined {
  if (spec.name.trim() === "") return "spec.name is empty";
  if (spec.image.trim() === "") return `spec.image is empty (workload ${spec.name})`;
  if (!(spec.timeoutSeconds > 0)) return `spec.timeoutSeconds must be > 0 (workload ${spec.name})`;
  if (spec.command !== undefined && spec.command.length === 0) return `spec.command is empty (workload ${spec.name})`;
  // Level-triggered (ADR 0030): no process stays to write a pod's stdin once it runs.
  if (spec.stdin !== undefined) return `spec.stdin: a pod gets no stdin; pass the input in env or ConfigMap parts (workload ${spec.name})`;
  const seen = new Set<string>();
  for (const [i, m] of spec.mounts.entries()) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(m.source) || m.source.length > 253) {
      return `spec.mounts[${i}].source must be a PersistentVolumeClaim name (got "${m.source}")`;
    }
    if (!m.mountPath.startsWith("/")) return `spec.mounts[${i}].mountPath must be absolute (got "${m.mountPath}")`;
    if (m.mountPath === "/tmp" || m.mountPath === LAUNCHER_DIR) return `spec.mounts[${i}].mountPath ${m.mountPath} is reserved`;
    if (seen.has(m.mountPath)) return `spec.mounts[${i}].mountPath ${m.mountPath} is mounted twice`;
    seen.add(m.mountPath);
  }
  return undefined;
}

/** The user a workload runs as: `nobody` when it only reads, else the writer user. */
export function userFor(mounts: WorkloadMount[], writer: PodUser = NOBODY): PodUser {
  return mounts.every((m) => m.readOnly) ? NOBODY : writer;
}

/** Kubernetes quantities for the spec's limits; requests stay small (see podManifest). */
export function resourcesFor(spec: WorkloadSpec): k8s.V1ResourceRequirements {
  const limits: Record<string, string> = {};
  const requests: Record<string, string> = { cpu: "10m", memory: "16Mi" };
  const r = spec.resources ?? {};
  if (r.memoryBytes !== undefined) {
    limits.memory = String(r.memoryBytes);
    requests.memory = String(Math.min(r.memoryBytes, 16 * 1024 * 1024));
  }
  if (r.nanoCpus !== undefined) {
    const milli = Math.max(1, Math.ceil(r.nanoCpus / 1e6));
    limits.cpu = `${milli}m`;
    requests.cpu = `${Math.min(milli, 10)}m`;
  }
  return Object.keys(limits).length > 0 ? { limits, requests } : { requests };
}

/** Everything podManifest needs beyond the spec. */
export interface PodManifestInput {
  spec: WorkloadSpec;
  name: string;
  instance: string;
  user: PodUser;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  ownerReferences?: k8s.V1OwnerReference[];
  /** Size limit of the writable /tmp emptyDir (the root filesystem is read-only). */
  tmpSize?: string;
  /**
   * The ConfigMap holding gavel-launch (log-streams.ts launcherConfigMap): when set and the
   * program is known (the spec's command or entrypoint), the pod mounts it and runs the
   * program under it, so the log keeps stdout apart from stderr.
   */
  launcherConfigMap?: string;
}

/** Labels of one workload's objects. */
export function labelsFor(spec: WorkloadSpec, name: string, instance: string): Record<string, string> {
  return {
    ...spec.labels,
    [LABELS.managed]: MANAGED_BY,
    [LABELS.instance]: instance,
    [LABELS.workload]: name,
    [LABELS.network]: spec.network,
  };
}

/**
 * What the main container runs: the spec's command, else its entrypoint when gavel knows it;
 * under gavel-launch when the launcher is mounted and the program known. `launched` says
 * whether it is.
 */
function programOf(input: PodManifestInput): { command: string[] | undefined; launched: boolean } {
  const { spec } = input;
  const program = spec.command ?? spec.entrypoint;
  const launched = input.launcherConfigMap !== undefined && program !== undefined;
  return { command: launched ? [LAUNCHER_PATH, ...program] : program, launched };
}

/** The pod's volumes and the main container's mounts of them: /tmp, the claims, the launcher's. */
function storageOf(input: PodManifestInput, launched: boolean): { volumes: k8s.V1Volume[]; volumeMounts: k8s.V1VolumeMount[] } {
  const { spec } = input;
  const volumes: k8s.V1Volume[] = [
    { name: "tmp", emptyDir: { sizeLimit: input.tmpSize ?? "64Mi" } },
    ...spec.mounts.map((m, i) => ({
      name: `m${i}`,
      persistentVolumeClaim: { claimName: m.source, readOnly: m.readOnly },
    })),
    ...(launched ? [{ name: LAUNCHER_VOLUME, configMap: { name: input.launcherConfigMap, defaultMode: 0o555 } }] : []),
  ];
  const volumeMounts: k8s.V1VolumeMount[] = [
    { name: "tmp", mountPath: "/tmp" },
    ...spec.mounts.map((m, i) => ({ name: `m${i}`, mountPath: m.mountPath, readOnly: m.readOnly })),
    ...(launched ? [{ name: LAUNCHER_VOLUME, mountPath: LAUNCHER_DIR, readOnly: true }] : []),
  ];
  return { volumes, volumeMounts };
}

/** The main container's environment: the Agent's variables first; gavel's own (identity, payload, the gate) replace any of the same name. */
function environmentOf(spec: WorkloadSpec): Pick<k8s.V1Container, "env" | "envFrom"> {
  const env = { HOME: "/tmp", ...spec.env };
  return {
    env: [
      ...(spec.agentEnv?.env ?? []).filter((e) => !(e.name in env)).map(agentEnvVar),
      ...Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
    ],
    ...(spec.agentEnv?.envFrom !== undefined && spec.agentEnv.envFrom.length > 0
      ? { envFrom: spec.agentEnv.envFrom.map(agentEnvFrom) }
      : {}),
  };
}

/** The pod's metadata: name, labels, owner, and annotations for its egress hosts and framed log. */
function podMetadata(input: PodManifestInput, launched: boolean): k8s.V1ObjectMeta {
  const { spec, name } = input;
  const annotations: Record<string, string> = {
    ...(spec.network === "allow" && (spec.egressHosts ?? []).length > 0
      ? { [EGRESS_HOSTS_ANNOTATION]: JSON.stringify(spec.egressHosts) }
      : {}),
    ...(launched ? { [LOG_STREAMS_ANNOTATION]: FRAMED } : {}),
  };
  return {
    name,
    labels: labelsFor(spec, name, input.instance),
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    ...(input.ownerReferences !== undefined ? { ownerReferences: input.ownerReferences } : {}),
  };
}

/** The main container's security context: no privilege escalation, no capabilities, read-only root. */
const HARDENED: k8s.V1SecurityContext = {
  allowPrivilegeEscalation: false,
  privileged: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ["ALL"] },
};

/**
 * The Pod for one workload: restartPolicy Never, activeDeadlineSeconds from the spec,
 * hardened (non-root, no privilege escalation, no capabilities, read-only root with an
 * emptyDir /tmp, RuntimeDefault seccomp, no service account token), PVC mounts with
 * readOnly on both the volume and the mount. Requests are kept small: on a shared node
 * the limits are what bound a workload (as with Docker), requests only place it.
 */
export function podManifest(input: PodManifestInput): k8s.V1Pod {
  const { spec, user } = input;
  const { command, launched } = programOf(input);
  const { volumes, volumeMounts } = storageOf(input, launched);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: podMetadata(input, launched),
    spec: {
      restartPolicy: "Never",
      activeDeadlineSeconds: Math.max(1, Math.ceil(spec.timeoutSeconds)),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // One second: a stopped pod is gone from the API only once the kubelet killed it.
      terminationGracePeriodSeconds: 1,
      securityContext: {
        runAsUser: user.uid,
        runAsGroup: user.gid,
        runAsNonRoot: user.uid !== 0,
        seccompProfile: { type: "RuntimeDefault" },
      },
      containers: [
        {
          name: MAIN_CONTAINER,
          image: spec.image,
          imagePullPolicy: input.imagePullPolicy ?? "IfNotPresent",
          ...(command !== undefined ? { command } : {}),
          ...environmentOf(spec),
          volumeMounts,
          resources: resourcesFor(spec),
          securityContext: structuredClone(HARDENED),
        },
      ],
      volumes,
    },
  };
}

/** One of the Agent's variables as a container EnvVar: a value, or a Secret/ConfigMap key the kubelet reads. */
function agentEnvVar(e: EnvVar): k8s.V1EnvVar {
  const from = e.valueFrom;
  if (from?.secretKeyRef !== undefined) return { name: e.name, valueFrom: { secretKeyRef: { ...from.secretKeyRef } } };
  if (from?.configMapKeyRef !== undefined) return { name: e.name, valueFrom: { configMapKeyRef: { ...from.configMapKeyRef } } };
  return { name: e.name, value: e.value ?? "" };
}

function agentEnvFrom(e: EnvFromSource): k8s.V1EnvFromSource {
  return {
    ...(e.prefix !== undefined ? { prefix: e.prefix } : {}),
    ...(e.secretRef !== undefined ? { secretRef: { ...e.secretRef } } : {}),
    ...(e.configMapRef !== undefined ? { configMapRef: { ...e.configMapRef } } : {}),
  };
}

/**
 * Denies all ingress and egress for pods labelled `gavel.dev/network=none`. Kubernetes has
 * no per-pod "no network" switch; this is the enforcement, and only on a CNI that
 * implements NetworkPolicy (the single-node test cluster's bridge CNI does not).
 */
export function denyAllNetworkPolicy(): k8s.V1NetworkPolicy {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: NETWORK_POLICY_NAME, labels: { [LABELS.managed]: MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { [LABELS.network]: "none" } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [],
      egress: [],
    },
  };
}

/**
 * The NetworkPolicy of one pod with an egress allowlist (named like the pod, owned like it):
 * egress only to `cidrs` (the allowlisted hosts, resolved by the caller: an IP as /32 or /128)
 * and to DNS on port 53, plus the caller's `extra` rules (a worker's way to the gate), no
 * ingress. Enforced by the cluster's NetworkPolicy implementation.
 */
export function egressPolicy(
  pod: k8s.V1Pod,
  cidrs: readonly string[],
  extra: readonly k8s.V1NetworkPolicyEgressRule[] = [],
): k8s.V1NetworkPolicy {
  const name = pod.metadata?.name ?? "";
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name,
      labels: { [LABELS.managed]: MANAGED_BY },
      ...(pod.metadata?.ownerReferences !== undefined ? { ownerReferences: pod.metadata.ownerReferences } : {}),
    },
    spec: {
      podSelector: { matchLabels: { [LABELS.workload]: name } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [],
      egress: [
        ...(cidrs.length > 0 ? [{ to: cidrs.map((cidr) => ({ ipBlock: { cidr } })) }] : []),
        {
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
        ...extra,
      ],
    },
  };
}

/** The egress hosts a pod's annotation lists (see EGRESS_HOSTS_ANNOTATION); undefined when it has none. */
export function egressHostsOf(pod: k8s.V1Pod): string[] | undefined {
  const raw = pod.metadata?.annotations?.[EGRESS_HOSTS_ANNOTATION];
  if (raw === undefined) return undefined;
  const hosts: unknown = JSON.parse(raw);
  return Array.isArray(hosts) ? hosts.filter((h): h is string => typeof h === "string") : undefined;
}

/** Why a pod that has not finished will never start, from its container's waiting state. */
export function stuckReason(pod: k8s.V1Pod): string | undefined {
  // An init container (the launcher's) that cannot start or failed keeps the main one from ever running.
  // A sidecar (an init container with restartPolicy Always) is restarted when it fails and ends with the pod.
  const sidecars = new Set((pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === "Always").map((c) => c.name));
  for (const init of pod.status?.initContainerStatuses ?? []) {
    if (sidecars.has(init.name) && init.state?.waiting?.reason === undefined) continue;
    const failed = init.state?.terminated;
    if (failed !== undefined && failed.exitCode !== 0)
      return `init container ${init.name} failed (exit ${failed.exitCode}): ${failed.message ?? failed.reason ?? ""}`.trim();
    const why = fatalWaiting(init.state?.waiting);
    if (why !== undefined) return `init container ${init.name}: ${why}`;
  }
  return fatalWaiting(pod.status?.containerStatuses?.[0]?.state?.waiting);
}

function fatalWaiting(waiting: k8s.V1ContainerStateWaiting | undefined): string | undefined {
  const reason = waiting?.reason;
  if (reason === undefined) return undefined;
  const fatal = [
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "ImagePullBackOff",
    "RunContainerError",
  ];
  return fatal.includes(reason) ? `${reason}: ${waiting?.message ?? ""}`.trim() : undefined;
}
