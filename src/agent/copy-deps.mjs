// Copies the production dependency closure of the worker runtime out of node_modules, as
// resolved in package-lock.json, so the agent image carries only what the agent imports.
// Usage: node copy-deps.mjs <dir with package-lock.json and node_modules> <dest> <root>...
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [from, dest, ...roots] = process.argv.slice(2);
if (!from || !dest || roots.length === 0) {
  process.stderr.write("usage: copy-deps.mjs <from> <dest> <package>...\n");
  process.exit(2);
}
const packages = JSON.parse(readFileSync(join(from, "package-lock.json"), "utf8")).packages;

// Node's resolution over lockfile paths: the nearest node_modules up from the dependent.
function resolve(dependent, name) {
  let base = dependent;
  for (;;) {
    const candidate = `${base === "" ? "" : `${base}/`}node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === "") return undefined;
    const i = base.lastIndexOf("/node_modules/");
    base = i < 0 ? "" : base.slice(0, i);
  }
}

const keep = new Set();
const queue = roots.map((r) => {
  const p = resolve("", r);
  if (p === undefined) throw new Error(`${r} is not in package-lock.json`);
  return p;
});
while (queue.length > 0) {
  const p = queue.pop();
  if (keep.has(p)) continue;
  keep.add(p);
  const info = packages[p];
  if (info.dev === true) throw new Error(`${p} is a dev dependency; the agent must not need it`);
  for (const d of Object.keys({ ...info.dependencies, ...info.optionalDependencies })) {
    const r = resolve(p, d);
    if (r !== undefined) queue.push(r);
    else if (!(d in (info.optionalDependencies ?? {}))) throw new Error(`${p} needs ${d}, missing from the lockfile`);
  }
}
for (const p of [...keep].sort()) cpSync(join(from, p), join(dest, p), { recursive: true, dereference: true });
process.stdout.write(`${keep.size} packages: ${[...keep].map((p) => p.replace(/^.*node_modules\//, "")).sort().join(" ")}\n`);
