// Runs a child process to completion and returns its exit code and output; used by the
// harness and the tests to drive kubectl, docker and the harness scripts.
import { spawn } from "node:child_process";

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `file args`, feeding `stdin` when given; never throws for a non-zero exit. */
export function run(
  file: string,
  args: string[],
  opts: { stdin?: string; env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; onStderr?: (chunk: string) => void } = {},
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      timeout: opts.timeoutMs ?? 300_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      opts.onStderr?.(stderr);
    });
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
    // A command that exits without reading its stdin closes the pipe first; the EPIPE that
    // follows is not an error of the run (its exit code says how it went), and unhandled it
    // would fail the whole test process.
    child.stdin.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EPIPE") reject(err);
    });
    if (opts.stdin === undefined) child.stdin.end();
    else child.stdin.end(opts.stdin);
  });
}

/** Runs `file args` and throws with the captured stderr when it exits non-zero. */
export async function runOk(file: string, args: string[], opts: Parameters<typeof run>[2] = {}): Promise<string> {
  const r = await run(file, args, opts);
  if (r.code !== 0) {
    throw new Error(`${file} ${args.join(" ")} exited ${r.code}\n${r.stderr}${r.stdout}`);
  }
  return r.stdout;
}
