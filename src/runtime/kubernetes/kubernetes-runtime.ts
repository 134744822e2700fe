// The WorkloadRuntime on Kubernetes: one hardened Pod per workload in one namespace, watched
// until it ends, its log read (capped), then deleted whatever happens.
//
// Honest limits, by design of Kubernetes rather than of this code:
// - Logs merge a container's stdout and stderr: `stdout` holds both, `stderr` is always "".
//   A judge must print its verdict last (it does: judges/shared/judge-io) and keep verdict-
//   like text off stderr; the exit-code validator gets no stderr tail here.
// - stdin: with a `command`, a ConfigMap (≤ ~1000 KiB) mounted read-only and redirected by
//   a `sh` wrapper; without one (the image's entrypoint runs), the container's stdin is
//   opened and written through the attach API once it runs (see StdinMode).
// - There is no per-pod "no network": `network: "none"` labels the pod into a deny-all
//   NetworkPolicy made once per namespace. Only a CNI that implements NetworkPolicy (Calico,
//   Cilium, ...) enforces it; the single-node test cluster's bridge CNI does not (measured:
//   a labelled pod's TCP connect to the node got ECONNREFUSED, a reply, not a drop).
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { CappedBuffer } from "../docker/capped-demux.js";
import type { WorkloadHandle, WorkloadMount, WorkloadResult, WorkloadRuntime, WorkloadSpec } from "../workload.js";
import { OUTPUT_CAP_BYTES } from "../workload.js";
import type { PodManifestInput, PodUser, StdinMode } from "./pod-spec.js";
import {
  LABELS,
  MAIN_CONTAINER,
  denyAllNetworkPolicy,
  pathInMount,
  podManifest,
  podName,
  specProblem,
  stdinConfigMap,
  stdinModeFor,
  stuckReason,
  userFor,
} from "./pod-spec.js";
import { READER_MISSING, volumeReader } from "../file-reader.js";
import { httpStatusOf, messageOf } from "../../errors.js";

/** How a KubernetesRuntime is set up. */
export interface KubernetesRuntimeOptions {
  kubeConfig: k8s.KubeConfig;
  /** Namespace of every pod, ConfigMap and the NetworkPolicy. */
  namespace: string;
  /** Default IfNotPresent; "Never" for images imported straight into the node's containerd. */
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  /** Set on every pod and ConfigMap (e.g. the Execution), so deleting the owner collects them. */
  ownerReferences?: k8s.V1OwnerReference[];
  /** User of workloads with a writable mount; default nobody (65534). Read-only ones are always nobody. */
  writerUser?: PodUser;
  /** Image for the short-lived reader of `readFile`; needs `sh` and `cat`. */
  readerImage?: string;
  /** Seconds a reader may take. Default 60 (it includes scheduling and container start). */
  readerTimeoutSeconds?: number;
  /** Create the deny-all NetworkPolicy for `network: "none"` pods. Default true. */
  networkPolicy?: boolean;
  /** "auto" (default): a ConfigMap when the spec has a command, else attach; "attach": always attach. */
  stdinVia?: "auto" | "attach";
}

/** A Kubernetes API call failed or a pod could not run; `cause` holds the client's error. */
export class KubernetesRuntimeError extends Error {
  override readonly name = "KubernetesRuntimeError";
}



/** The exit code reported for a pod that was deleted before it finished (as SIGKILL would). */
const KILLED_EXIT = 137;

/** API clients and identity shared by the runtime and its workloads. */
interface Cluster {
  core: k8s.CoreV1Api;
  kc: k8s.KubeConfig;
  namespace: string;
}

/** Runs workloads as Pods in one namespace. */
export class KubernetesRuntime implements WorkloadRuntime {
  /** Identifies this runtime's pods (label + name suffix) among others in the namespace. */
  readonly instance: string;
  private readonly cluster: Cluster;
  private readonly net: k8s.NetworkingV1Api;
  private readonly live = new Map<string, KubernetesWorkload>();
  private policy: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: KubernetesRuntimeOptions) {
    this.instance = randomBytes(4).toString("hex");
    this.cluster = {
      core: options.kubeConfig.makeApiClient(k8s.CoreV1Api),
      kc: options.kubeConfig,
      namespace: options.namespace,
    };
    this.net = options.kubeConfig.makeApiClient(k8s.NetworkingV1Api);
  }

  /** Creates the pod (and its stdin ConfigMap); resolves once the API accepted it. */
  async start(spec: WorkloadSpec): Promise<WorkloadHandle> {
    if (this.closed) throw new KubernetesRuntimeError(`runtime is closed; cannot start ${spec.name}`);
    const problem = specProblem(spec);
    if (problem !== undefined) throw new KubernetesRuntimeError(problem);
    if (spec.network === "none" && this.options.networkPolicy !== false) await this.ensureNetworkPolicy();
    const name = podName(spec.name, this.instance);
    const stdinMode = stdinModeFor(spec, this.options.stdinVia === "attach");
    const input: PodManifestInput = {
      spec,
      name,
      instance: this.instance,
      stdinMode,
      user: userFor(spec.mounts, this.options.writerUser),
      ...(this.options.imagePullPolicy !== undefined ? { imagePullPolicy: this.options.imagePullPolicy } : {}),
      ...(this.options.ownerReferences !== undefined ? { ownerReferences: this.options.ownerReferences } : {}),
    };
    const { core, namespace } = this.cluster;
    const withStdin = stdinMode === "configmap";
    try {
      if (withStdin) await core.createNamespacedConfigMap({ namespace, body: stdinConfigMap(input) });
      await core.createNamespacedPod({ namespace, body: podManifest(input) });
    } catch (err) {
      if (withStdin) await deleteConfigMap(this.cluster, name);
      const hint = httpStatusOf(err) === 409 ? ` (a pod or ConfigMap named ${name} already exists)` : "";
      throw new KubernetesRuntimeError(`creating pod ${name} for ${spec.name} in ${namespace} failed${hint}: ${messageOf(err)}`, { cause: err });
    }
    const workload = new KubernetesWorkload(this.cluster, spec, name, stdinMode, () => this.live.delete(name));
    this.live.set(name, workload);
    workload.begin();
    return workload;
  }

  /**
   * Reads `path` (relative to the mount, or absolute under its mountPath) through a
   * short-lived reader pod with the claim mounted read-only: a symlink the worker planted
   * resolves inside that pod, never on this host.
   */
  async readFile(mount: WorkloadMount, path: string): Promise<string | undefined> {
    const inside = pathInMount(mount.mountPath, path);
    if (inside === undefined) throw new KubernetesRuntimeError(`path ${path} is outside the mount ${mount.mountPath}`);
    const handle = await this.start(volumeReader(`reader-${randomBytes(3).toString("hex")}`, this.options.readerImage ?? "gavel/base:bookworm-node20", mount, inside, this.options.readerTimeoutSeconds ?? 60));
    const r = await handle.wait();
    if (r.timedOut) throw new KubernetesRuntimeError(`reading ${inside} from volume ${mount.name} timed out`);
    if (r.exitCode === READER_MISSING) return undefined;
    if (r.exitCode !== 0) {
      throw new KubernetesRuntimeError(`reading ${inside} from volume ${mount.name} failed (exit ${r.exitCode}): ${r.stdout.trim()}`);
    }
    if (r.truncated) throw new KubernetesRuntimeError(`${inside} in volume ${mount.name} is larger than ${OUTPUT_CAP_BYTES} bytes`);
    return r.stdout;
  }

  /** Stops every live workload, then deletes whatever pod or ConfigMap still has this instance's label. */
  async close(): Promise<void> {
    this.closed = true;
    const live = [...this.live.values()];
    await Promise.all(live.map((w) => w.stop().catch(() => undefined)));
    await Promise.all(live.map((w) => w.wait().catch(() => undefined)));
    const { core, namespace } = this.cluster;
    const labelSelector = `${LABELS.instance}=${this.instance}`;
    // 404: the namespace is gone, and everything in it.
    const gone = (err: unknown): void => {
      if (httpStatusOf(err) !== 404) throw err;
    };
    await core.deleteCollectionNamespacedPod({ namespace, labelSelector, gracePeriodSeconds: 0 }).catch(gone);
    await core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector }).catch(gone);
  }

  /** Creates the namespace's deny-all NetworkPolicy once; an existing one is kept. */
  private ensureNetworkPolicy(): Promise<void> {
    this.policy ??= this.net
      .createNamespacedNetworkPolicy({ namespace: this.cluster.namespace, body: denyAllNetworkPolicy() })
      .then(
        () => undefined,
        (err: unknown) => {
          if (httpStatusOf(err) === 409) return;
          this.policy = undefined;
          throw new KubernetesRuntimeError(`creating the deny-all NetworkPolicy in ${this.cluster.namespace} failed: ${messageOf(err)}`, { cause: err });
        },
      );
    return this.policy;
  }
}

async function deleteConfigMap(cluster: Cluster, name: string): Promise<void> {
  try {
    await cluster.core.deleteNamespacedConfigMap({ name, namespace: cluster.namespace });
  } catch (err) {
    if (httpStatusOf(err) !== 404) throw err;
  }
}

async function deletePod(cluster: Cluster, name: string, gracePeriodSeconds?: number): Promise<void> {
  try {
    await cluster.core.deleteNamespacedPod({
      name,
      namespace: cluster.namespace,
      ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
    });
  } catch (err) {
    if (httpStatusOf(err) !== 404) throw err;
  }
}

async function readPod(cluster: Cluster, name: string): Promise<k8s.V1Pod | undefined> {
  try {
    return await cluster.core.readNamespacedPod({ name, namespace: cluster.namespace });
  } catch (err) {
    if (httpStatusOf(err) === 404) return undefined;
    throw err;
  }
}

function finished(pod: k8s.V1Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

type EndReason = "deadline" | "stop";

/** The part of the attach WebSocket used here. */
interface AttachSocket {
  close(): void;
  on(event: "close", listener: () => void): void;
  on(event: "error", listener: (err: Error) => void): void;
}

/** One pod: watch, deadline, stop, logs and deletion. */
class KubernetesWorkload implements WorkloadHandle {
  readonly name: string;
  private readonly startedAt = new Date();
  private killReason: EndReason | undefined;
  private kill: Promise<void> | undefined;
  /** Output read just before a kill deleted the pod (its log goes with it). */
  private killOutput: CappedBuffer | undefined;
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private result: Promise<WorkloadResult> | undefined;
  private feeding: Promise<void> = Promise.resolve();
  private feedError: Error | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly spec: WorkloadSpec,
    private readonly pod: string,
    private readonly stdinMode: StdinMode,
    private readonly forget: () => void,
  ) {
    this.name = spec.name;
  }

  /** Arms the client-side deadline and starts watching. */
  begin(): void {
    // The pod's activeDeadlineSeconds is the kubelet's kill; this one also covers a pod
    // that never got scheduled or started. setTimeout fires at once past 2^31-1 ms.
    this.timer = setTimeout(() => this.end("deadline"), Math.min(this.spec.timeoutSeconds * 1000, 2 ** 31 - 1));
    if (this.stdinMode === "attach") {
      this.feeding = this.feedStdin().catch((err: unknown) => {
        // Without its stdin the workload would wait for it until the deadline: end it now.
        this.feedError = err instanceof Error ? err : new KubernetesRuntimeError(String(err));
        this.end("stop");
      });
    }
    this.result = this.finish();
    // wait() may be called late; the result is kept until then.
    this.result.catch(() => undefined);
  }

  wait(): Promise<WorkloadResult> {
    if (this.result === undefined) return Promise.reject(new KubernetesRuntimeError(`${this.name} was never started`));
    return this.result;
  }

  stop(): Promise<void> {
    this.end("stop");
    return this.kill ?? Promise.resolve();
  }

  private end(reason: EndReason): void {
    if (this.kill !== undefined || this.settled) return;
    this.killReason = reason;
    this.kill = (async () => {
      // Read what it printed so far: deleting the pod deletes its log.
      this.killOutput = await withTimeout(this.logs(), 5000).catch(() => undefined);
      await deletePod(this.cluster, this.pod);
    })();
    this.kill.catch(() => undefined);
    this.wake?.();
  }

  /**
   * Writes spec.stdin through the attach API once the container runs, then closes it
   * (v5.channel.k8s.io half-close; with stdinOnce the kubelet closes the container's stdin
   * when the attach session ends either way). A container that ended first is left alone.
   */
  private async feedStdin(): Promise<void> {
    const deadline = Date.now() + this.spec.timeoutSeconds * 1000;
    for (;;) {
      if (this.kill !== undefined || this.settled) return;
      const pod = await readPod(this.cluster, this.pod);
      if (pod === undefined || finished(pod)) return;
      const state = pod.status?.containerStatuses?.[0]?.state;
      if (state?.terminated !== undefined) return;
      if (state?.running !== undefined) break;
      if (Date.now() > deadline) return;
      await delay(150);
    }
    try {
      await this.attachStdin();
    } catch (err) {
      // A workload that ended (or was stopped) before or while we attached did not need it.
      if (this.kill !== undefined || this.settled) return;
      const pod = await readPod(this.cluster, this.pod).catch(() => undefined);
      if (pod === undefined || finished(pod) || pod.status?.containerStatuses?.[0]?.state?.terminated !== undefined) return;
      throw err;
    }
  }

  private async attachStdin(): Promise<void> {
    const input = Readable.from([Buffer.from(this.spec.stdin ?? "", "utf8")]);
    // The client's WebSocket type comes from isomorphic-ws, whose types are not installed.
    const ws = (await new k8s.Attach(this.cluster.kc).attach(this.cluster.namespace, this.pod, MAIN_CONTAINER, null, null, input, false)) as unknown as AttachSocket;
    await new Promise<void>((resolve, reject) => {
      // After the stdin close frame (v5) or the socket close (older protocols) the kubelet
      // ends the session; end it ourselves after a grace if it does not.
      const timer = setTimeout(() => {
        ws.close();
        resolve();
      }, 10_000);
      ws.on("close", () => {
        clearTimeout(timer);
        resolve();
      });
      ws.on("error", (err: Error) => {
        clearTimeout(timer);
        reject(new KubernetesRuntimeError(`writing stdin to pod ${this.pod} failed: ${err.message}`, { cause: err }));
      });
    });
  }

  private async logs(): Promise<CappedBuffer> {
    const text = await this.cluster.core.readNamespacedPodLog({
      name: this.pod,
      namespace: this.cluster.namespace,
      container: MAIN_CONTAINER,
      limitBytes: OUTPUT_CAP_BYTES + 1,
    });
    const out = new CappedBuffer();
    out.push(Buffer.from(text, "utf8"));
    return out;
  }

  private async finish(): Promise<WorkloadResult> {
    try {
      const pod = await this.untilDone();
      this.settled = true;
      const finishedAt = new Date();
      if (this.timer !== undefined) clearTimeout(this.timer);
      if (this.kill !== undefined) await this.kill.catch(() => undefined);
      await this.feeding;
      if (this.feedError !== undefined) throw this.feedError;
      let out = this.killOutput;
      if (out === undefined && pod !== undefined) out = await this.logs().catch(() => undefined);
      const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
      const deadlineExceeded = pod?.status?.reason === "DeadlineExceeded";
      return {
        exitCode: terminated?.exitCode ?? KILLED_EXIT,
        stdout: out?.text() ?? "",
        stderr: "",
        truncated: out?.truncated ?? false,
        timedOut: this.killReason === "deadline" || (deadlineExceeded && this.killReason !== "stop"),
        cancelled: this.killReason === "stop",
        startedAt: this.startedAt,
        finishedAt,
      };
    } finally {
      this.settled = true;
      if (this.timer !== undefined) clearTimeout(this.timer);
      await this.remove().catch(() => undefined);
      this.forget();
    }
  }

  /** Deletes the pod and its ConfigMap and waits (bounded) until the pod is gone from the API. */
  private async remove(): Promise<void> {
    await deletePod(this.cluster, this.pod);
    if (this.stdinMode === "configmap") await deleteConfigMap(this.cluster, this.pod);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && (await readPod(this.cluster, this.pod)) !== undefined) await delay(250);
  }

  /** The pod once Succeeded/Failed, or undefined once it is gone; throws if it can never start. */
  private async untilDone(): Promise<k8s.V1Pod | undefined> {
    for (;;) {
      const pod = await readPod(this.cluster, this.pod);
      if (pod === undefined) return undefined;
      if (finished(pod)) return pod;
      const stuck = stuckReason(pod);
      if (stuck !== undefined) {
        throw new KubernetesRuntimeError(`pod ${this.pod} (${this.spec.name}, image ${this.spec.image}) cannot start: ${stuck}`);
      }
      const began = Date.now();
      await this.changed(pod.metadata?.resourceVersion);
      // A watch that ends at once (e.g. 410 Gone) must not turn this into a busy loop.
      if (Date.now() - began < 200) await delay(200);
    }
  }

  /** Resolves on the next event for this pod, when the watch ends, on a kill, or after 30 s. */
  private changed(resourceVersion: string | undefined): Promise<void> {
    // Once killed, poll: the pod is about to disappear.
    if (this.kill !== undefined) return delay(250);
    return new Promise<void>((resolve) => {
      let controller: AbortController | undefined;
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.wake = undefined;
        controller?.abort();
        resolve();
      };
      const timer = setTimeout(finish, 30_000);
      this.wake = finish;
      new k8s.Watch(this.cluster.kc)
        .watch(
          `/api/v1/namespaces/${this.cluster.namespace}/pods`,
          {
            fieldSelector: `metadata.name=${this.pod}`,
            ...(resourceVersion !== undefined ? { resourceVersion } : {}),
            timeoutSeconds: 60,
          },
          () => finish(),
          () => finish(),
        )
        .then(
          (c) => {
            controller = c;
            if (done) c.abort();
          },
          () => finish(),
        );
    });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, delay(ms).then(() => Promise.reject(new Error(`timed out after ${ms} ms`)))]);
}
