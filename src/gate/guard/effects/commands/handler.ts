// What every entry of the command table is: a function from one command (as the shell reader
// recorded it) to its effects, with the helpers the entries share.
import type { ShellCommand } from "../../shell/records.js";
import type { Effect } from "../effect.js";
import { resolveTarget } from "../targets.js";

/** A command's effects; paths in targets are resolved against the command's directory. */
export type Handler = (c: ShellCommand) => Effect[];

export const set = (...xs: string[]): ReadonlySet<string> => new Set(xs);
/** Operands as paths the command resolves (relative to its directory); `-` and empty ones dropped. */
export const at = (c: ShellCommand, ps: readonly string[]): string[] =>
  ps.filter((p) => p !== "" && p !== "-").map((p) => resolveTarget(p, c.cwd));
export const none: Effect[] = [];
