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
import { build } from "esbuild";
import { readFile, rm } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const outdir = join(root, "dist", "cli");

/** Replaces `import.meta.url` in each dist/src module by that module's own URL, relative to the chunk. */
const ownUrl = {
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /[\\/]dist[\\/]src[\\/].*\.js$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const rel = relative(outdir, args.path).split(sep).join("/");
      return { contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: "js" };
    });
  },
};

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
await build({ ...common, entryPoints: { main: join(root, "dist", "src", "cli", "main.js") }, splitting: true, format: "esm", plugins: [ownUrl] });
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
  plugins: [ownUrl, lazyFromSrc],
});
