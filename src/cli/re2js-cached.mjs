// re2js for dist/cli/guard.cjs (src/cli/bundle.mjs, ADR 0043): a copy of re2js's CommonJS
// build beside the bundle, dist/cli/re2js.cjs (minified), compiled from the V8 code cache that
// `make build` made for it after compiling and searching every built-in pattern with it. A
// `gavel guard check` that needs RE2 then neither resolves the package, parses 300 KB nor
// compiles the functions a search runs: about 12 ms -> 6 ms to load re2js and run a first
// pattern. The bundle step puts `loadRe2js()` where regex.ts requires "re2js" (in guard.cjs
// only: dist/src, the images and the tests require the package). V8 refuses a cache made by
// another Node version or with other V8 flags; the copy is then compiled as any file is.
import { readFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Script } from "node:vm";

/** Runs the CommonJS file as Node would, compiled from `cachedData` when V8 accepts it; its exports and its script. */
export function runCommonJs(file, cachedData) {
  const script = new Script(Module.wrap(readFileSync(file, "utf8")), { filename: file, cachedData });
  const module = { exports: {} };
  script.runInThisContext().call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return { exports: module.exports, script };
}

/** guard.cjs's re2js: the copy beside it, with its code cache (`__dirname` is dist/cli in guard.cjs). */
export function loadRe2js() {
  const file = join(__dirname, "re2js.cjs");
  let cachedData;
  try {
    cachedData = readFileSync(`${file}.cache`);
  } catch {
    cachedData = undefined;
  }
  return runCommonJs(file, cachedData).exports;
}
