// Entry point of the command-judge image: payload in (stdin / GAVEL_INPUT), GradientResult out.
import { runJudge } from "../shared/judge-io.js";
import { commandJudge, configFromEnv } from "./command-judge.js";

process.exitCode = await runJudge((payload) => commandJudge(payload, configFromEnv(process.env), process.env), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
