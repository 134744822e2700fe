// The "live code" of tools for guard check 2: the files that implement each tool, hashed with
// SHA-256. Built-in tools are the worker runtime's own modules; registered tools name their files.
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { basename } from "node:path";

/** SHA-256 over a tool's files in the given order: for each, its base name, a NUL, its bytes. */
export function hashToolCode(files: readonly { name: string; content: Buffer }[]): string {
  const h = createHash("sha256");
  for (const f of files) {
    h.update(f.name);
    h.update("\u0000");
    h.update(f.content);
  }
  return h.digest("hex");
}

/**
 * Keeps the live hash of each tool's files. `refresh` re-reads only files whose size or mtime
 * changed, so calling it before every decision (or on a timer or a file watch) is cheap; the
 * guard itself only compares strings.
 */
export class ToolCodeHasher {
  private current = new Map<string, string>();
  private readonly seen = new Map<string, { key: string; content: Buffer }>();

  /** `files`: tool name → paths of the files that implement it. */
  constructor(private readonly files: Readonly<Record<string, readonly string[]>>) {}

  /**
   * Re-hashes every tool (or only `tools`) whose files changed; a file that cannot be read
   * leaves its tool without a hash (a mismatch).
   */
  async refresh(tools?: readonly string[]): Promise<void> {
    const next = tools === undefined ? new Map<string, string>() : new Map(this.current);
    for (const tool of tools ?? Object.keys(this.files)) {
      const paths = Object.hasOwn(this.files, tool) ? this.files[tool] : undefined;
      if (paths === undefined) continue;
      next.delete(tool);
      try {
        const parts: { name: string; content: Buffer }[] = [];
        for (const path of paths) {
          const st = await stat(path);
          const key = `${st.size}:${st.mtimeMs}:${st.ino}`;
          let cached = this.seen.get(path);
          if (cached === undefined || cached.key !== key) {
            cached = { key, content: await readFile(path) };
            this.seen.set(path, cached);
          }
          parts.push({ name: basename(path), content: cached.content });
        }
        next.set(tool, hashToolCode(parts));
      } catch {
        // Missing or unreadable code has no hash: check 2 denies the tool until it is back.
      }
    }
    this.current = next;
  }

  /** The hashes from the last refresh. */
  hashes(): ReadonlyMap<string, string> {
    return this.current;
  }
}
