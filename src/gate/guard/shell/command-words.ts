// Which word of a simple command is the command, and which command it is: keywords and prefix
// commands (`sudo`, `env X=1`, `timeout 5`) skipped, an alias or a copied binary resolved to the
// command it stands for, a glob tried against the known commands, a computed directory before a
// literal name (`$(npm bin)/tsc`) read by that name.
import { BIN_DIRS, baseName } from "../command-names.js";
import { KNOWN_COMMANDS } from "../effects/command-table.js";
import type { Env, Expanded } from "./expansion.js";
import { compileGlob } from "./glob.js";
import type { Word } from "./lexer.js";
import { newCommandLog, type CommandLog } from "./records.js";

/** Words that run the next word as a command (options skipped). */
export const PREFIX_COMMANDS = new Set([
  "sudo",
  "doas",
  "pkexec",
  "runuser",
  "setpriv",
  "nice",
  "nohup",
  "time",
  "exec",
  "command",
  "builtin",
  "stdbuf",
  "setsid",
  "chroot",
  "ionice",
  "unbuffer",
  "busybox",
  "env",
  "timeout",
  "watch",
]);
/** Prefix commands that run the next word as another user (root, unless told otherwise): a privilege change (ADR 0078). */
export const RUN_AS: ReadonlySet<string> = new Set(["sudo", "doas", "pkexec", "runuser", "setpriv"]);

/** The prefix among argv's first k words that runs the command as another user, if any (the line's own, `inherited`, first). */
export function runAsPrefix(argv: Expanded[], k: number, inherited?: string): string | undefined {
  if (inherited !== undefined) return inherited;
  for (let i = 0; i < k; i++) {
    const name = baseName(argv[i]?.values[0] ?? "");
    if (RUN_AS.has(name)) return name;
  }
  return undefined;
}

export const KEYWORDS = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "!",
  "{",
  "}",
  "[[",
  "]]",
  "function",
  "case",
  "esac",
  "in",
  "(",
  ")",
]);

/** Replaces a command word that an earlier alias or copy of a binary made stand for another command. */
export function unalias(expanded: { argv: Expanded[]; from: Word[] }, env: Env): void {
  for (let n = 0; n < 4; n++) {
    const { argv, from } = expanded;
    const k = commandStart(argv);
    const word = argv[k]?.values[0];
    const words = word === undefined ? undefined : env.log.aliases.get(baseName(word));
    if (words === undefined || words.length === 0) break;
    expanded.argv = [...argv.slice(0, k), ...words.map((w) => ({ values: [w], unknown: false })), ...argv.slice(k + 1)];
    expanded.from = [...from.slice(0, k), ...words.map(() => from[k] as Word), ...from.slice(k + 1)];
  }
}

const COPIES = new Set(["cp", "ln", "install", "mv", "rsync"]);

/** Notes what `alias x=...` and a copy or link of a known command's binary (`cp /bin/rm /tmp/x`) make a name stand for. */
export function noteAlias(name: string, args: string[], env: Env): void {
  if (name === "alias") {
    for (const a of args) {
      const m = /^([\w.-]+)=(.*)$/s.exec(a);
      if (m !== null)
        env.log.aliases.set(
          m[1] as string,
          (m[2] as string).split(/\s+/).filter((w) => w !== ""),
        );
    }
    return;
  }
  if (!COPIES.has(name)) return;
  const ops = args.filter((a) => !a.startsWith("-"));
  const [src, dest] = [ops[0], ops.at(-1)];
  if (src === undefined || dest === undefined || ops.length !== 2) return;
  const from = baseName(src);
  if (KNOWN.has(from) || PREFIX_COMMANDS.has(from)) env.log.aliases.set(baseName(dest), [from]);
}

const KNOWN = new Set(KNOWN_COMMANDS);

/**
 * The log of a line of plain words (no quoting, expansion, operator, glob or `~`): its one
 * command, without running the reader (most command fields: `npm test`, `git status`).
 */
export function plainCommandLog(line: string, cwd: string): CommandLog {
  const log = newCommandLog();
  const all = line.split(/\s+/).filter((w) => w !== "");
  // `git checkout master   # a note`: a word starting with # begins a comment.
  const hash = all.findIndex((w) => w.startsWith("#"));
  const words = hash < 0 ? all : all.slice(0, hash);
  // `GIT_WORK_TREE=. git reset --hard`: leading assignments are not the command.
  let first = 0;
  while (first < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[first] as string)) first++;
  const argv: Expanded[] = words.slice(first).map((w) => ({ values: [w], unknown: false }));
  const k = commandStart(argv);
  const word = argv[k]?.values[0];
  if (word === undefined) return log;
  const args = argv.slice(k + 1).map((e) => e.values[0] as string);
  const asUser = runAsPrefix(argv, k);
  log.commands.push({
    name: baseName(word),
    word,
    args,
    redirs: [],
    cwd,
    pipe: 0,
    pos: 0,
    hereInput: false,
    depth: 0,
    ...(asUser === undefined ? {} : { asUser }),
  });
  log.pipes = 1;
  return log;
}

/** Index of the command name in argv: keywords and prefix commands (with their options) skipped. */
export function commandStart(argv: Expanded[]): number {
  let k = 0;
  let prefix: number | undefined;
  for (let w = argv[0]?.values[0]; w !== undefined; w = argv[k]?.values[0]) {
    const name = baseName(w);
    // `[[ ... ]]` is a test, as `[ ... ]` is: its words are operands, not a command to find after it.
    if (KEYWORDS.has(w) && w !== "[[") k++;
    else if (PREFIX_COMMANDS.has(name)) {
      prefix = k;
      k = skipPrefixOptions(argv, k + 1, name);
    } else break;
  }
  // A prefix with no command after it runs as itself (`env | nc ...` prints the environment).
  return k >= argv.length && prefix !== undefined ? prefix : k;
}

/** The options of prefix commands that take a value as the next word (`env -u NAME`, `sudo -D DIR`). */
const PREFIX_VALUED: Readonly<Record<string, ReadonlySet<string>>> = {
  env: new Set(["-u", "--unset", "-C", "--chdir"]),
  sudo: new Set([
    "-u",
    "--user",
    "-g",
    "--group",
    "-D",
    "--chdir",
    "-C",
    "--close-from",
    "-p",
    "--prompt",
    "-r",
    "--role",
    "-t",
    "--type",
    "-U",
    "--other-user",
    "-T",
    "--command-timeout",
    "-R",
    "--chroot",
  ]),
  doas: new Set(["-u", "-C"]),
  pkexec: new Set(["--user"]),
  runuser: new Set(["-u", "--user", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"]),
  timeout: new Set(["-s", "--signal", "-k", "--kill-after"]),
  nice: new Set(["-n", "--adjustment"]),
  ionice: new Set(["-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"]),
  watch: new Set(["-n", "--interval"]),
  chroot: new Set(["--userspec", "--groups"]),
  stdbuf: new Set(["-i", "--input", "-o", "--output", "-e", "--error"]),
};

/** Past a prefix command's options: `env`'s NAME=value, `timeout`'s duration, `nice`'s number, an option's value. */
function skipPrefixOptions(argv: Expanded[], from: number, prefix: string): number {
  let k = from;
  const valued = PREFIX_VALUED[prefix];
  for (let o = argv[k]?.values[0]; o !== undefined; o = argv[k]?.values[0]) {
    const isOption =
      o.startsWith("-") ||
      (prefix === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(o)) ||
      (prefix === "timeout" && /^[0-9.]+[smhd]?$/.test(o)) ||
      (prefix === "nice" && /^-?[0-9]+$/.test(o));
    if (!isOption) break;
    k++;
    // `-u NAME`, `--chdir DIR`: the value is the next word (`-uNAME`, `--chdir=DIR` carry their own).
    if (o === "--") break;
    if (valued?.has(o) === true && argv[k] !== undefined) k++;
  }
  return k;
}

/** The literal last path segment of a word whose directory is computed (`$(npm bin)/tsc` → `tsc`), if any. */
export function literalTail(word: Word | undefined): string | undefined {
  const last = word?.parts.at(-1);
  if (word === undefined || word.parts.length < 2 || last?.t !== "lit") return undefined;
  const m = /\/([A-Za-z0-9._+-]+)$/.exec(last.s);
  return m === null || /[*?[]/.test(last.s) ? undefined : m[1];
}

/** The names a command word may be: a glob is read as every dangerous command it could name. */
export function commandNames(cmd: Expanded): string[] {
  if (cmd.glob === undefined) return cmd.values;
  const re = compileGlob(cmd.glob);
  const hits = KNOWN_COMMANDS.flatMap((c) => [c, ...BIN_DIRS.map((d) => d + c)]).filter((c) => re.test(c));
  return hits.length > 0 ? [...new Set(hits.map(baseName))] : cmd.values;
}
