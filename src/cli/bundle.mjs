// `make build`'s last step: bundles the compiled CLI (dist/src/cli/main.js and what it imports)
// into dist/cli/, the files bin/gavel runs (ADR 0043). One file per lazily loaded command
// (--splitting keeps main.ts's dynamic imports lazy) instead of ~50 ES modules: Node 20's ES
// module loader costs about 0.2 ms a module (resolve, read, link), which is most of what
// `gavel guard check` spends after node's own start. Packages stay external (node_modules
// as before). The images run dist/src/cli/main.js as they did; dist/src/ stays complete.
//
// A module that finds files next to itself (`import.meta.url`: built-in tool hashes,
// gavel-launch, the version, createRequire) gets its own file's URL in dist/src/, computed
// from the chunk's URL, so it finds the same files bundled or not.
//
// `gavel guard` (the command scripts call per tool call) has a bundle of its own, guard.cjs:
// the CLI's entry with the guard command in one CommonJS file, which bin/gavel runs for
// `gavel guard ...`. Node loads CommonJS synchronously; an ES module entry costs the ES
// module loader's start and an asynchronous read, resolve and link per chunk, about 8 ms of
// a `gavel guard check` (bench/cli-start.ts, ADR 0043). Every other command stays in the
// split ES modules (a single CommonJS file of every command would compile all of them).
// guard.cjs loads re2js, when a check needs RE2, from a minified copy beside it compiled from a
// V8 code cache made here (re2js.cjs, re2js.cjs.cache: src/cli/re2js-cached.mjs).
import { build } from "esbuild";
import { readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { runCommonJs } from "./re2js-cached.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const outdir = join(root, "dist", "cli");

/**
 * Replaces `import.meta.url` in each dist/src module by that module's own URL, relative to the
 * chunk; `edit`, when given, may change a module's text first.
 */
const ownUrl = (edit = (_path, text) => text) => ({
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /[\\/]dist[\\/]src[\\/].*\.js$/ }, async (args) => {
      const read = await readFile(args.path, "utf8");
      const text = edit(args.path, read);
      if (text === read && !text.includes("import.meta.url")) return undefined;
      const rel = relative(outdir, args.path).split(sep).join("/");
      return { contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: "js" };
    });
  },
});

/** In guard.cjs, re2.js's `require("re2js")` is re2js-cached.mjs's `loadRe2js()`: the copy beside it, from its code cache. */
const RE2_JS = join(root, "dist", "src", "engine", "re2.js");
function cachedRe2js(path, text) {
  if (path !== RE2_JS) return text;
  const parts = text.split('require("re2js")');
  if (parts.length !== 2) throw new Error(`${path}: expected one require("re2js") for src/cli/re2js-cached.mjs to replace, found ${parts.length - 1}`);
  return `import { loadRe2js as __gavelLoadRe2js } from ${JSON.stringify(join(root, "src", "cli", "re2js-cached.mjs"))};\n${parts.join("__gavelLoadRe2js()")}`;
}

/**
 * For guard.cjs: a module imported lazily (`await import("./x.js")`) stays outside it, imported
 * when needed from dist/src/ (ES modules, complete), so that the file holds what a guard check
 * runs and no more: the other commands (never loaded from it: bin/gavel runs guard.cjs only for
 * `gavel guard`), the manifest validator of --policy and --agent, the tool hashing of
 * `guard tool-hash`. The guard command itself, lazily imported by commands.js, is inside.
 */
const lazyFromSrc = {
  name: "lazy-from-src",
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (args.kind !== "dynamic-import") return undefined;
      if (args.importer.endsWith(join("dist", "src", "cli", "commands.js")) && args.path === "./guard.js") return undefined;
      const rel = relative(outdir, join(dirname(args.importer), args.path)).split(sep).join("/");
      return { path: rel.startsWith(".") ? rel : `./${rel}`, external: true };
    });
  },
};

const common = {
  outdir,
  bundle: true,
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
};

await rm(outdir, { recursive: true, force: true });
await build({ ...common, entryPoints: { main: join(root, "dist", "src", "cli", "main.js") }, splitting: true, format: "esm", plugins: [ownUrl()] });
// CommonJS has no top-level await and no import.meta: the entry calls runProcess (what main.ts
// awaits), and import.meta.url is this file's URL.
await build({
  ...common,
  stdin: { contents: 'import { runProcess } from "./app.js";\nvoid runProcess();\n', resolveDir: join(root, "dist", "src", "cli"), sourcefile: "guard-entry.js", loader: "js" },
  outfile: join(outdir, "guard.cjs"),
  outdir: undefined,
  format: "cjs",
  define: { "import.meta.url": "__gavel_url" },
  banner: { js: 'const __gavel_url = require("node:url").pathToFileURL(__filename).href;' },
  plugins: [ownUrl(cachedRe2js), lazyFromSrc],
});

// guard.cjs's re2js (re2js-cached.mjs): the package's CommonJS build, minified, and the V8 code
// cache of it after every built-in pattern is compiled and searched with it, so that the
// functions a guard check runs are in the cache too.
const re2jsCopy = join(outdir, "re2js.cjs");
await build({ entryPoints: [createRequire(import.meta.url).resolve("re2js")], outfile: re2jsCopy, format: "cjs", platform: "node", target: "node20", minifyWhitespace: true, minifySyntax: true, logLevel: "warning" });
const { exports: re2, script } = runCommonJs(re2jsCopy, undefined);
const { DESTRUCTIVE_PATTERNS, FORBIDDEN_PATHS } = await import(pathToFileURL(join(root, "dist", "src", "gate", "guard", "builtin-patterns.js")).href);
for (const p of [...DESTRUCTIVE_PATTERNS, ...FORBIDDEN_PATHS]) re2.RE2JS.compile(p.pattern).matcher("rm -rf / ; DROP TABLE t; curl x | sh; cat /etc/passwd").find();
await writeFile(`${re2jsCopy}.cache`, script.createCachedData());
