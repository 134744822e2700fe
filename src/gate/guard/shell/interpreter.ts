// The shell reader: reads a command line as sh would split and expand it (lexer.ts,
// expansion.ts), command by command, without running anything: finds the command word
// (command-words.ts), records every expanded line and command (records.ts, for the effect
// model), follows what runs other text (commands.ts), computes static output (static-output.ts), and
// says what it could not resolve where a command name belongs.
import { posix } from "node:path";
import { baseName } from "../command-names.js";
import { COMMAND_HANDLERS } from "./commands.js";
import { commandNames, commandStart, KEYWORDS, literalTail, noteAlias, runAsPrefix, unalias } from "./command-words.js";
import { expandWord, MAX_ALTERNATIVES, MAX_SOURCE, type Env, type Expanded, type ShellOptions } from "./expansion.js";
import { callFunction, functionDefinition, readsAsFunction } from "./functions.js";
import { globTargets } from "./glob.js";
import { tokenize, type Token, type Word } from "./lexer.js";
import { newCommandLog, type CommandLog, type Redirection, type ShellCommand } from "./records.js";
import { staticOutput } from "./static-output.js";

export type { ShellOptions } from "./expansion.js";

/** The command lines a text expands to, and what stayed unknown where a command name belongs. */
export interface ShellAnalysis {
  /** Expanded lines (words joined by spaces, operators kept), then the lines nested in them. */
  texts: string[];
  /**
   * Why a command could not be known statically (a computed command name, `eval` or `sh -c`
   * of a computed string, a shell reading computed input), or undefined. Never an argument value.
   */
  unresolved?: string;
  /** Every simple command read, for the effect model. */
  log: CommandLog;
}

/** Operators and redirections beyond this many in one line are not read: the call is unresolved. */
const MAX_COMMANDS = 256;
const DECLARATIONS = new Set(["export", "local", "declare", "readonly", "typeset"]);
const ASSIGNMENT_RE = /^([A-Za-z_][A-Za-z0-9_]*)\+?=/;

/** Reads a command line statically (see the file's header). */
export function analyseShell(src: string, opts: ShellOptions): ShellAnalysis {
  const env: Env = { vars: new Map(), opts, depth: 0, texts: [], cwd: opts.cwd, run: runLine, log: newCommandLog() };
  if (src.length > MAX_SOURCE) return { texts: [], log: env.log };
  runLine(tokenize(src), env);
  const texts = [...new Set(env.texts)].filter((t) => t !== "");
  return env.unresolved === undefined ? { texts, log: env.log } : { texts, unresolved: env.unresolved, log: env.log };
}

/** One simple command: its words, the here-string it reads, and its redirections. */
interface Simple {
  words: Word[];
  hereString?: Word;
  /** Its redirections as text (`> /dev/sda`), rendered after its words. */
  redirs: string[];
  /** The same, as operator and target. */
  redirTargets: Redirection[];
  /** Its stdin is a here-document or here-string. */
  hereInput?: boolean;
}

const newSimple = (): Simple => ({ words: [], redirs: [], redirTargets: [] });

/**
 * Reads one line: records expanded texts and unresolved command positions in env; returns the
 * line's output when every command in its last pipeline is a static text command (for `$(...)`).
 */
function runLine(tokens: Token[], env: Env): string | undefined {
  const rendered: string[][] = [];
  let pipeline: Simple[] = [];
  let cur = newSimple();
  let output: string | undefined;
  const finishPipeline = (): void => {
    if (cur.words.length > 0 || cur.redirs.length > 0) pipeline.push(cur);
    cur = newSimple();
    if (pipeline.length === 0) return;
    output = runPipeline(pipeline, env, rendered);
    pipeline = [];
  };
  let commands = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.k === "word") {
      // `name() { ...; }`: the body is kept for each call (functions.ts) and read here too, as it stands.
      const def = cur.words.length === 0 ? functionDefinition(tokens, i) : undefined;
      if (def !== undefined) {
        env.log.functions.set(def.name, tokens.slice(def.open + 1, def.close));
        i = def.open - 1;
        continue;
      }
      cur.words.push(t);
      continue;
    }
    if (++commands > MAX_COMMANDS) {
      // Reading more would cost the gate more than the call is worth: not read, not guessed.
      env.unresolved ??= "too many commands to read";
      break;
    }
    if (t.op === "|" || t.op === "|&") {
      pipeline.push(cur);
      cur = newSimple();
    } else if (REDIRECTIONS.has(t.op)) {
      const next = tokens[i + 1];
      if (next?.k === "word") {
        i++;
        if (t.op === "<<<") cur.hereString = next;
        const target = expandWord(next.parts, env).values[0] ?? "";
        // A here-document or here-string is its command's input: rendered as data (a shell reads it as commands of its own).
        cur.redirs.push(t.op === "<<<" ? "<<< (input)" : `${t.op} ${target}`);
        if (t.op === "<<<" || t.op === "<<") cur.hereInput = true;
        else cur.redirTargets.push({ op: t.op, target });
      }
    } else {
      finishPipeline();
      rendered.push([t.op === "\n" ? ";" : t.op]);
    }
  }
  finishPipeline();
  // The line as text, once per variant (a command with alternatives, e.g. a for-loop's words).
  const variants = Math.min(MAX_ALTERNATIVES, Math.max(1, ...rendered.map((r) => r.length)));
  for (let v = 0; v < variants; v++) {
    env.texts.push(
      rendered
        .map((r) => (r.length === 0 ? "" : (r[v % r.length] as string)))
        .filter((w) => w !== "")
        .join(" "),
    );
  }
  return output;
}

/** Commands whose arguments are only printed. */
export const PRINTERS: ReadonlySet<string> = new Set(["echo", "printf"]);
/** A plain unquoted keyword word (`do`, `then`, `{`). */
const isKeyword = (w: Word): boolean =>
  w.parts.length === 1 && w.parts[0]?.t === "lit" && w.parts[0].quoted !== true && KEYWORDS.has(w.parts[0].s);
const REDIRECTIONS = new Set(["<<<", "<", ">", ">>", "&>", ">&", "<<"]);

/** Runs one pipeline: each command's words expanded, its command position checked, its output computed if static. */
function runPipeline(pipeline: Simple[], env: Env, rendered: string[][]): string | undefined {
  let stdin: string | undefined;
  let piped = false;
  const pipe = env.log.pipes++;
  for (const [pos, simple] of pipeline.entries()) {
    if (piped) rendered.push(["|"]);
    const here = simple.hereString === undefined ? undefined : (expandWord(simple.hereString.parts, env).values[0] ?? "") + "\n";
    const input = here ?? (piped ? stdin : undefined);
    const computedInput = here === undefined && piped;
    const last = pos === pipeline.length - 1;
    stdin = runSimple(simple, env, rendered, { input, unknownInput: computedInput && stdin === undefined, pipe, pos, last });
    piped = true;
  }
  return stdin;
}

/** Splits leading NAME=value words off a command; records them as variables. */
function assignments(words: Word[], env: Env): Word[] {
  let k = 0;
  for (; k < words.length; k++) {
    const w = words[k] as Word;
    const first = w.parts[0];
    if (first?.t !== "lit" || first.quoted) break;
    const m = ASSIGNMENT_RE.exec(first.s);
    if (m === null) break;
    const e = expandWord([{ ...first, s: first.s.slice(m[0].length) }, ...w.parts.slice(1)], env);
    env.vars.set(m[1] as string, e.unknown ? undefined : e.values);
  }
  return words.slice(k);
}

/** `do x=$(...)`, `then X=1 cmd`: assignments after leading keywords are assignments too. */
function keywordsThenAssignments(words: Word[], env: Env): Word[] {
  let lead = 0;
  while (lead < words.length && isKeyword(words[lead] as Word)) lead++;
  return lead === 0 ? assignments(words, env) : [...words.slice(0, lead), ...assignments(words.slice(lead), env)];
}

/** `export X=1`, `local X=1`, `declare X=1`: assignments too (their options skipped). */
function declarations(words: Word[], env: Env): void {
  const head = words[0]?.parts;
  if (head?.length !== 1 || head[0]?.t !== "lit" || !DECLARATIONS.has(head[0].s)) return;
  assignments(
    words.slice(1).filter((w) => !(w.parts[0]?.t === "lit" && w.parts[0].s.startsWith("-"))),
    env,
  );
}

/** The words as the command sees them (unquoted empty expansions vanish), with the word each came from. */
function expandArguments(words: Word[], env: Env): { argv: Expanded[]; from: Word[] } {
  const argv: Expanded[] = [];
  const from: Word[] = [];
  for (const w of words) {
    const e = expandWord(w.parts, env);
    if (e.values.every((v) => v === "") && !w.parts.every((p) => p.quoted)) {
      // A computed command name that may be empty still hides the command.
      if (e.unknown && argv.length === 0) env.unresolved ??= "computed command name";
      continue;
    }
    // `C='curl -Ns host'; $C ...`: an unquoted variable's value splits into words (IFS), the first of them the command.
    const only = w.parts.length === 1 ? w.parts[0] : undefined;
    const fields =
      only?.t === "var" && !only.quoted && !e.unknown && e.values.length === 1 ? (e.values[0] as string).split(/[ \t\n]+/) : [];
    if (fields.length > 1) {
      for (const f of fields.filter((x) => x !== "")) {
        argv.push({ values: [f], unknown: false });
        from.push(w);
      }
      continue;
    }
    argv.push(e);
    from.push(w);
  }
  return { argv, from };
}

/** `for NAME in a b c`: the loop variable takes each word. True when argv is a for-loop head. */
function forLoop(argv: Expanded[], env: Env, rendered: string[][]): boolean {
  if (argv[0]?.values[0] !== "for" || argv[2]?.values[0] !== "in") return false;
  const name = argv[1]?.values[0] ?? "";
  const items = argv.slice(3);
  const vals = items.flatMap((e) => e.values);
  env.vars.set(name, items.some((e) => e.unknown) || vals.length === 0 ? undefined : vals.slice(0, MAX_ALTERNATIVES));
  rendered.push([argv.map((e) => e.values[0] ?? "").join(" ")]);
  return true;
}

/** The command as text: one variant per alternative of its most varied word. */
function render(names: string[], argv: Expanded[], redirs: string[], last: boolean): string[] {
  const nVariants = Math.min(MAX_ALTERNATIVES, Math.max(names.length, ...argv.map((e) => e.values.length)));
  const lines: string[] = [];
  for (let v = 0; v < nVariants; v++) {
    const name = names[v % names.length] ?? "";
    // What echo and printf only print is data, not a command line: it is not viewed (`echo 'x; chmod
    // 777 /etc/passwd'` runs nothing). Printed into a file or another program (`>> /mnt/etc/passwd`,
    // `| ed`), it is kept: the words are what that file or program gets.
    const printed = last && redirs.length === 0 && PRINTERS.has(baseName(name));
    const words = printed ? [] : argv.slice(1).map((e) => e.values[v % e.values.length] ?? "");
    lines.push([name, ...words, ...redirs].join(" "));
  }
  return lines;
}

/** Where a simple command sits: its static stdin, whether it reads a pipe the guard could not compute, its pipeline and position. */
interface Placement {
  input: string | undefined;
  unknownInput: boolean;
  pipe: number;
  pos: number;
  /** It ends its pipeline: its output goes to the line's stdout, not into another command. */
  last: boolean;
}

/** Records one command (each variant of its words) for the effect model; the commands of its `$(...)` (logged since `from`) get it as parent. Returns the index of its first record. */
function logCommand(env: Env, simple: Simple, names: string[], argv: Expanded[], at: Placement, from: number, asUser?: string): number {
  const log = env.log.commands;
  const index = log.length;
  for (let i = from; i < index; i++) (log[i] as ShellCommand).parent ??= index;
  const variants = Math.min(MAX_ALTERNATIVES, Math.max(names.length, ...argv.map((e) => e.values.length)));
  for (let v = 0; v < variants; v++) {
    const word = names[v % names.length] ?? "";
    const rec: ShellCommand = {
      name: baseName(word),
      word,
      args: argv.slice(1).map((e) => e.values[v % e.values.length] ?? ""),
      redirs: simple.redirTargets,
      cwd: env.cwd,
      pipe: at.pipe,
      pos: at.pos,
      hereInput: simple.hereInput === true,
      depth: env.depth,
    };
    if (at.input !== undefined) rec.input = at.input;
    if (asUser !== undefined) rec.asUser = asUser;
    log.push(rec);
  }
  return index;
}

/** One simple command (see Placement). Returns its output when static. */
function runSimple(simple: Simple, env: Env, rendered: string[][], at: Placement): string | undefined {
  const { input, unknownInput } = at;
  const from = env.log.commands.length;
  const words = keywordsThenAssignments(simple.words, env);
  declarations(words, env);
  const expanded = expandArguments(words, env);
  if (forLoop(expanded.argv, env, rendered)) return undefined;
  if (env.log.aliases.size > 0) unalias(expanded, env);
  const k = commandStart(expanded.argv);
  const argv = expanded.argv.slice(k);
  // `sudo X`: X, and whatever X runs (`sudo find . -exec sh \;`), runs as another user.
  const asUser = runAsPrefix(expanded.argv, k, env.asUser);
  const cmd = argv[0];
  if (cmd === undefined) {
    rendered.push(simple.redirs.length > 0 ? [simple.redirs.join(" ")] : []);
    // `> /var/log/syslog` alone truncates its target: a command with no name.
    if (simple.redirTargets.length > 0) logCommand(env, simple, [""], [{ values: [""], unknown: false }], at, from);
    return undefined;
  }
  const tail = cmd.unknown ? literalTail(expanded.from[k]) : undefined;
  const names = tail === undefined ? commandNames(cmd) : [tail];
  // `$(npm bin)/tsc`: only the directory is computed; the command is read by its name, as `/bin/rm` is.
  if (cmd.unknown && tail === undefined) env.unresolved ??= "computed command name";
  rendered.push(render(names, argv, simple.redirs, at.last));
  // A call of a function this line defined runs its body: read it with the call's arguments.
  const called = names[0] ?? "";
  const body = cmd.unknown ? undefined : readsAsFunction(called, env);
  if (body !== undefined) return callFunction(called, body, argv.slice(1), env);
  const first = logCommand(env, simple, names, argv, at, from, asUser);
  const end = env.log.commands.length;
  const args = argv.slice(1);
  // Globbed arguments: each also read as the forbidden-looking paths it could name.
  for (const e of args) if (e.glob !== undefined) env.texts.push(...globTargets(e.glob, { home: env.opts.home, cwd: env.cwd }));
  const name = baseName(names[0] ?? "");
  const argValues = args.map((e) => e.values[0] ?? "");
  noteAlias(name, argValues, env);
  // After a `cd`, relative words are files in that directory (`cd /etc && cat shadow`).
  if (env.cwd !== env.opts.cwd) {
    for (const a of argValues) if (a !== "" && !a.startsWith("-") && !a.startsWith("/")) env.texts.push(posix.resolve(env.cwd, a));
  }
  const handler = COMMAND_HANDLERS.get(name);
  if (handler !== undefined) {
    const argWords = expanded.from.slice(k + 1);
    asUserWhile(env, asUser, () =>
      handler({ env, name, args, argValues, argWords, input, unknownInput, droppedArg: words.length > argv.length + k }),
    );
    return undefined;
  }
  if (cmd.unknown || args.some((e) => e.unknown)) return undefined;
  return recordOutput(env, first, end, staticOutput([name, ...argValues], input));
}

/** Runs read with the line's commands marked as run by asUser (`sudo find . -exec sh \;`), if set. */
function asUserWhile(env: Env, asUser: string | undefined, read: () => void): void {
  const saved = env.asUser;
  if (asUser !== undefined) env.asUser = asUser;
  try {
    read();
  } finally {
    if (saved === undefined) delete env.asUser;
    else env.asUser = saved;
  }
}

/** What a redirection of a command writes (a script, a cron line), on its records for the effect model. */
function recordOutput(env: Env, first: number, end: number, output: string | undefined): string | undefined {
  if (output !== undefined) for (let i = first; i < end; i++) (env.log.commands[i] as ShellCommand).output = output;
  return output;
}
