// The `gavel` command: dispatches to a subcommand (imported only then, see commands.ts) and
// maps errors to exit codes (2 for usage errors, 1 for everything else). Keep this file's
// imports light: every invocation, `gavel --help` included, pays for them.
import { commands, type CommandEntry } from "./commands.js";
import { ExitCode, UsageError, type CommandIO } from "./command.js";
import { messageOf } from "../errors.js";

/** Runs the CLI with the given arguments and returns the exit code. */
export async function main(argv: string[], io: CommandIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h") {
    io.stdout.write(helpText());
    return first === undefined ? ExitCode.usage : ExitCode.ok;
  }
  if (first === "help" && rest[0] !== undefined) return main([rest[0], "--help"], io);
  if (first === "help") return main(["--help"], io);
  const name = first === "--version" ? "version" : first;
  const entry = entryOf(argv);
  if (entry === undefined) {
    io.stderr.write(`gavel: unknown command "${name}"\n\n${helpText()}`);
    return ExitCode.usage;
  }
  const command = await entry.load();
  // --help anywhere before a `--` (`gavel guard check --help`, `gavel nats bootstrap -h`) shows the usage instead of running.
  const end = rest.indexOf("--");
  const flags = end < 0 ? rest : rest.slice(0, end);
  if (flags.includes("--help") || flags.includes("-h")) {
    io.stdout.write(`${entry.summary}\n\nusage: ${command.usage}\n`);
    return ExitCode.ok;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`gavel ${command.name}: ${err.message}\nusage: ${command.usage}\n`);
      return ExitCode.usage;
    }
    io.stderr.write(`gavel ${command.name}: ${messageOf(err)}\n`);
    return ExitCode.failed;
  }
}

/**
 * Runs gavel as this process: its arguments and streams in, its exit code out. Called by each
 * entry bin/gavel runs (main.ts, and the CommonJS bundle of `gavel guard`: src/cli/bundle.mjs).
 */
export async function runProcess(): Promise<void> {
  const argv = process.argv.slice(2);
  // bin/gavel asks for stack traces through the source maps (the TypeScript lines) with
  // GAVEL_SOURCE_MAPS=1 (the controller image runs main.ts without them, as before); a quick
  // command (commands.ts) goes without: Node reads the map of every module loaded after this,
  // which costs a short command like `gavel guard check` about a tenth of its start
  // (bench/cli-start.ts, ADR 0043).
  if (process.env.GAVEL_SOURCE_MAPS === "1" && entryOf(argv)?.quick !== true) process.setSourceMapsEnabled(true);
  // stderr and stdin are Node's streams made at first read of process.stderr / process.stdin (a
  // pipe or a terminal loads node:net, a file fs's streams): a command that never writes an
  // error or reads its input (`gavel guard check`) does not make them.
  process.exitCode = await main(argv, {
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
}

/** The command `argv` runs (undefined for the help and for an unknown command). */
export function entryOf(argv: string[]): CommandEntry | undefined {
  const [first, second] = argv;
  const name = first === "--version" ? "version" : first === "help" ? second : first;
  return commands.find((c) => c.name === name);
}

function helpText(): string {
  const listed = commands.filter((c) => c.hidden !== true);
  const width = Math.max(...listed.map((c) => c.name.length));
  const lines = listed.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `gavel — judged LLM agents on Kubernetes\n\nusage: gavel <command> [flags]\n       kubectl gavel <command> [flags]   (as a kubectl plugin)\n\ncommands:\n${lines.join("\n")}\n\n"gavel <command> --help" shows a command's flags.\n`;
}
