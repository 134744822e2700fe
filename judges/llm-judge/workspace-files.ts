// Files the llm judge shows the model: `include: PATH` lines of the criteria, read from the
// worker's read-only mounts (relative paths: under the first mount that has them), capped.
import { readFile } from "node:fs/promises";
import { posix } from "node:path";
import { messageOf } from "../../src/errors.js";

/** Bytes of one file shown to the model; the rest is cut with a marker. */
export const FILE_CAP_BYTES = 32 * 1024;
const MAX_FILES = 10;

/** A file's content for the prompt, or why it could not be included. */
export interface IncludedFile {
  path: string;
  content?: string;
  problem?: string;
}

/** The `include: PATH` lines of the criteria, at most ten. */
export function includePaths(criteria: string): string[] {
  const paths: string[] = [];
  for (const line of criteria.split(/\r?\n/)) {
    const m = /^\s*(?:[-*]\s+)?include\s*:\s*(.+?)\s*$/.exec(line);
    if (m !== null) paths.push(m[1] as string);
  }
  return paths.slice(0, MAX_FILES);
}

function under(mount: string, full: string): boolean {
  return full === mount || full.startsWith(mount.endsWith("/") ? mount : `${mount}/`);
}

async function readCapped(path: string): Promise<string | undefined> {
  try {
    const buf = await readFile(path);
    const text = buf.subarray(0, FILE_CAP_BYTES).toString("utf8");
    return buf.length > FILE_CAP_BYTES ? `${text}\n[… ${buf.length - FILE_CAP_BYTES} more bytes not shown]` : text;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

/** Reads the requested files; a path outside the worker mounts is refused, not read. */
export async function includedFiles(criteria: string, mounts: readonly string[]): Promise<IncludedFile[]> {
  const out: IncludedFile[] = [];
  for (const path of includePaths(criteria)) {
    const candidates = path.startsWith("/") ? [posix.normalize(path)] : mounts.map((m) => posix.normalize(posix.join(m, path)));
    const allowed = candidates.filter((c) => mounts.some((m) => under(m, c)));
    if (allowed.length === 0) {
      out.push({ path, problem: "outside the worker mounts; not read" });
      continue;
    }
    let content: string | undefined;
    for (const c of allowed) {
      content = await readCapped(c).catch((err: unknown) => `[unreadable: ${messageOf(err)}]`);
      if (content !== undefined) break;
    }
    out.push(content === undefined ? { path, problem: "missing" } : { path, content });
  }
  return out;
}
