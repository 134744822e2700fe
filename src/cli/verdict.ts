// `gavel verdict [FILE|-]`: parses a judge's output exactly as gavel's drivers do
// (judgeOutcome), so judge authors can check their judges without running gavel.
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import type { Readable } from "node:stream";
import { parse as parseYaml } from "yaml";
import type { Agent, JudgeValidationSpec } from "../api/types.js";
import { judgeOutcome } from "../engine/gradient.js";
import { ExitCode, UsageError, type Command } from "./command.js";
import { messageOf } from "../errors.js";

async function readStream(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** The judge form of `execution.validation` from a judge's Agent manifest (YAML or JSON). */
export async function judgeValidationFromManifest(path: string): Promise<JudgeValidationSpec | undefined> {
  let doc: unknown;
  try {
    doc = parseYaml(await readFile(path, "utf8"));
  } catch (err) {
    throw new UsageError(`--agent ${path}: ${messageOf(err)}`);
  }
  const agent = doc as Partial<Agent> | null;
  if (agent?.kind !== "Agent") throw new UsageError(`--agent ${path}: not an Agent manifest (kind is ${JSON.stringify(agent?.kind)})`);
  const validation = agent.spec?.execution?.validation;
  // A list is the worker form (validators), not a judge's description of its own verdict.
  return validation === undefined || Array.isArray(validation) ? undefined : validation;
}

export const verdictCommand: Command = {
  name: "verdict",
  summary: "parse a judge's output as gavel does: the GradientResult, or why it is rejected",
  usage: "gavel verdict [FILE|-] [--exit-code N] [--agent JUDGE.yaml] [--output text|json]",
  async run(argv, io) {
    let parsed;
    try {
      parsed = parseArgs({
        args: argv,
        allowPositionals: true,
        options: {
          "exit-code": { type: "string", default: "0" },
          agent: { type: "string" },
          output: { type: "string", short: "o", default: "text" },
        },
      });
    } catch (err) {
      throw new UsageError(messageOf(err));
    }
    const { values, positionals } = parsed;
    if (positionals.length > 1) throw new UsageError("at most one FILE");
    const exitCode = Number(values["exit-code"]);
    if (!Number.isInteger(exitCode)) throw new UsageError(`--exit-code must be an integer, not "${values["exit-code"]}"`);
    if (values.output !== "text" && values.output !== "json") throw new UsageError(`--output must be text or json, not "${values.output}"`);
    const file = positionals[0] ?? "-";
    let stdout: string;
    try {
      stdout = file === "-" ? await readStream(io.stdin) : await readFile(file, "utf8");
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${messageOf(err)}`);
    }
    const validation = values.agent === undefined ? undefined : await judgeValidationFromManifest(values.agent);
    const outcome = judgeOutcome({ exitCode, stdout, ...(validation !== undefined ? { validation } : {}) });
    if (values.output === "json") {
      io.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
    } else if (outcome.ok) {
      io.stdout.write(`${JSON.stringify(outcome.result, null, 2)}\n`);
    } else {
      io.stdout.write(`rejected: ${outcome.rejection}: ${outcome.detail}\n`);
    }
    return outcome.ok ? ExitCode.ok : ExitCode.failed;
  },
};
