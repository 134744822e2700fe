// Shell commands nested in another program's arguments or input: a database shell's shell
// escape (`mysql -e '\! sh'`, `sqlite3 db '.shell cmd'`), an editor's `:!cmd`, `su -c`,
// `script -c`, tar's checkpoint action, ssh's ProxyCommand (issue 27). Each is read like a line
// of its own, as the command `ssh host CMD` runs is.
import type { ShellCommand } from "../shell/records.js";

const DB_SHELLS = new Set(["mysql", "mariadb", "psql", "sqlite3", "sqlite", "duckdb", "mysqlsh", "clickhouse-client"]);
const EDITORS = new Set(["vim", "vi", "nvim", "ex", "view", "rvim", "gvim"]);
const RUNS_C = new Set(["su", "runuser", "script", "flock", "sg", "newgrp", "tmux", "screen"]);

/**
 * A database shell's escapes in a statement text: `\! cmd`, `system cmd`, `.shell cmd`, `.system
 * cmd`, at a line's or a statement's start. The command runs to the end of its line, `;` and all
 * (`.shell rm /tmp/f;mkfifo /tmp/f;...`): the database shell hands the whole rest to sh.
 */
function dbEscapes(text: string): string[] {
  return [...text.matchAll(/(?:^|[\n;])\s*(?:\\!|\bsystem\s|\.shell\s|\.system\s)\s*([^\n]+)/gi)].map((m) => m[1] as string);
}

type Extract = (c: ShellCommand) => string[];

/** The value of the first of `names` options (`-c CMD`). */
const optionValue = (c: ShellCommand, ...names: string[]): string[] => {
  const i = c.args.findIndex((a) => names.includes(a));
  return i >= 0 && c.args[i + 1] !== undefined ? [c.args[i + 1] as string] : [];
};
/** Every `prefix(value)` match of re over c's arguments. */
const matching = (c: ShellCommand, re: RegExp): string[] =>
  c.args.flatMap((a) => {
    const m = re.exec(a);
    return m === null ? [] : [m[1] as string];
  });

const dbShell: Extract = (c) => [
  ...c.args.filter((a) => /\\!|\bsystem\s|\.shell\s|\.system\s/i.test(a)).flatMap(dbEscapes),
  ...(c.input === undefined ? [] : dbEscapes(c.input)),
];
const editor: Extract = (c) =>
  c.args.flatMap((a) => [
    ...(a.startsWith("-") ? [] : matching({ ...c, args: [a] }, /^[+:]*!(.+)$/)),
    ...[...a.matchAll(/\bsystem\s*\(\s*["']([^"']+)["']/g)].map((m) => m[1] as string),
  ]);
const runsC: Extract = (c) => optionValue(c, "-c", "--command", "-C");
const multiplexer: Extract = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  return c.name === "screen"
    ? ops.filter((a) => a.includes(" "))
    : ops[0] === "new-session" || ops[0] === "new"
      ? ops.slice(1).filter((a) => a.includes(" "))
      : [];
};

/** Per program, how the command lines nested in it are found. */
const EXTRACTORS: ReadonlyMap<string, Extract> = new Map<string, Extract>([
  ...[...DB_SHELLS].map((n): [string, Extract] => [n, dbShell]),
  ...[...EDITORS].map((n): [string, Extract] => [n, editor]),
  ...[...RUNS_C].map((n): [string, Extract] => [n, (c) => [...runsC(c), ...(n === "tmux" || n === "screen" ? multiplexer(c) : [])]]),
  ["tar", (c) => matching(c, /^--(?:checkpoint-action=exec|to-command|use-compress-program)=(.+)$/)],
  ...["ssh", "scp", "sftp"].map((n): [string, Extract] => [n, (c) => matching(c, /^(?:-o)?(?:ProxyCommand|LocalCommand)=(.+)$/i)]),
  ["gdb", (c) => matching(c, /^(?:!|shell\s+)(.+)$/)],
  ["zip", (c) => optionValue(c, "-TT", "--unzip-command")],
]);

/** The command lines nested in c's arguments or static input; undefined for the commands that nest none (most). */
export function embeddedCommands(c: ShellCommand): string[] | undefined {
  const extract = EXTRACTORS.get(c.name);
  return extract === undefined ? undefined : extract(c);
}
