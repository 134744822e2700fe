// The workspace volumes of a run as claims: the worker's own (one per `spec.volumes` entry)
// and a judge's private copies of them (workspace strategy `copy`, ADR 0034), filled by a
// copier workload before the judge starts, or, for a tool-call judge while the worker's pod
// holds a ReadWriteOncePod claim, streamed out of that pod (ADR 0041, 0044). Snapshots are
// workspace-snapshots.ts'.
import type * as k8s from "@kubernetes/client-node";
import type { Agent, Execution } from "../api/types.js";
import { ownerMarks, type OwnerMarks } from "../children/workloads.js";
import { workerName } from "../engine/child-names.js";
import { createOrAdopt, messageOf } from "../errors.js";
import {
  claimManifest,
  COPY_SOURCE_ANNOTATION,
  COPY_SOURCE_CONTAINER,
  copierName,
  copierWorkload,
  copyClaimManifest,
  copySourceCommand,
  placementOf,
  streamCopierWorkload,
  workloadPodName,
  type WorkspaceCopy,
} from "./execution-pods.js";
import { ensureWorkload, namespaceOf, type ExecutionParts } from "./execution-parts.js";
import { copyWorkspace } from "./workspace-stream.js";

/** Where a judge's copy stands: made, being made, or why it failed. */
export type CopyState = "done" | "copying" | { failed: string };

/** The Kubernetes a stream copy needs beyond the Workloads port: pods/exec, and the pods as the cache has them. */
export interface StreamAccess {
  kc: k8s.KubeConfig;
  pods: { get(name: string, namespace?: string): k8s.V1Pod | undefined };
}

/** The claims of a run's workspace volumes and the judges' copies of them. */
export class WorkspaceCopies {
  private readonly core: k8s.CoreV1Api;
  /** Stream copies started by this process, by copier pod (namespace/name): why the source failed, once known. */
  private readonly streams = new Map<string, { problem?: string }>();

  constructor(
    private readonly parts: ExecutionParts,
    private readonly stream: StreamAccess,
  ) {
    this.core = parts.core;
  }

  /** The worker's claims, one per workspace volume of its Agent (an existing one is adopted), marked as its Execution's. */
  async ensureClaims(owner: OwnerMarks, agent: Agent): Promise<void> {
    for (const v of agent.spec.volumes ?? []) {
      await createOrAdopt(() =>
        this.core.createNamespacedPersistentVolumeClaim({ namespace: owner.namespace, body: claimManifest(owner, v) }),
      );
    }
  }

  /**
   * The judge's copies of the worker's volumes: their claims and a copier, created once;
   * "done" when the copier succeeded, "copying" while it runs, or why it failed.
   * Level-triggered: the copier's state is the state. A tool-call judge of a worker whose pod
   * carries the copy source, while that pod runs, gets its copies streamed out of it (ADR
   * 0041): the worker's ReadWriteOncePod claims cannot be mounted elsewhere.
   */
  async ensure(child: Execution, copies: WorkspaceCopy[], node: string | undefined): Promise<CopyState> {
    const namespace = namespaceOf(child);
    const name = copierName(child.metadata.name);
    const place = placementOf(ownerMarks(child));
    const { workloads } = this.parts;
    const seen = await workloads.observe(name, place);
    if (seen.state === "absent") {
      // A cache that has not seen the judge's pod yet must not start a second copy under it.
      if ((await workloads.observe(child.metadata.name, place, { uncached: true })).state !== "absent") return "done";
      for (const c of copies)
        await createOrAdopt(() => this.core.createNamespacedPersistentVolumeClaim({ namespace, body: copyClaimManifest(child, c) }));
      const image = this.parts.settings.readerImage;
      const source = await this.copySource(child);
      if (source !== undefined)
        await ensureWorkload(this.parts, streamCopierWorkload(child, copies, image), {
          ...place,
          annotations: { [COPY_SOURCE_ANNOTATION]: source },
        });
      else await ensureWorkload(this.parts, copierWorkload(child, copies, image), node === undefined ? place : { ...place, node });
      return "copying";
    }
    const key = `${namespace}/${name}`;
    if (seen.state === "stuck") return { failed: `the workspace copy cannot start: ${seen.reason}` };
    if (seen.state !== "ended") {
      // A stream copier names its source pod; the stream starts once the copier's container runs.
      const source = this.stream.pods.get(workloadPodName(name), namespace)?.metadata?.annotations?.[COPY_SOURCE_ANNOTATION];
      if (source !== undefined && seen.state === "running" && !this.streams.has(key))
        this.startStream(key, namespace, source, workloadPodName(name), copies);
      return "copying";
    }
    if (seen.exitCode === 0) return "done";
    const log = (await workloads.output(name, place)).stdout;
    const sourceProblem = this.streams.get(key)?.problem;
    return {
      failed: `the workspace copy failed (exit ${seen.exitCode}${seen.timedOut ? ", deadline" : ""}): ${log.slice(-500)}${sourceProblem !== undefined ? ` (${sourceProblem})` : ""}`,
    };
  }

  /** The copier holds the copies (ReadWriteOncePod): it goes once the judge's pod exists. */
  async release(child: Execution): Promise<void> {
    await this.parts.workloads.retire(copierName(child.metadata.name), { namespace: namespaceOf(child) }, 0);
  }

  /** The worker pod a tool-call judge's copies are streamed from: its parent's current worker pod, while it runs with the copy source; else undefined. */
  private async copySource(child: Execution): Promise<string | undefined> {
    if (child.spec.parent?.purpose !== "tool_validation") return undefined;
    const worker = workerName(child.spec.parent.name, child.spec.parent.iteration ?? 1);
    const pod = this.stream.pods.get(workloadPodName(worker), namespaceOf(child));
    const carries = pod?.spec?.initContainers?.some((c) => c.name === COPY_SOURCE_CONTAINER) ?? false;
    const { state } = await this.parts.workloads.observe(worker, { namespace: namespaceOf(child) });
    return carries && (state === "pending" || state === "running") ? workloadPodName(worker) : undefined;
  }

  /**
   * Starts one stream copy (once per copier in this process; its commit wakes the child through
   * the copier pod's end). A copier left running by a controller that died mid-copy gets its
   * copy from here, from the start (ADR 0044): nothing of a cut attempt is committed.
   */
  private startStream(key: string, namespace: string, sourcePod: string, copierPod: string, copies: WorkspaceCopy[]): void {
    const entry: { problem?: string } = {};
    const { logger } = this.parts;
    this.streams.set(key, entry);
    logger.info({ copier: key, source: sourcePod }, "workspace stream copy started");
    copyWorkspace(this.stream.kc, { namespace, sourcePod, copierPod, command: copySourceCommand(copies) })
      .then(
        (problem) => {
          if (problem !== undefined) entry.problem = problem;
        },
        (err: unknown) => {
          entry.problem = messageOf(err);
        },
      )
      .finally(() => {
        if (entry.problem !== undefined) logger.warn({ copier: key, problem: entry.problem }, "workspace stream failed");
        // Forgotten once its copier can no longer need it.
        setTimeout(() => this.streams.delete(key), 10 * 60_000).unref();
      });
  }
}
