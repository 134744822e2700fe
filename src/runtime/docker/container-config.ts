// Turns a WorkloadSpec into Docker create options: limits, mounts, network and the
// hardening every gavel container gets. Pure, so the policy is tested without a daemon.
import type { ContainerCreateOptions } from "dockerode";
import type { WorkloadMount, WorkloadSpec } from "../workload.js";

/** Labels on every container DockerWorkloads creates; leftovers are found by them. */
export const LABELS = {
  managed: "gavel.dev/managed-by",
  instance: "gavel.dev/runtime-instance",
  ownerPid: "gavel.dev/owner-pid",
  workload: "gavel.dev/workload",
} as const;
export const MANAGED_BY = "gavel-docker-runtime";

/**
 * Docker network mode for a spec. This engine runs with `--bridge=none --iptables=false`,
 * so Docker's default bridge does not exist: "allow" shares the host's network namespace
 * (a worker reaches NATS on loopback), "none" leaves only a private loopback.
 */
export function networkMode(network: WorkloadSpec["network"]): "host" | "none" {
  return network === "allow" ? "host" : "none";
}

/** Non-root by default: `nobody`, unless a writable mount needs the host's owner (see userFor). */
export const NOBODY = "65534:65534";

/**
 * The user a workload runs as. A workload that only reads (judges, readers) runs as
 * `nobody`. One with a writable bind mount must run as the owner of the host directory, or
 * it cannot write its workspace: the host user when it is not root; when the host user is
 * root, root in the container, still with every capability dropped and no-new-privileges.
 */
export function userFor(mounts: WorkloadMount[], hostUid: number, hostGid: number, override?: string): string {
  if (override !== undefined) return override;
  if (mounts.every((m) => m.readOnly)) return NOBODY;
  return `${hostUid}:${hostGid}`;
}

/** Docker container names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]*`; anything else becomes `-`. */
export function containerName(specName: string, instance: string): string {
  const cleaned = specName.replace(/[^a-zA-Z0-9_.-]/g, "-").replace(/^[^a-zA-Z0-9]+/, "");
  return `gavel-${cleaned || "workload"}-${instance}`;
}

/** Options for creating the container, from a validated spec. */
export interface ContainerConfigInput {
  spec: WorkloadSpec;
  name: string;
  instance: string;
  ownerPid: number;
  user: string;
  /** Size of the writable /tmp tmpfs (the root filesystem is read-only). */
  tmpSize?: string;
  pidsLimit?: number;
}

/** Builds the create options for one workload. */
export function containerConfig(input: ContainerConfigInput): ContainerCreateOptions {
  const { spec } = input;
  // The Agent's literal values first (specProblem refused references: Docker has no Secrets).
  const agent = Object.fromEntries((spec.agentEnv?.env ?? []).map((e) => [e.name, e.value ?? ""]));
  const env = { HOME: "/tmp", ...agent, ...spec.env };
  const hasStdin = spec.stdin !== undefined;
  const resources = spec.resources ?? {};
  return {
    name: input.name,
    Image: spec.image,
    // As on Kubernetes, a command replaces the ENTRYPOINT too: Cmd alone would become the
    // arguments of an image's ENTRYPOINT (every image gavel ships has one). With Entrypoint
    // set and Cmd empty, the engine runs exactly the command.
    ...(spec.command !== undefined ? { Entrypoint: spec.command, Cmd: [] } : {}),
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    User: input.user,
    Tty: false,
    AttachStdin: hasStdin,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: hasStdin,
    StdinOnce: hasStdin,
    Labels: {
      ...spec.labels,
      [LABELS.managed]: MANAGED_BY,
      [LABELS.instance]: input.instance,
      [LABELS.ownerPid]: String(input.ownerPid),
      [LABELS.workload]: spec.name,
    },
    HostConfig: {
      Binds: spec.mounts.map((m) => `${m.source}:${m.mountPath}:${m.readOnly ? "ro" : "rw"}`),
      NetworkMode: networkMode(spec.network),
      ReadonlyRootfs: true,
      // The only writable places: the rw mounts and a small /tmp (also HOME).
      Tmpfs: { "/tmp": `rw,nosuid,nodev,size=${input.tmpSize ?? "64m"}` },
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      PidsLimit: input.pidsLimit ?? 512,
      ...(resources.memoryBytes !== undefined ? { Memory: resources.memoryBytes, MemorySwap: resources.memoryBytes } : {}),
      ...(resources.nanoCpus !== undefined ? { NanoCpus: resources.nanoCpus } : {}),
      AutoRemove: false,
    },
  };
}

/** Linux's MAX_ARG_STRLEN: the longest single `NAME=value` (with its NUL) exec accepts. */
export const MAX_ENV_ENTRY_BYTES = 128 * 1024;

/** Checks a spec before anything is created; returns a message naming the bad field. */
export function specProblem(spec: WorkloadSpec): string | undefined {
  if (spec.name.trim() === "") return "spec.name is empty";
  if (spec.image.trim() === "") return `spec.image is empty (workload ${spec.name})`;
  if (!(spec.timeoutSeconds > 0)) return `spec.timeoutSeconds must be > 0 (workload ${spec.name})`;
  for (const [k, v] of Object.entries(spec.env ?? {})) {
    // exec fails (E2BIG) for one NAME=value over 128 KiB: the container would start and die.
    const bytes = Buffer.byteLength(`${k}=${v}`) + 1;
    if (bytes > MAX_ENV_ENTRY_BYTES) {
      return `spec.env.${k} is ${bytes} bytes; Linux limits one variable to ${MAX_ENV_ENTRY_BYTES} bytes: pass large data on stdin (workload ${spec.name})`;
    }
  }
  for (const [i, e] of (spec.agentEnv?.env ?? []).entries()) {
    if (e.valueFrom !== undefined) {
      return `spec.runtime.env[${i}] (${e.name}) takes its value from a ${e.valueFrom.secretKeyRef !== undefined ? "Secret" : "ConfigMap"}: only a cluster resolves those; give local mode a value instead (workload ${spec.name})`;
    }
  }
  if ((spec.agentEnv?.envFrom ?? []).length > 0) {
    return `spec.runtime.envFrom reads a Secret or ConfigMap: only a cluster resolves those; give local mode values in spec.runtime.env (workload ${spec.name})`;
  }
  for (const [i, m] of spec.mounts.entries()) {
    if (!m.source.startsWith("/")) return `spec.mounts[${i}].source must be an absolute host path (got "${m.source}")`;
    if (!m.mountPath.startsWith("/")) return `spec.mounts[${i}].mountPath must be absolute (got "${m.mountPath}")`;
    if (m.source.includes(":") || m.mountPath.includes(":")) return `spec.mounts[${i}] must not contain ":"`;
  }
  return undefined;
}
