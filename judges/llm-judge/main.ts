// Entry point of the llm-judge image: payload in (stdin / GAVEL_INPUT), GradientResult out;
// after two malformed replies it prints a rejected block; API errors exit 1.
import { readJudgeInput, printVerdict, JudgeInputError } from "../shared/judge-io.js";
import { configFromEnv, llmJudge, malformedOutput } from "./llm-judge.js";

async function main(): Promise<number> {
  try {
    const payload = await readJudgeInput(process.stdin, process.env);
    const outcome = await llmJudge(payload, configFromEnv(process.env));
    if (outcome.ok) {
      printVerdict(process.stdout, outcome.verdict);
      return 0;
    }
    process.stderr.write(
      `llm-judge: malformed reply after ${outcome.attempts} attempts: ${outcome.problem}\nlast reply: ${outcome.lastReply.slice(0, 2000)}\n`,
    );
    process.stdout.write(malformedOutput(outcome.problem));
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`);
    return err instanceof JudgeInputError ? 2 : 1;
  }
}

process.exitCode = await main();
