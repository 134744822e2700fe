// Entry point of the `gavel` binary (bin/gavel runs dist/cli/main.js, the bundle of its compiled form: src/cli/bundle.mjs; the controller image runs dist/src/cli/main.js).
import { entryOf, main } from "./app.js";

// bin/gavel asks for stack traces through the source maps (the TypeScript lines) with
// GAVEL_SOURCE_MAPS=1 (the controller image runs this file without them, as before); a quick
// command (commands.ts) goes without: Node reads the map of every module loaded after this,
// which costs a short command like `gavel guard check` about a tenth of its start
// (bench/cli-start.ts, ADR 0043).
if (process.env.GAVEL_SOURCE_MAPS === "1" && entryOf(process.argv.slice(2))?.quick !== true) process.setSourceMapsEnabled(true);

// stderr and stdin are Node's streams made at first read of process.stderr / process.stdin (a
// pipe or a terminal loads node:net, a file fs's streams): a command that never writes an error
// or reads its input (`gavel guard check`) does not make them.
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  get stderr() {
    return process.stderr;
  },
  get stdin() {
    return process.stdin;
  },
  env: process.env,
  cwd: process.cwd(),
});
