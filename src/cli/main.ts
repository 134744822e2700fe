// Entry point of the `gavel` binary (bin/gavel runs the compiled form of this file).
import { main } from "./app.js";

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
