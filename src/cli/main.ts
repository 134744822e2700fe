// Entry point of the `gavel` binary (bin/gavel runs dist/cli/main.js, the bundle of its compiled
// form, or for `gavel guard` dist/cli/guard.cjs: src/cli/bundle.mjs; the controller image runs
// dist/src/cli/main.js).
import { runProcess } from "./app.js";

await runProcess();
