// Reading one file for a validator, in one place for both drivers and both sources: a
// short-lived reader workload with no network that runs `sh` and `cat`, either over a
// workspace volume mounted read-only (a symlink the worker planted resolves inside the
// reader, never on the host) or in the agent's own image (json_schema's `schema_path`).
// Local mode runs the reader to its end (runToEnd); the controller creates it as a pod and
// reads its end on a later reconcile, so no reconcile waits for a pod.
import type { FileContent } from "../engine/validators.js";
import { OUTPUT_CAP_BYTES, type WorkloadMount, type WorkloadResult, type WorkloadSpec } from "./workload.js";

/** Exit code of a reader when the file does not exist. */
export const READER_MISSING = 3;

// `$1` is the path. Missing (exit 3) only when its directory is searchable, so a permission
// problem is an error rather than "no file"; `-f` so a directory is an error too.
const READER_SCRIPT = [
  `if [ ! -e "$1" ]; then if [ -x "$(dirname -- "$1")" ]; then exit ${READER_MISSING}; fi; echo "cannot access $1 (permissions?)" >&2; exit 4; fi`,
  `if [ ! -f "$1" ]; then echo "not a regular file: $1" >&2; exit 4; fi`,
  `exec cat -- "$1"`,
].join("; ");

/** The reader's command; it replaces the image's ENTRYPOINT on every runtime (ADR 0004). */
export function readerCommand(path: string): string[] {
  return ["sh", "-c", READER_SCRIPT, "reader", path];
}

/** A reader of `path` (absolute, inside the mount) on a volume mounted read-only. */
export function volumeReader(name: string, image: string, mount: WorkloadMount, path: string, timeoutSeconds: number): WorkloadSpec {
  return {
    name,
    image,
    command: readerCommand(path),
    mounts: [{ ...mount, readOnly: true }],
    network: "none",
    timeoutSeconds,
    resources: { memoryBytes: 128 * 1024 * 1024 },
  };
}

/** A reader of `path` in `image`: no mounts. */
export function imageReader(name: string, image: string, path: string, timeoutSeconds: number): WorkloadSpec {
  return {
    name,
    image,
    command: readerCommand(path),
    mounts: [],
    network: "none",
    timeoutSeconds,
    resources: { memoryBytes: 128 * 1024 * 1024 },
  };
}

/** What a finished reader means for the validator. */
export function readerContent(
  r: Pick<WorkloadResult, "exitCode" | "stdout" | "stderr" | "timedOut" | "truncated">,
  from: "workspace" | "image",
): FileContent {
  if (r.exitCode === READER_MISSING && !r.timedOut)
    return { ok: false, reason: "missing", detail: from === "image" ? "not in the agent's image" : "no such file" };
  if (r.exitCode !== 0 || r.timedOut || r.truncated) {
    // Pod logs carry stderr in stdout, so the tail of whichever has text explains the exit.
    const tail = (r.stderr.trim() || r.stdout.trim()).slice(-300);
    const why = r.timedOut
      ? "the reader timed out"
      : r.truncated
        ? `file larger than ${OUTPUT_CAP_BYTES / 1024 / 1024} MiB`
        : `exit ${r.exitCode}: ${tail}`;
    return {
      ok: false,
      reason: "unreadable",
      detail: from === "image" ? `${why} (gavel reads files from the agent's image with sh and cat)` : why,
    };
  }
  return { ok: true, content: r.stdout };
}
