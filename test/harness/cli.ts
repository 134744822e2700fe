// Running `gavel` in-process in tests, in one place: its stdout and stderr as text.
import { PassThrough, Readable } from "node:stream";
import { main } from "../../src/cli/app.js";

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

export interface CliOptions {
  /** The working directory the command resolves files against (default: this process's). */
  cwd?: string;
  /** The environment the command sees (default: empty). */
  env?: NodeJS.ProcessEnv;
  /** What the command reads on stdin (default: nothing). */
  stdin?: string;
}

/** Runs `gavel ARGV` through the CLI's `main`, as the binary would, and collects its output. */
export async function gavel(argv: string[], o: CliOptions = {}): Promise<CliResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d: Buffer) => (out += d.toString()));
  stderr.on("data", (d: Buffer) => (err += d.toString()));
  const stdin = Readable.from(o.stdin === undefined ? [] : [o.stdin]);
  const code = await main(argv, { stdout, stderr, stdin, env: o.env ?? {}, cwd: o.cwd ?? process.cwd() });
  return { code, out, err };
}
