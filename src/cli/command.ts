// The shape of a `gavel` subcommand: a name, a one-line summary, and a run function
// that gets its arguments and the process's streams and returns an exit code.
import type { Writable, Readable } from "node:stream";

/** Streams and environment a command may use; injected so commands stay testable. */
export interface CommandIO {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** One `gavel` subcommand. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[], io: CommandIO): Promise<number>;
}

/** Exit codes shared by all commands. */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
} as const;

/** UsageError is a bad flag or argument; the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
