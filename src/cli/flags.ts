// Flag parsing for the commands: node's parseArgs, with its errors as UsageErrors (exit 2,
// printed with the command's usage).
import { parseArgs, type ParseArgsConfig } from "node:util";
import { messageOf } from "../errors.js";
import { UsageError } from "./command.js";

/** parseArgs, throwing a UsageError for an unknown flag or a missing value. */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    throw new UsageError(messageOf(err));
  }
}
