// The `gavel` command: dispatches to a subcommand and maps errors to
// exit codes (2 for usage errors, 1 for everything else).
import { commands } from "./commands.js";
import { ExitCode, UsageError, type CommandIO } from "./command.js";
import { messageOf } from "../errors.js";

/** Runs the CLI with the given arguments and returns the exit code. */
export async function main(argv: string[], io: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    io.stdout.write(helpText());
    return name === undefined ? ExitCode.usage : ExitCode.ok;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    io.stderr.write(`gavel: unknown command "${name}"\n\n${helpText()}`);
    return ExitCode.usage;
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

function helpText(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `gavel — judged LLM agents on Kubernetes\n\nusage: gavel <command> [flags]\n\ncommands:\n${lines.join("\n")}\n`;
}
