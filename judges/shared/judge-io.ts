// The judge side of gavel's judge contract: the payload arrives as JSON files in
// GAVEL_INPUT_DIR, on stdin or in env GAVEL_INPUT (read by src/agent/judge-input.ts, shared
// with the agent runtime's judge mode; judges/README.md); the verdict is a GradientResult
// printed as the last line.
import type { Readable, Writable } from "node:stream";
import { JudgeInputError, readJudgeInput, type JudgePayload } from "../../src/agent/judge-input.js";

export { JudgeInputError, readJudgeInput, type JudgePayload };

/** A GradientResult as judges build it (the engine's parser is the authority on its shape). */
export interface Verdict {
  score: number;
  confidence: number;
  reasoning: string;
  signals?: { category: string; score: number; message: string }[];
  metadata?: Record<string, unknown>;
}

/** Rounds to 4 decimals and clamps to [0, 1], so float noise never breaks the schema. */
export function unit(x: number): number {
  if (!Number.isFinite(x)) return 0;
  return Math.round(Math.min(1, Math.max(0, x)) * 10_000) / 10_000;
}

/** Prints the verdict as one JSON line: the last JSON object of the output wins. */
export function printVerdict(out: Writable, verdict: Verdict): void {
  out.write(`${JSON.stringify(verdict)}\n`);
}

/** A string field of the payload, or undefined. */
export function stringField(payload: JudgePayload, ...names: string[]): string | undefined {
  for (const name of names) {
    const v = payload[name];
    if (typeof v === "string") return v;
  }
  return undefined;
}

/** A string-array field of the payload (non-strings dropped), or []. */
export function stringList(payload: JudgePayload, name: string): string[] {
  const v = payload[name];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

/** Runs a judge's main: exit 0 after a verdict, 2 with a message when the input is bad. */
export async function runJudge(
  main: (payload: JudgePayload) => Promise<Verdict>,
  io: { stdin: Readable; stdout: Writable; stderr: Writable; env: NodeJS.ProcessEnv },
): Promise<number> {
  try {
    const payload = await readJudgeInput(io.stdin, io.env);
    printVerdict(io.stdout, await main(payload));
    return 0;
  } catch (err) {
    io.stderr.write(`${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`);
    return err instanceof JudgeInputError ? 2 : 1;
  }
}
