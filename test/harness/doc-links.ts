// The README stays a front door and every page's links lead somewhere: a drift check run by
// `make verify` (test/harness/verify.d/docs.sh). It fails when README.md grows past its size
// limit, or when a relative link in README.md or a page under docs/, examples/ or judges/ names a
// file that does not exist or a heading (#anchor) that file does not have.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO_DIR } from "./paths.js";

/** The README's size limit in bytes: details go to docs/ (issue 22: a front door under 20 KB). */
export const README_MAX_BYTES = 20_000;

/** The folders whose markdown pages are checked beside README.md. */
const PAGE_DIRS = ["docs", "examples", "judges"];

/** One link of a page: where it points and the line it is on. */
export interface DocLink {
  target: string;
  line: number;
}

/** The page's text with fenced code blocks and inline code blanked out (their links are examples). */
function withoutCode(text: string): string {
  const blank = (s: string): string => s.replace(/[^\n]/g, " ");
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank).replace(/`[^`\n]*`/g, blank);
}

/** The relative links of a markdown page (`[text](target)`, images too), outside code. */
export function markdownLinks(text: string): DocLink[] {
  const links: DocLink[] = [];
  withoutCode(text)
    .split("\n")
    .forEach((line, i) => {
      for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1] ?? "";
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        links.push({ target, line: i + 1 });
      }
    });
  return links;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors a page's headings make, duplicates numbered as GitHub numbers them (-1, -2). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of withoutCodeFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = headingSlug(m[1] ?? "");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

function withoutCodeFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : markdownFiles(path);
    return e.name.endsWith(".md") ? [path] : [];
  });
}

/** What is wrong with a page's links, one line each, naming the page, its line and the link. */
export function brokenLinks(root: string, page: string): string[] {
  const text = readFileSync(page, "utf8");
  const name = relative(root, page);
  const problems: string[] = [];
  for (const { target, line } of markdownLinks(text)) {
    const [pathPart = "", anchor] = target.split("#", 2);
    const file = pathPart === "" ? page : resolve(dirname(page), decodeURIComponent(pathPart));
    if (!existsSync(file)) {
      problems.push(`${name}:${line}: link ${target}: ${relative(root, file)} does not exist`);
      continue;
    }
    if (anchor && file.endsWith(".md") && statSync(file).isFile() && !headingAnchors(readFileSync(file, "utf8")).has(anchor)) {
      problems.push(`${name}:${line}: link ${target}: ${relative(root, file)} has no heading #${anchor}`);
    }
  }
  return problems;
}

/** Every problem of the repository's front door and pages: README.md's size, then broken links. */
export function checkDocs(root: string): string[] {
  const readme = join(root, "README.md");
  const problems: string[] = [];
  const size = statSync(readme).size;
  if (size > README_MAX_BYTES) {
    problems.push(`README.md: ${size} bytes, past ${README_MAX_BYTES}: move details to docs/ and link them (issue 22)`);
  }
  const pages = [readme, ...PAGE_DIRS.flatMap((d) => (existsSync(join(root, d)) ? markdownFiles(join(root, d)) : []))];
  for (const page of pages) problems.push(...brokenLinks(root, page));
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const problems = checkDocs(process.argv[2] ?? REPO_DIR);
  for (const p of problems) console.error(p);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
