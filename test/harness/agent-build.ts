// The worker runtime compiled for tests that run it as a real process: src/agent/main.ts and
// only what it imports, so they do not depend on dist/.
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { run, type ExecResult } from "./exec.js";
import { REPO_DIR } from "./paths.js";

/** A compiled worker runtime: run it with an environment, remove it when done. */
export interface AgentBuild {
  /** Where it was compiled (the repository's layout below it). */
  dir: string;
  /** Runs the worker with env; onStderr sees its whole stderr so far after each chunk (to wait on a log line). */
  run(env: Record<string, string>, timeoutMs?: number, onStderr?: (stderr: string) => void): Promise<ExecResult>;
  remove(): Promise<void>;
}

/** Compiles the worker runtime into .tmp/NAME-PID. */
export async function buildAgent(name: string): Promise<AgentBuild> {
  const dir = join(REPO_DIR, ".tmp", `${name}-${process.pid}`);
  await mkdir(dir, { recursive: true });
  const tsc = await run(
    join(REPO_DIR, "node_modules", ".bin", "tsc"),
    [
      "--outDir",
      dir,
      "--rootDir",
      REPO_DIR,
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--skipLibCheck",
      "--types",
      "node",
      "--strict",
      "--verbatimModuleSyntax",
      join(REPO_DIR, "src", "agent", "main.ts"),
    ],
    { timeoutMs: 120_000 },
  );
  if (tsc.code !== 0) throw new Error(`tsc failed:\n${tsc.stdout}${tsc.stderr}`);
  return {
    dir,
    run: (env, timeoutMs = 60_000, onStderr) =>
      run("node", [join(dir, "src", "agent", "main.js")], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
        timeoutMs,
        onStderr,
      }),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
