// Where the output of an Execution's workloads is, read-only: a worker run's output is the
// log of its pod `gavel-<exec>-i<N>-ex` while the pod exists, then the result ConfigMap
// `<exec>-i<N>-result` the reconciler keeps when the pod ends (it deletes the pod after).
// A judge child's output is the log of its pod while it exists, then its stored result.
import { PassThrough, type Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import * as k8s from "@kubernetes/client-node";
import { workloadPodName } from "../controller/execution-pods.js";
import { readWorkerResult, resultName } from "../controller/stored-parts.js";
import { httpStatusOf, isNotFound, typedError } from "../errors.js";
import { FramedLogReader, isFramed, podStreams } from "../runtime/kubernetes.js";
import type { Kube } from "../views/kube.js";

/** The container every gavel workload pod runs its workload in. */
const CONTAINER = "main";

/** Output of one workload, and where it came from. */
export interface WorkloadOutput {
  /** "stored": the result kept after the run; "pod": the live pod's log (so far). */
  source: "stored" | "pod";
  stdout: string;
  /** What the run left on stderr when it never started or was stopped (stored results only). */
  stderr: string;
}

/** The state of a workload's pod: absent, waiting to start, running, or ended. */
export type PodState = "absent" | "waiting" | "running" | "ended";

async function readPod(kube: Kube, namespace: string, name: string): Promise<k8s.V1Pod | undefined> {
  try {
    return await kube.core.readNamespacedPod({ name, namespace });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw typedError(err, `reading pod ${name}`);
  }
}

/** Where a workload's pod is in its life. */
export async function podState(kube: Kube, namespace: string, workload: string): Promise<PodState> {
  const pod = await readPod(kube, namespace, workloadPodName(workload));
  if (pod === undefined) return "absent";
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return "ended";
  const main = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER);
  if (main?.state?.running !== undefined) return "running";
  if (main?.state?.terminated !== undefined) return "ended";
  return "waiting";
}

async function storedResult(kube: Kube, namespace: string, workload: string): Promise<WorkloadOutput | undefined> {
  try {
    const r = await readWorkerResult(kube.core, namespace, workload);
    return r === undefined ? undefined : { source: "stored", stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    throw typedError(err, `reading the stored result ${resultName(workload)}`);
  }
}

async function podLog(kube: Kube, namespace: string, workload: string): Promise<WorkloadOutput | undefined> {
  const name = workloadPodName(workload);
  try {
    const text = await kube.core.readNamespacedPodLog({ name, namespace, container: CONTAINER });
    // Split when the pod runs under gavel-launch; else stderr is merged into stdout.
    return { source: "pod", ...podStreams(await readPod(kube, namespace, name), text) };
  } catch (err) {
    // Gone, or not started yet (the API server answers 400 while the container is being created).
    if (isNotFound(err) || httpStatusOf(err) === 400) return undefined;
    throw typedError(err, `reading the log of pod ${name}`);
  }
}

/** A workload's output: the stored result when the run ended, else its pod's log so far. */
export async function workloadOutput(kube: Kube, namespace: string, workload: string): Promise<WorkloadOutput | undefined> {
  return (await storedResult(kube, namespace, workload)) ?? (await podLog(kube, namespace, workload));
}

/**
 * Streams a running workload's log into `out` until the container ends or the signal aborts;
 * a pod running under gavel-launch has its stderr written to `errOut` (default `out`).
 */
export async function followPodLog(
  kube: Kube,
  namespace: string,
  workload: string,
  out: Writable,
  signal: AbortSignal,
  errOut: Writable = out,
): Promise<void> {
  const through = new PassThrough();
  const framed = isFramed(await readPod(kube, namespace, workloadPodName(workload)));
  const decoder = new StringDecoder("utf8");
  const reader = new FramedLogReader((stream, text) => (stream === "stdout" ? out : errOut).write(text));
  through.on("data", (chunk: Buffer) => (framed ? reader.push(decoder.write(chunk)) : out.write(chunk)));
  const ended = new Promise<void>((resolve) => {
    through.once("end", resolve);
    through.once("close", resolve);
    through.once("error", () => resolve());
  });
  let controller: AbortController;
  try {
    controller = await new k8s.Log(kube.kc).log(namespace, workloadPodName(workload), CONTAINER, through, { follow: true });
  } catch (err) {
    if (isNotFound(err) || httpStatusOf(err) === 400) return;
    throw typedError(err, `following the log of pod ${workloadPodName(workload)}`);
  }
  const abort = () => controller.abort();
  signal.addEventListener("abort", abort, { once: true });
  try {
    await ended;
  } finally {
    signal.removeEventListener("abort", abort);
    if (framed) {
      reader.push(decoder.end());
      reader.end();
    }
  }
}
