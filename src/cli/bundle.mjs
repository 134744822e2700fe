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

await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: { main: join(root, "dist", "src", "cli", "main.js") },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
  plugins: [ownUrl],
});
