// Copies the production dependency closure of the worker runtime out of node_modules, so
// the agent image carries only what the agent imports: the packages are found by walking
// the static imports of the compiled entry point, then resolved in package-lock.json.
// Usage: node copy-deps.mjs <dir with package-lock.json and node_modules> <dest> <entry.js>
//    or: node copy-deps.mjs <dir> <dest> pkg:<name>   (a package and its closure, dev or not:
//        the MCP servers an example image carries, examples/mcp-tools/build-image.sh)
import { cpSync, existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve as resolvePath } from "node:path";

const [from, dest, entry] = process.argv.slice(2);
if (!from || !dest || !entry) {
  process.stderr.write("usage: copy-deps.mjs <from> <dest> <entry.js>\n");
  process.exit(2);
}

// The bare packages the entry point reaches through relative imports, and through require()
// (a package loaded on first use with createRequire, as src/engine/re2.ts loads re2js).
function packagesImportedBy(file) {
  const seen = new Set();
  const packages = new Set();
  const queue = [resolvePath(file)];
  // A specifier holds no whitespace or quote: prose in a string ("missing subcommand: export")
  // is not read as an export.
  const specifier = /(?:^|[\s;}])(?:import|export)\s*(?:[^"'`;]*?\sfrom\s*)?["']([^"'`\s]+)["']|import\(\s*["']([^"'`\s]+)["']\s*\)|\brequire\(\s*["']([^"'`\s]+)["']\s*\)/g;
  while (queue.length > 0) {
    const f = queue.pop();
    if (seen.has(f)) continue;
    seen.add(f);
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(specifier)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (spec.startsWith(".")) {
        const target = resolvePath(dirname(f), spec);
        if (!existsSync(target)) throw new Error(`${f} imports ${spec}, which does not exist`);
        queue.push(target);
      } else if (!spec.startsWith("node:") && !builtinModules.includes(spec.split("/")[0])) {
        const parts = spec.split("/");
        packages.add(spec.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]);
      }
    }
  }
  return [...packages].sort();
}

const wholePackage = entry.startsWith("pkg:");
const roots = wholePackage ? [entry.slice(4)] : packagesImportedBy(entry);
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
  if (info.dev === true && !wholePackage) throw new Error(`${p} is a dev dependency; the agent must not need it`);
  for (const d of Object.keys({ ...info.dependencies, ...info.optionalDependencies })) {
    const r = resolve(p, d);
    if (r !== undefined) queue.push(r);
    else if (!(d in (info.optionalDependencies ?? {}))) throw new Error(`${p} needs ${d}, missing from the lockfile`);
  }
}
for (const p of [...keep].sort()) cpSync(join(from, p), join(dest, p), { recursive: true, dereference: true });
process.stdout.write(`imports ${roots.join(" ")}; ${keep.size} packages: ${[...keep].map((p) => p.replace(/^.*node_modules\//, "")).sort().join(" ")}\n`);
