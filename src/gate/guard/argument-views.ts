// The texts the guard searches for one call: every string value and key nested anywhere in
// the arguments (views/json-walk.ts), plus decoded (decode.ts), shell-normalised
// (shell-normalise.ts) and path (paths.ts) views of each (views/text-views.ts), and the shell
// reading of its command fields (views/command-fields.ts, shell/); docs/guard.md.
import type { JsonValue } from "../../api/types.js";
import type { CommandLog } from "./shell/records.js";
import { commandDirectory, commandFields, shellLine } from "./views/command-fields.js";
import { walk } from "./views/json-walk.js";
import { Seen, type ViewSet } from "./views/view-set.js";
export { MAX_NESTING, NestingTooDeep } from "./views/json-walk.js";

/** Where `~`, `$HOME` and relative paths point for the worker being guarded. */
export interface ViewOptions {
  /** Expansion of `~`, `$HOME`, `${HOME}`; default "/root" (worker containers run as root). */
  home?: string;
  /** Directory relative paths resolve against; default "/workspace". */
  cwd?: string;
}

/** Every text the guard's patterns are searched in, deduplicated, originals first. */
export function argumentViews(args: JsonValue, options: ViewOptions = {}): string[] {
  return callViews(args, options, false).views;
}

/** A call's argument views, and why its shell command could not be read statically (if so). */
export interface CallViews {
  views: string[];
  /**
   * Set for a shell-capable tool whose command has a part no static reading resolves: a
   * computed command name, `eval`/`sh -c` of a computed string, a shell reading computed input.
   */
  unresolved?: string;
  /** The commands read from each command field (what the effect model reads), with the field's key. */
  commands: { key: string; log: CommandLog }[];
}

const FUNCTION_DEF_RE = /\(\s*\)\s*\{/;

/**
 * The argument views (argumentViews) plus the static shell reading of the command fields;
 * `shellTool` says whether what cannot be resolved counts (the tool runs a shell).
 */
export function callViews(args: JsonValue, options: ViewOptions, shellTool: boolean): CallViews {
  const ctx: ViewSet = { home: options.home ?? "/root", cwd: options.cwd ?? "/workspace", seen: new Seen(), out: [], lineFlags: 0 };
  let unresolved: string | undefined;
  const commands: CallViews["commands"] = [];
  let rest = args;
  if (args !== null && typeof args === "object" && !Array.isArray(args)) {
    const cwd = commandDirectory(args, ctx.cwd);
    const read: string[] = [];
    for (const { key, line } of commandFields(args)) {
      const r = shellLine(line, cwd, ctx, (log) => commands.push({ key, log }));
      if (shellTool) unresolved ??= r.unresolved;
      // A shell tool's command read in full is viewed as the reading renders it: text it only
      // prints (echo's arguments, a here-document fed to cat) is data, not a command line.
      // A function definition is kept as written too: the reading does not render its body as the shell would.
      if (shellTool && r.read && r.unresolved === undefined && !FUNCTION_DEF_RE.test(line)) read.push(key);
    }
    if (read.length > 0) rest = Object.fromEntries(Object.entries(args).filter(([k]) => !read.includes(k)));
  }
  walk(rest, ctx, 0);
  return unresolved === undefined ? { views: ctx.out, commands } : { views: ctx.out, unresolved, commands };
}
