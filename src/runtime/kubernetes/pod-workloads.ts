// The Workloads port on Kubernetes (ADR 0030): one pod per workload with a deterministic name,
// level-triggered. `ensure` creates the pod when it is absent, after what restricts or serves
// it (the namespace's gavel-launch ConfigMap, deny-all and allowlist NetworkPolicies); an
// existing pod is adopted. `observe` reads the pod from the caller's cache (the controller's
// pod informer), `output` reads its log (capped), `retire` deletes it once its retention has
// passed. Nothing here waits for a pod: the caller looks again when the cache wakes it.
import type * as k8s from "@kubernetes/client-node";
import { AGENT_ENV } from "../../api/agent-env.js";
import { createOrAdopt, ignoreNotFound, messageOf, TerminalError } from "../../errors.js";
import {
  OUTPUT_CAP_BYTES,
  type OwnedWorkloads,
  type WorkloadLoss,
  type WorkloadMount,
  type WorkloadObservation,
  type WorkloadOutput,
  type WorkloadPlacement,
  type Workloads,
  type WorkloadSpec,
} from "../workload.js";
import { partsVolume, type PartsDescriptor } from "./configmap-parts.js";
import { egressCidrs } from "./egress-hosts.js";
import { isFramed, launcherConfigMap, podStreams } from "./log-streams.js";
import {
  denyAllNetworkPolicy,
  egressHostsOf,
  egressPolicy,
  LABELS,
  podManifest,
  podName,
  specProblem,
  stuckReason,
  userFor,
  type PodUser,
} from "./pod-spec.js";

/** Key of the worker credential's Secret, and the file name in the pod. */
export const WORKER_CREDS_KEY = "nats.creds";
/** Where worker pods find their credential (GAVEL_NATS_CREDS_FILE points at the file). */
export const WORKER_CREDS_DIR = "/var/run/gavel/nats";
const CREDS_VOLUME = "nats-credentials";

/** Where a pod lives: WorkloadPlacement plus what only Kubernetes has. */
export interface PodPlacement extends WorkloadPlacement {
  /** ConfigMap parts mounted read-only at `mountPath` (a judge's payload too large for its env). */
  parts?: { volume: string; prefix: string; descriptor: PartsDescriptor; mountPath: string };
  /**
   * A restricted worker's way to the gate (controller/gate-egress.ts): the namespace's policy
   * that lets `network: none` workers through, and egress rules added to an allowlist's policy.
   */
  gate?: { policy: k8s.V1NetworkPolicy; egress: k8s.V1NetworkPolicyEgressRule[] };
  /** Native sidecars beside the workload, started in order (the worker's copy source, ADR 0041; the MCP endpoint, ADR 0061). */
  sidecars?: PodSidecar[];
  /** Annotations on the pod (what a later reconcile reads back, e.g. a copier's source pod). */
  annotations?: Record<string, string>;
}

/**
 * A native sidecar (an init container with restartPolicy Always) of a workload's pod: its
 * `mounts` name claims the workload's pod mounts (by `source`), mounted again at their own
 * paths; hardened like the main container, small requests, the pod's user.
 */
export interface PodSidecar {
  name: string;
  image: string;
  /** The entrypoint; absent keeps the image's own. */
  command?: string[];
  /** Arguments to the entrypoint. */
  args?: string[];
  mounts: WorkloadMount[];
  env?: Record<string, string>;
  /** Mounts the pod's /tmp (the main container's) writable at /tmp. */
  tmp?: boolean;
  /** A writable /tmp of its own (an emptyDir no other container mounts): an MCP server image's (ADR 0066). */
  ownTmp?: boolean;
  /** Gets the worker's NATS credential as the main container does (placement credentialSecret). */
  gateCredentials?: boolean;
  /** A command whose success says it serves: the main container starts only then (startup probe, every second). */
  readyCommand?: string[];
  /** How long it may take to serve (seconds); default 60. */
  readySeconds?: number;
}

/** What shapes every pod, whoever asks for it. */
export interface PodShape {
  /** Runtime-instance label value; pod names end in it (podName). */
  instance: string;
  /** Pull policy when the spec sets none. Default IfNotPresent. */
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** User of workloads with a writable mount; default nobody. */
  writerUser?: PodUser;
  /** The namespace's ConfigMap holding gavel-launch: pods placed with streams "apart" run under it. */
  launcherConfigMap?: string;
}

/** The pod of one workload at its placement: the hardened manifest (pod-spec.ts), then the placement's fields. */
export function podFor(spec: WorkloadSpec, place: PodPlacement, shape: PodShape): k8s.V1Pod {
  const pod = podManifest({
    ...(place.streams === "apart" && shape.launcherConfigMap !== undefined ? { launcherConfigMap: shape.launcherConfigMap } : {}),
    spec,
    name: podName(spec.name, shape.instance),
    instance: shape.instance,
    user: userFor(spec.mounts, shape.writerUser),
    imagePullPolicy: spec.pullPolicy ?? shape.imagePullPolicy ?? "IfNotPresent",
    ...(place.owner !== undefined ? { ownerReferences: [place.owner] } : {}),
  });
  const { parts } = place;
  if (parts !== undefined && pod.spec !== undefined) {
    pod.spec.volumes = [...(pod.spec.volumes ?? []), partsVolume(parts.volume, parts.prefix, parts.descriptor)];
    for (const c of pod.spec.containers)
      c.volumeMounts = [...(c.volumeMounts ?? []), { name: parts.volume, mountPath: parts.mountPath, readOnly: true }];
  }
  if (place.sidecars !== undefined && pod.spec !== undefined) {
    pod.spec.volumes = [...(pod.spec.volumes ?? []), ...place.sidecars.filter((s) => s.ownTmp === true).map((s) => ownTmpVolume(s.name))];
    pod.spec.initContainers = [
      ...(pod.spec.initContainers ?? []),
      ...place.sidecars.map((s) => sidecarContainer(s, pod.spec?.volumes ?? [], shape)),
    ];
  }
  if (place.annotations !== undefined && pod.metadata !== undefined)
    pod.metadata.annotations = { ...pod.metadata.annotations, ...place.annotations };
  const pinned = place.node === undefined ? pod : onNode(pod, place.node);
  const gated = new Set((place.sidecars ?? []).filter((s) => s.gateCredentials === true).map((s) => s.name));
  return place.credentialSecret === undefined ? pinned : withWorkerCredentials(pinned, place.credentialSecret, gated);
}

function sidecarContainer(sidecar: PodSidecar, podVolumes: readonly k8s.V1Volume[], shape: PodShape): k8s.V1Container {
  const volumeMounts = sidecar.mounts.map((m) => {
    const podVolume = podVolumes.find((p) => p.persistentVolumeClaim?.claimName === m.source);
    return { name: podVolume?.name ?? "", mountPath: m.mountPath, readOnly: m.readOnly };
  });
  if (sidecar.tmp === true) volumeMounts.unshift({ name: "tmp", mountPath: "/tmp", readOnly: false });
  if (sidecar.ownTmp === true) volumeMounts.unshift({ name: ownTmpVolume(sidecar.name).name, mountPath: "/tmp", readOnly: false });
  return {
    name: sidecar.name,
    image: sidecar.image,
    imagePullPolicy: shape.imagePullPolicy ?? "IfNotPresent",
    restartPolicy: "Always",
    ...(sidecar.command !== undefined ? { command: sidecar.command } : {}),
    ...(sidecar.args !== undefined ? { args: sidecar.args } : {}),
    ...(sidecar.env !== undefined ? { env: Object.entries(sidecar.env).map(([name, value]) => ({ name, value })) } : {}),
    ...(sidecar.readyCommand !== undefined
      ? {
          startupProbe: {
            exec: { command: sidecar.readyCommand },
            periodSeconds: 1,
            failureThreshold: sidecar.readySeconds ?? 60,
            timeoutSeconds: 1,
          },
        }
      : {}),
    volumeMounts,
    resources: { requests: { cpu: "10m", memory: "16Mi" } },
    securityContext: { allowPrivilegeEscalation: false, privileged: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
  };
}

/** The emptyDir a sidecar with `ownTmp` mounts at /tmp, named after it. */
function ownTmpVolume(sidecar: string): k8s.V1Volume {
  return { name: `${sidecar}-tmp`, emptyDir: { sizeLimit: "64Mi" } };
}

/** Pins a pod to one node (required node affinity on metadata.name): where the worker's ReadWriteOnce claim is attached. */
export function onNode(pod: k8s.V1Pod, node: string): k8s.V1Pod {
  if (pod.spec === undefined) return pod;
  pod.spec.affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] }],
      },
    },
  };
  return pod;
}

/** A worker pod with the Execution's credential mounted read-only and GAVEL_NATS_CREDS_FILE set (in its main container and the named sidecars). */
export function withWorkerCredentials(pod: k8s.V1Pod, secretName: string, sidecars: ReadonlySet<string> = new Set()): k8s.V1Pod {
  const out = structuredClone(pod);
  const spec = out.spec;
  if (spec === undefined) return out;
  // Readable by whatever user the pod runs as: the pod holds one workload.
  spec.volumes = [
    ...(spec.volumes ?? []),
    { name: CREDS_VOLUME, secret: { secretName, defaultMode: 0o444, items: [{ key: WORKER_CREDS_KEY, path: WORKER_CREDS_KEY }] } },
  ];
  for (const c of [...spec.containers, ...(spec.initContainers ?? []).filter((i) => sidecars.has(i.name))]) {
    c.volumeMounts = [...(c.volumeMounts ?? []), { name: CREDS_VOLUME, mountPath: WORKER_CREDS_DIR, readOnly: true }];
    c.env = [
      ...(c.env ?? []).filter((e) => e.name !== AGENT_ENV.natsCreds && e.name !== AGENT_ENV.natsCredsFile),
      { name: AGENT_ENV.natsCredsFile, value: `${WORKER_CREDS_DIR}/${WORKER_CREDS_KEY}` },
    ];
  }
  return out;
}

/** How a pod that will not run again ended: exit code, deadline, or why it can never start. */
export interface PodEnd {
  exitCode: number;
  timedOut: boolean;
  /** Set when the pod never ran (image missing, bad config): the reason. */
  stuck?: string;
  /** Its main container went past its memory limit and was killed (OOMKilled). */
  oomKilled?: boolean;
  /** Its pod was deleted or evicted from outside before its program ended: why. */
  lost?: WorkloadLoss;
}

/**
 * Why a pod was stopped from outside, if it was: its DisruptionTarget condition (the Eviction
 * API, a preemption, the kubelet's node pressure, a taint), the kubelet's `Evicted`, or a
 * deletion. gavel deletes a judge's or worker's pod only once it ended or its Execution did,
 * so a pod of a running step being deleted was deleted by someone else.
 */
export function podLoss(pod: k8s.V1Pod): WorkloadLoss | undefined {
  const id = pod.metadata?.uid ?? pod.metadata?.name ?? "";
  const disruption = pod.status?.conditions?.find((c) => c.type === "DisruptionTarget" && c.status === "True");
  if (disruption !== undefined) return { id, reason: [disruption.reason, disruption.message].filter((x) => x).join(": ") };
  if (pod.status?.reason === "Evicted") return { id, reason: `Evicted: ${pod.status.message ?? "by the kubelet"}` };
  if (pod.metadata?.deletionTimestamp !== undefined) return { id, reason: "deleted" };
  return undefined;
}

/**
 * Whether the pod's main container ended by itself before the pod's deadline: the pod can still
 * pass its deadline afterwards while its native sidecars (an MCP server, the endpoint) stop, and
 * is then marked DeadlineExceeded although its program was not killed (its exit code stands).
 */
function endedBeforeDeadline(pod: k8s.V1Pod): boolean {
  const finished = pod.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
  const started = pod.status?.startTime;
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (finished === undefined || started === undefined || seconds === undefined) return false;
  return new Date(finished).getTime() < new Date(started).getTime() + seconds * 1000;
}

/** The end of a pod, or undefined while it may still run. */
export function podEnd(pod: k8s.V1Pod): PodEnd | undefined {
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") {
    const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
    // Ended without its main container running: an init container (the launcher's) failed.
    const stuck = terminated === undefined ? stuckReason(pod) : undefined;
    if (stuck !== undefined) return { exitCode: -1, timedOut: false, stuck };
    const lost = podLoss(pod);
    return {
      exitCode: terminated?.exitCode ?? 137,
      timedOut: pod.status?.reason === "DeadlineExceeded" && !endedBeforeDeadline(pod),
      ...(terminated?.reason === "OOMKilled" ? { oomKilled: true } : {}),
      ...(lost !== undefined ? { lost } : {}),
    };
  }
  const stuck = stuckReason(pod);
  return stuck === undefined ? undefined : { exitCode: -1, timedOut: false, stuck };
}

/** When a pod's main container ended (ms since the epoch); undefined while it runs or when the pod never says. */
export function podFinishedAt(pod: k8s.V1Pod): number | undefined {
  const phase = pod.status?.phase;
  if (phase !== "Succeeded" && phase !== "Failed") return undefined;
  const at = pod.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt as Date | string | undefined;
  const ms = at === undefined ? NaN : new Date(at).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Until when a pod no longer needed is kept, so `kubectl logs` can still read it:
 * `retentionSeconds` past the end of a pod that ended; undefined means delete it now (it
 * still runs, or retention is 0, or it ended that long ago).
 */
export function keepPodUntil(pod: k8s.V1Pod, retentionSeconds: number, now: number): number | undefined {
  const ended = podFinishedAt(pod);
  if (ended === undefined || retentionSeconds <= 0) return undefined;
  const until = ended + retentionSeconds * 1000;
  return until > now ? until : undefined;
}

/** A pod as a WorkloadObservation. */
export function observationOf(pod: k8s.V1Pod | undefined): WorkloadObservation {
  if (pod === undefined) return { state: "absent" };
  const node = pod.spec?.nodeName !== undefined ? { node: pod.spec.nodeName } : {};
  const end = podEnd(pod);
  if (end === undefined) return { state: pod.status?.phase === "Running" ? "running" : "pending", ...node };
  if (end.stuck !== undefined) return { state: "stuck", reason: end.stuck, ...node };
  const finished = podFinishedAt(pod);
  return {
    state: "ended",
    exitCode: end.exitCode,
    timedOut: end.timedOut,
    ...(finished !== undefined ? { finishedAt: new Date(finished) } : {}),
    ...node,
    ...(end.oomKilled === true ? { oomKilled: true } : {}),
    ...(end.lost !== undefined ? { lost: end.lost } : {}),
  };
}

/** Options of PodWorkloads. */
export interface PodWorkloadsOptions extends Omit<PodShape, "launcherConfigMap"> {
  core: k8s.CoreV1Api;
  net: k8s.NetworkingV1Api;
  /** The caller's pod cache (an informer of the instance's pods): observe, output and retire read it. */
  pods: { get(name: string, namespace?: string): k8s.V1Pod | undefined; list(namespace?: string): k8s.V1Pod[] };
  /** The gavel-launch binary, kept in a ConfigMap of each namespace; unset, programs run bare (merged logs). */
  launcher?: Buffer;
  now?: () => number;
}

/** The Workloads port on Kubernetes: pods, observed through the caller's cache. */
export class PodWorkloads implements Workloads<PodPlacement>, OwnedWorkloads {
  /** Namespaced shared objects (launcher ConfigMap, namespace NetworkPolicies) known to exist. */
  private readonly shared = new Set<string>();
  private readonly launcher: k8s.V1ConfigMap | undefined;
  private readonly shape: PodShape;
  private readonly now: () => number;

  constructor(private readonly opts: PodWorkloadsOptions) {
    this.launcher = opts.launcher === undefined ? undefined : launcherConfigMap(opts.launcher, { [LABELS.managed]: "gavel-controller" });
    const name = this.launcher?.metadata?.name;
    this.shape = {
      instance: opts.instance,
      ...(opts.imagePullPolicy !== undefined ? { imagePullPolicy: opts.imagePullPolicy } : {}),
      ...(opts.writerUser !== undefined ? { writerUser: opts.writerUser } : {}),
      ...(name !== undefined ? { launcherConfigMap: name } : {}),
    };
    this.now = opts.now ?? Date.now;
  }

  /** The pod name of a workload. */
  podName(name: string): string {
    return podName(name, this.opts.instance);
  }

  /**
   * Creates the pod after the NetworkPolicies that restrict it (an existing pod is adopted);
   * true when this call created it. A spec no pod can honour (specProblem: stdin, a reserved
   * mount path, ...) is a TerminalError naming the field.
   */
  async ensure(spec: WorkloadSpec, place: PodPlacement): Promise<boolean> {
    const problem = specProblem(spec);
    if (problem !== undefined) throw new TerminalError("InvalidWorkload", problem);
    const pod = podFor(spec, place, this.shape);
    const { namespace, gate } = place;
    if (isFramed(pod) && this.launcher !== undefined)
      await this.ensureShared(namespace, "ConfigMap", this.launcher, (body) =>
        this.opts.core.createNamespacedConfigMap({ namespace, body }),
      );
    if (pod.metadata?.labels?.[LABELS.network] === "none") {
      await this.ensureShared(namespace, "NetworkPolicy", denyAllNetworkPolicy(), (body) =>
        this.opts.net.createNamespacedNetworkPolicy({ namespace, body }),
      );
      if (gate !== undefined)
        await this.ensureShared(namespace, "NetworkPolicy", gate.policy, (body) =>
          this.opts.net.createNamespacedNetworkPolicy({ namespace, body }),
        );
    }
    // An allowlist's policy exists before its pod does, so the pod never runs unrestricted.
    const hosts = egressHostsOf(pod);
    if (hosts !== undefined) {
      const body = egressPolicy(pod, await egressCidrs(hosts), gate?.egress ?? []);
      await createOrAdopt(() => this.opts.net.createNamespacedNetworkPolicy({ namespace, body }));
    }
    return createOrAdopt(() => this.opts.core.createNamespacedPod({ namespace, body: pod }));
  }

  async observe(name: string, place: PodPlacement, opts: { uncached?: boolean } = {}): Promise<WorkloadObservation> {
    const pod =
      opts.uncached === true
        ? await this.opts.core.readNamespacedPod({ name: this.podName(name), namespace: place.namespace }).catch(ignoreNotFound)
        : this.opts.pods.get(this.podName(name), place.namespace);
    return observationOf(pod);
  }

  /** Its two streams when it ran under gavel-launch, else the merged log as stdout; a log that cannot be read says so in stdout. */
  async output(name: string, place: PodPlacement): Promise<WorkloadOutput> {
    const pod = this.podName(name);
    try {
      const text = await this.opts.core.readNamespacedPodLog({
        name: pod,
        namespace: place.namespace,
        container: "main",
        limitBytes: OUTPUT_CAP_BYTES,
      });
      return { ...podStreams(this.opts.pods.get(pod, place.namespace), text), truncated: Buffer.byteLength(text) >= OUTPUT_CAP_BYTES };
    } catch (err) {
      return { stdout: `[gavel: the log of pod ${pod} could not be read: ${messageOf(err)}]`, stderr: "", truncated: false };
    }
  }

  async retire(name: string, place: PodPlacement, retentionSeconds: number): Promise<number | undefined> {
    const pod = this.opts.pods.get(this.podName(name), place.namespace);
    return this.retirePod(pod ?? { metadata: { name: this.podName(name), namespace: place.namespace } }, retentionSeconds);
  }

  async retireOwned(
    namespace: string | undefined,
    owner: string,
    retentionSeconds: number,
    which: (labels: Readonly<Record<string, string>>) => boolean = () => true,
  ): Promise<number | undefined> {
    let next: number | undefined;
    for (const pod of this.opts.pods.list(namespace === "" ? undefined : namespace)) {
      if (
        !(pod.metadata?.ownerReferences ?? []).some((o) => o.controller === true && o.name === owner) ||
        !which(pod.metadata?.labels ?? {})
      )
        continue;
      const until = await this.retirePod(pod, retentionSeconds);
      if (until !== undefined) next = Math.min(next ?? until, until);
    }
    return next;
  }

  /** Deletes a pod, unless it ended within its retention: then returns until when it is kept. */
  async retirePod(pod: k8s.V1Pod, retentionSeconds: number): Promise<number | undefined> {
    const until = keepPodUntil(pod, retentionSeconds, this.now());
    const name = pod.metadata?.name;
    if (until !== undefined || name === undefined) return until;
    await this.opts.core
      .deleteNamespacedPod({ name, namespace: pod.metadata?.namespace ?? "default", gracePeriodSeconds: 0 })
      .catch(ignoreNotFound);
    return undefined;
  }

  /**
   * A namespace's shared object (the launcher ConfigMap, a namespace NetworkPolicy), created
   * once and kept; an existing one is adopted (same name, so the same bytes or the same
   * label selection).
   */
  private async ensureShared<T extends { metadata?: { name?: string } }>(
    namespace: string,
    kind: string,
    body: T,
    create: (body: T) => Promise<unknown>,
  ): Promise<void> {
    const key = `${kind} ${namespace}/${body.metadata?.name ?? ""}`;
    if (this.shared.has(key)) return;
    await createOrAdopt(() => create(body));
    this.shared.add(key);
  }
}
