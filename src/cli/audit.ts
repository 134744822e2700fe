// `gavel audit export EXECUTION`: a run's recorded tool calls, as the stream of recorded calls
// holds them (proposals with their argument values, decisions), written as a recorded-run file
// (src/gate/recorded-run.ts) for `gavel replay --from` to read where NATS cannot be reached.
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { recordedRunText } from "../gate/recorded-run.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { parseFlags } from "./flags.js";
import { loadRun, RUN_SOURCE_FLAGS } from "./recorded-runs.js";

const USAGE = "gavel audit export EXECUTION [-n NS] --nats URL [--nats-creds FILE] [--run UID] [--output-file FILE]";

async function exportRun(argv: string[], io: CommandIO): Promise<number> {
  const { from: _, ...sourceFlags } = RUN_SOURCE_FLAGS;
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: { ...sourceFlags, "output-file": { type: "string" } },
  });
  if (positionals.length !== 1) throw new UsageError("name one Execution whose recorded calls to export");
  const loaded = await loadRun(values, positionals[0], io);
  const text = recordedRunText(loaded.header, loaded.calls);
  const file = values["output-file"];
  if (file === undefined) io.stdout.write(text);
  else {
    // Argument values are in it: readable by its owner only.
    await writeFile(resolve(io.cwd, file), text, { mode: 0o600 });
    io.stderr.write(
      `gavel audit export: ${loaded.calls.length} call(s) of ${loaded.header.namespace}/${loaded.header.execution} written to ${file}\n`,
    );
  }
  return ExitCode.ok;
}

export const auditCommand: Command = {
  name: "audit",
  summary: "export a run's recorded tool calls (proposals and decisions) from the tool-call store as JSON lines (audit export)",
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub !== "export")
      throw new UsageError(sub === undefined ? "missing subcommand: export" : `unknown subcommand "${sub}" (known: export)`);
    return exportRun(rest, io);
  },
};
