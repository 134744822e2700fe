// The files a run's validators read (json_schema's target_path and schema_path, regex on a
// file), each read by a workload of its own (runtime/file-reader.ts, the reader local mode
// runs too): a workspace file with its claim mounted read-only, an image file in the agent's
// own image. Level-triggered: one reconcile creates the reader, its end wakes the Execution,
// and a later reconcile reads its log. Its name is fixed by the Execution, the iteration and
// the path, so a restarted controller finds it again.
import { createHash } from "node:crypto";
import { defaultImages } from "../children/images.js";
import { CHILD_LABELS, type OwnerMarks } from "../children/workloads.js";
import type { FileRequest } from "../engine/outer-loop.js";
import type { FileContent } from "../engine/validators.js";
import { imageReader, readerContent, volumeReader } from "../runtime/file-reader.js";
import type { WorkloadSpec } from "../runtime/workload.js";
import { placementOf, workloadPodName } from "./execution-pods.js";
import { ensureWorkload, type ExecutionParts, type RunContext } from "./execution-parts.js";

/** Seconds a reader may take. */
const READER_TIMEOUT_SECONDS = 60;

/** A run's validator files, read by reader workloads. */
export class FileReaders {
  constructor(private readonly parts: ExecutionParts) {}

  /**
   * The content of a validator's file: creates its reader when it is missing; undefined until
   * it has ended. Finished readers stay (a later reconcile that rebuilt its state reads them
   * again) until the next iteration starts or the Execution ends.
   */
  async content(ctx: RunContext, iteration: number, f: FileRequest): Promise<FileContent | undefined> {
    const name = readerName(ctx.owner.name, iteration, f.key);
    const place = placementOf(ctx.owner);
    const { workloads } = this.parts;
    const seen = await workloads.observe(name, place);
    if (seen.state === "absent") {
      const spec = this.readerWorkload(ctx, name, iteration, f);
      if ("problem" in spec) return { ok: false, reason: "unreadable", detail: spec.problem };
      await ensureWorkload(this.parts, spec, place);
      return undefined;
    }
    if (seen.state === "stuck")
      return { ok: false, reason: "unreadable", detail: `the reader pod ${workloadPodName(name)} cannot start: ${seen.reason}` };
    if (seen.state !== "ended") return undefined;
    const out = await workloads.output(name, place);
    // A reader's log merges stderr into stdout: an error's message is in the log, a content never has stderr.
    return readerContent(
      { exitCode: seen.exitCode, stdout: out.stdout, stderr: "", timedOut: seen.timedOut, truncated: out.truncated },
      f.from,
    );
  }

  /** Retires the readers of iterations before `iteration` of the run that `owner` marks (their validators are recorded). */
  async removeBefore(owner: OwnerMarks, iteration: number): Promise<void> {
    await this.parts.workloads.retireOwned(
      owner.namespace,
      owner.name,
      0,
      (labels) => labels[CHILD_LABELS.role] === "reader" && Number(labels[CHILD_LABELS.iteration]) < iteration,
    );
  }

  /** The reader of one file (runtime/file-reader.ts), labelled with its Execution and iteration (removeBefore finds it so); or why it cannot be read. */
  private readerWorkload(ctx: RunContext, name: string, iteration: number, f: FileRequest): WorkloadSpec | { problem: string } {
    const { readerImage } = this.parts.settings;
    let spec: WorkloadSpec;
    if (f.from === "image") {
      // The worker's own image (its Agent's, its runtime's, else gavel's agent image): the file is baked into it.
      const { runtime } = ctx.program;
      const image = "image" in runtime ? runtime.image : defaultImages().worker;
      spec = imageReader(name, image, f.path, READER_TIMEOUT_SECONDS);
    } else {
      // The run's workspace, mounted read-only by the reader.
      const mounts = ctx.mounts;
      const mount = mounts
        .filter((m) => f.path === m.mountPath || f.path.startsWith(m.mountPath.endsWith("/") ? m.mountPath : `${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      if (mount === undefined)
        return { problem: `${f.path} is not inside any workspace volume (${mounts.map((m) => m.mountPath).join(", ") || "none"})` };
      spec = volumeReader(name, readerImage, mount, f.path, READER_TIMEOUT_SECONDS);
    }
    const labels = {
      ...spec.labels,
      [CHILD_LABELS.execution]: ctx.owner.label,
      [CHILD_LABELS.role]: "reader",
      [CHILD_LABELS.iteration]: String(iteration),
    };
    return { ...spec, labels };
  }
}

/** The workload name of iteration N's reader of one file (its FileRequest key): deterministic, so a reconcile finds it again. */
export function readerName(execution: string, iteration: number, fileKey: string): string {
  return `${execution}-i${iteration}-read-${createHash("sha256").update(fileKey).digest("hex").slice(0, 10)}`;
}
