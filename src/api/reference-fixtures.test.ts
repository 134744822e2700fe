// The reference fixtures are the references' own text: each verbatim block (or whole manifest),
// de-indented, occurs in the reference document it names.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "..", "..");
const refDir = join(repo, "test", "fixtures", "reference");
// The reference documents live outside the repository (../shared/reference from the checkout).
const sources = join(repo, "..", "shared", "reference");
const MARK = "# ---- verbatim from the reference ----";

function dedent(lines: string[]): string {
  const indent = Math.min(...lines.filter((l) => l.trim() !== "").map((l) => l.length - l.trimStart().length));
  return lines
    .map((l) => l.slice(indent))
    .join("\n")
    .trim();
}

describe.skipIf(!existsSync(sources))("reference fixtures", () => {
  for (const file of readdirSync(refDir).filter((f) => f.endsWith(".yaml"))) {
    it(`${file} is verbatim`, () => {
      const text = readFileSync(join(refDir, file), "utf8");
      const source = file.startsWith("av-") ? "agent-validation.txt" : "tool-call-judging.txt";
      const reference = readFileSync(join(sources, source), "utf8");
      const lines = text.split("\n");
      const mark = lines.findIndex((l) => l.trim() === MARK);
      // Fragments: the block after the marker; whole manifests: everything after the header comment.
      const block = mark >= 0 ? lines.slice(mark + 1) : lines.slice(lines.findIndex((l) => !l.startsWith("#")));
      expect(reference).toContain(dedent(block));
    });
  }
});
