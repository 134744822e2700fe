// How a judge reads its payload, one reader for gavel's judges and the agent runtime's judge
// mode: files in GAVEL_INPUT_DIR (the cluster mounts the payload there, in parts, because one
// ConfigMap holds at most 1 MiB), else stdin (local mode writes it there), else env
// GAVEL_INPUT (small payloads, and by hand). Dependency-free: judge images copy this file alone.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { messageOf } from "../errors.js";

/** The payload could not be read; the judge exits non-zero with this message (a `failed` run). */
export class JudgeInputError extends Error {
  override readonly name = "JudgeInputError";
}

/** A judge's payload: a JSON object. */
export type JudgePayload = Record<string, unknown>;

async function readAll(stream: Readable): Promise<string> {
  let text = "";
  stream.setEncoding("utf8");
  for await (const chunk of stream) text += chunk as string;
  return text;
}

/** The concatenation of the regular files of `dir` in name order (hidden files, e.g. ConfigMap `..data`, skipped). */
async function readParts(dir: string): Promise<string> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true }))
      .filter((d) => !d.name.startsWith(".") && (d.isFile() || d.isSymbolicLink()))
      .map((d) => d.name);
  } catch (err) {
    throw new JudgeInputError(`GAVEL_INPUT_DIR ${dir} cannot be read: ${messageOf(err)}`);
  }
  names.sort();
  const parts = await Promise.all(names.map((n) => readFile(join(dir, n))));
  return Buffer.concat(parts).toString("utf8");
}

/** The raw payload text and where it came from; "" when there is none anywhere. */
export async function readJudgeInputText(
  stdin: Readable & { isTTY?: boolean },
  env: NodeJS.ProcessEnv,
): Promise<{ text: string; source: string }> {
  const dir = env.GAVEL_INPUT_DIR;
  if (dir !== undefined && dir !== "") return { text: await readParts(dir), source: `GAVEL_INPUT_DIR ${dir}` };
  const fromStdin = stdin.isTTY === true ? "" : await readAll(stdin);
  if (fromStdin.trim() !== "") return { text: fromStdin, source: "stdin" };
  return { text: env.GAVEL_INPUT ?? "", source: "env GAVEL_INPUT" };
}

/** Reads and parses the payload, a JSON object; throws JudgeInputError naming the source. */
export async function readJudgeInput(stdin: Readable & { isTTY?: boolean }, env: NodeJS.ProcessEnv): Promise<JudgePayload> {
  const { text, source } = await readJudgeInputText(stdin, env);
  if (text.trim() === "")
    throw new JudgeInputError("no judge input: GAVEL_INPUT_DIR is unset, stdin is empty and env GAVEL_INPUT is unset");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new JudgeInputError(`judge input on ${source} is not JSON: ${messageOf(err)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new JudgeInputError(`judge input on ${source} must be a JSON object`);
  }
  return value as JudgePayload;
}
