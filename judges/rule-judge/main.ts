// Entry point of the rule-judge image: payload in (stdin / GAVEL_INPUT), GradientResult out.
import { readFile } from "node:fs/promises";
import { runJudge } from "../shared/judge-io.js";
import { configFromEnv, ruleJudge } from "./rule-judge.js";

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

process.exitCode = await runJudge(async (payload) => ruleJudge(payload, configFromEnv(process.env), readIfPresent), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
