// Reading one file from an agent's image (json_schema's `schema_path`): a one-shot reader
// workload of that image, no mounts, no network. Both drivers (local mode and the
// Kubernetes controller) read image files through here.
import type { FileContent } from "../engine/validators/outcome.js";
import { OUTPUT_CAP_BYTES, type WorkloadRuntime } from "./workload.js";

/** Exit code of the reader when the file does not exist. */
const MISSING = 3;

// The command replaces the image's ENTRYPOINT on every runtime (ADR 0004); `$1` is the path.
const READ_SCRIPT = `if [ ! -e "$1" ]; then exit ${MISSING}; fi; exec cat -- "$1"`;

/** What to read, and the workload that reads it. */
export interface ImageFileRequest {
  /** Workload name, unique among the runtime's live workloads. */
  name: string;
  image: string;
  path: string;
  timeoutSeconds: number;
}

/** Reads `path` from `image`; a missing file and an unreadable one are told apart. */
export async function readFileFromImage(runtime: WorkloadRuntime, req: ImageFileRequest): Promise<FileContent> {
  const handle = await runtime.start({
    name: req.name,
    image: req.image,
    command: ["sh", "-c", READ_SCRIPT, "reader", req.path],
    mounts: [],
    network: "none",
    timeoutSeconds: req.timeoutSeconds,
  });
  const r = await handle.wait();
  if (r.exitCode === MISSING) return { ok: false, reason: "missing", detail: "not in the agent's image" };
  if (r.exitCode !== 0 || r.timedOut || r.truncated) {
    // Pod logs carry stderr in stdout, so the tail of whichever has text explains the exit.
    const tail = (r.stderr.trim() || r.stdout.trim()).slice(-300);
    const why = r.timedOut ? "the reader timed out" : r.truncated ? `file larger than ${OUTPUT_CAP_BYTES} bytes` : `exit ${r.exitCode}: ${tail}`;
    return { ok: false, reason: "unreadable", detail: `${why} (gavel reads files from the agent's image with sh and cat)` };
  }
  return { ok: true, content: r.stdout };
}
