// The integration tier spawns bin/gavel, which runs dist/: after an edit or a rebase without
// `make build` it would test the old code and pass or fail for the wrong reason. This global
// setup refuses to start the tier when a source file is newer than what it compiles to.
import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { REPO_DIR } from "./paths.js";

/** Directories tsconfig.build.json compiles that the spawned binaries run. */
const COMPILED = ["src", "judges"];

/** The source files (not tests) under `dir` whose compiled `.js` in dist/ is missing or older. */
export async function staleOutputs(repo: string, dir: string): Promise<string[]> {
  const stale: string[] = [];
  for (const entry of await readdir(join(repo, dir), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".test.ts") || entry.name.endsWith(".d.ts")) continue;
    const source = join(entry.parentPath, entry.name);
    const rel = relative(repo, source);
    const output = join(repo, "dist", rel.replace(/\.ts$/, ".js"));
    const [s, o] = await Promise.all([stat(source), stat(output).catch(() => undefined)]);
    if (o === undefined || o.mtimeMs < s.mtimeMs) stale.push(rel);
  }
  return stale;
}

/** "dist/cli" when bin/gavel's bundles (src/cli/bundle.mjs: main.js, guard.cjs) are missing or older than a module of dist/src they bundle. */
export async function staleBundle(repo: string): Promise<string[]> {
  const bundles = await Promise.all(["main.js", "guard.cjs"].map((f) => stat(join(repo, "dist", "cli", f)).catch(() => undefined)));
  if (bundles.some((b) => b === undefined)) return ["dist/cli"];
  const built = Math.min(...bundles.map((b) => b?.mtimeMs ?? 0));
  for (const entry of await readdir(join(repo, "dist", "src"), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".js")) continue;
    if ((await stat(join(entry.parentPath, entry.name))).mtimeMs > built) return ["dist/cli"];
  }
  return [];
}

export default async function setup(): Promise<void> {
  const stale = [...(await Promise.all(COMPILED.map((d) => staleOutputs(REPO_DIR, d)))).flat(), ...(await staleBundle(REPO_DIR))];
  if (stale.length > 0) {
    const shown = stale.slice(0, 5).join(", ") + (stale.length > 5 ? ` and ${stale.length - 5} more` : "");
    throw new Error(`dist/ is older than ${shown}: the tests would run the old code through bin/gavel; run 'make build'`);
  }
}
