// The README and docs link check on planted pages: links outside code, GitHub's heading
// anchors, and the problems it reports.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { README_MAX_BYTES, checkDocs, headingAnchors, headingSlug, markdownLinks } from "./doc-links.js";

describe("markdownLinks", () => {
  it("finds relative links and images, not web links and not links inside code", () => {
    const page = 'See [a](docs/a.md) and ![b](img/b.png "title").\n`[c](c.md)` [d](https://x.dev)\n```\n[e](e.md)\n```\n[f](#here)\n';
    expect(markdownLinks(page)).toEqual([
      { target: "docs/a.md", line: 1 },
      { target: "img/b.png", line: 1 },
      { target: "#here", line: 6 },
    ]);
  });
});

describe("headingAnchors", () => {
  it("makes GitHub's anchors: punctuation dropped, code marks too, duplicates numbered", () => {
    expect(headingSlug("Hot reload from the API (`src/controller/guard-policy-source.ts`)")).toBe(
      "hot-reload-from-the-api-srccontrollerguard-policy-sourcets",
    );
    expect(headingSlug("Workspaces: how a judge sees the worker's volumes")).toBe("workspaces-how-a-judge-sees-the-workers-volumes");
    expect([...headingAnchors("# Top\n## Notes\n```\n# not a heading\n```\n## Notes\n")]).toEqual(["top", "notes", "notes-1"]);
  });
});

describe("checkDocs", () => {
  const root = mkdtempSync(join(tmpdir(), "gavel-docs-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, "docs"));
  writeFileSync(join(root, "docs", "a.md"), "# A\n## Part one\nBack to [the README](../README.md#gavel).\n");

  it("passes a README whose links lead to existing files and headings", () => {
    writeFileSync(join(root, "README.md"), "# gavel\n[a](docs/a.md#part-one) [docs](docs/)\n");
    expect(checkDocs(root)).toEqual([]);
  });

  it("names the page, line and link of a missing file or heading, and a README past its size", () => {
    writeFileSync(join(root, "README.md"), `# gavel\n[a](docs/a.md#part-two)\n[b](docs/b.md)\n${"x".repeat(README_MAX_BYTES)}\n`);
    expect(checkDocs(root)).toEqual([
      expect.stringMatching(/^README\.md: \d+ bytes, past 20000/),
      "README.md:2: link docs/a.md#part-two: docs/a.md has no heading #part-two",
      "README.md:3: link docs/b.md: docs/b.md does not exist",
    ]);
  });
});
