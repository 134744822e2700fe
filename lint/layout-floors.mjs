// The floors of docs/layout.md, read from the page itself so that the lint rule and the map
// cannot disagree (ADR 0050): each line of its first fenced block that starts with `src/` is a
// floor, top first; indented lines (`  runtime/`) are sub-folders of the floor above them.
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The page the floors are read from, relative to the repository root. */
export const LAYOUT_PAGE = "docs/layout.md";

/**
 * The floors listed in a layout page's first fenced block, top first: `src/cli/` for a folder,
 * `src/errors.ts` for a file at the top of src/. Throws, naming the page, when it lists none.
 */
export function parseFloors(text, page = LAYOUT_PAGE) {
  const fence = /^```[^\n]*\n([\s\S]*?)^```/m.exec(text);
  if (!fence) throw new Error(`${page}: no fenced block listing the floors (src/... lines)`);
  const floors = [];
  for (const line of fence[1].split("\n")) {
    const m = /^(src\/[\w.-]+\/?)(\s|$)/.exec(line);
    if (!m) continue;
    const floor = m[1];
    if (!floor.endsWith("/") && !floor.endsWith(".ts") && !floor.endsWith(".c")) {
      throw new Error(`${page}: floor "${floor}" is neither a folder (ending in /) nor a file`);
    }
    if (floors.includes(floor)) throw new Error(`${page}: floor "${floor}" is listed twice`);
    floors.push(floor);
  }
  if (floors.length === 0) throw new Error(`${page}: its first fenced block lists no src/ floor`);
  return floors;
}

/** The floors of the repository at root, read from its docs/layout.md. */
export function readFloors(root) {
  return parseFloors(readFileSync(join(root, LAYOUT_PAGE), "utf8"));
}
