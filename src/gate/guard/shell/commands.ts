// The commands the shell reader treats specially, one handler each: those that change where
// later words point (`cd`), and those that run other text as commands (`eval`, `sh -c`, a shell
// reading stdin or `<(...)`, `source`, `xargs` and `parallel` (fan-out.ts), `find -exec`).
import { posix } from "node:path";
import { MAX_DEPTH, MAX_SOURCE, substitute, type Env, type Expanded } from "./expansion.js";
import { tokenize, type Word } from "./lexer.js";
import { fanOutHandlers } from "./fan-out.js";
import { shellQuote } from "./quoting.js";
import { SHELLS } from "../command-names.js";

/** One simple command as a handler sees it, after expansion. */
export interface CommandCall {
  env: Env;
  /** The command's bare name (`rm`, not `/bin/rm`). */
  name: string;
  /** Its arguments, expanded, and the first value of each. */
  args: Expanded[];
  argValues: string[];
  /** The word each argument came from (a process substitution operand is read from it). */
  argWords: Word[];
  /** Its static stdin (a here-string or a computed pipe), if any. */
  input: string | undefined;
  /** It reads a pipe whose content could not be computed. */
  unknownInput: boolean;
  /** An argument expanded to nothing (`cd $(mktemp -d)`). */
  droppedArg: boolean;
}

/** A special command: reads what it runs into env (texts, unresolved). */
export type CommandHandler = (c: CommandCall) => void;

/** Reads `text` as a nested line in env; `what` is recorded when it cannot be known or is too deep. */
export function readNested(env: Env, text: string | undefined, what: string): void {
  if (text === undefined || env.depth >= MAX_DEPTH || text.length > MAX_SOURCE) {
    env.unresolved ??= what;
    return;
  }
  const inner: Env = { vars: env.vars, opts: env.opts, depth: env.depth + 1, texts: env.texts, cwd: env.cwd, run: env.run, log: env.log };
  if (env.asUser !== undefined) inner.asUser = env.asUser;
  env.run(tokenize(text), inner);
  if (inner.unresolved !== undefined) env.unresolved ??= inner.unresolved;
}

/** `cd DIR`: later relative words are files in DIR; `cd` alone goes home. */
const cd: CommandHandler = ({ env, args, droppedArg }) => {
  const dir = args.find((e) => !(e.values[0] ?? "").startsWith("-"));
  // `cd $(mktemp -d)`: an argument that expanded to nothing is unknown, not absent.
  if (dir === undefined && droppedArg) return;
  if (dir === undefined) env.cwd = env.opts.home;
  else if (!dir.unknown) env.cwd = posix.resolve(env.cwd, dir.values[0] ?? "");
};

const evalCommand: CommandHandler = ({ env, args, argValues }) => {
  readNested(env, args.some((e) => e.unknown) ? undefined : argValues.join(" "), "eval of a computed string");
};

/** A shell: `-c SCRIPT`, a script operand (`<(...)` is read), or stdin (a here-string or static pipe). */
const shell: CommandHandler = ({ env, name, args, argWords, input, unknownInput }) => {
  const c = args.findIndex((e) => /^-[a-z]*c[a-z]*$/.test(e.values[0] ?? ""));
  if (c >= 0 && SHELLS.has(name)) {
    const script = args[c + 1];
    readNested(env, script === undefined || script.unknown ? undefined : script.values[0], "shell -c of a computed string");
    return;
  }
  const operand = args.find((e) => !(e.values[0] ?? "").startsWith("-") || e.values[0] === "-");
  const op = operand?.values[0];
  const readsStdin = operand === undefined || op === "-" || op === "/dev/stdin" || op === "/proc/self/fd/0";
  if (operand !== undefined && !readsStdin) {
    // `bash <(curl ...)`, `source <(...)`: the script is the substitution's output.
    const part = argWords[args.indexOf(operand)]?.parts[0];
    if (part?.t === "sub" && part.proc === true)
      readNested(env, substitute(part.src, { ...env, texts: [] }), "shell reading computed input");
    return;
  }
  if (input !== undefined) readNested(env, input, "shell reading computed input");
  else if (unknownInput) env.unresolved ??= "shell reading computed input";
};

/** find's -exec/-execdir/-ok run the words up to `;` or `+` as a command. */
const find: CommandHandler = ({ env, argValues }) => {
  const at = argValues.findIndex((a) => a === "-exec" || a === "-execdir" || a === "-ok" || a === "-okdir");
  if (at < 0) return;
  const body: string[] = [];
  for (let j = at + 1; j < argValues.length && argValues[j] !== ";" && argValues[j] !== "+"; j++) body.push(argValues[j] as string);
  if (body.length > 0) readNested(env, body.map(shellQuote).join(" "), "find -exec of a computed command");
};

const fanOut = fanOutHandlers(readNested);

/** The special commands by bare name; every other command is expanded and its output computed if static. */
export const COMMAND_HANDLERS: ReadonlyMap<string, CommandHandler> = new Map<string, CommandHandler>([
  ["cd", cd],
  ["pushd", cd],
  ["eval", evalCommand],
  ...[...SHELLS].map((s): [string, CommandHandler] => [s, shell]),
  ["source", shell],
  [".", shell],
  ["xargs", fanOut.xargs],
  ["parallel", fanOut.parallel],
  ["find", find],
]);
