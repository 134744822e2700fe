// Shell commands nested in another program's arguments or input: a database shell's shell
// escape (`mysql -e '\! sh'`, `sqlite3 db '.shell cmd'`), an editor's `:!cmd`, `su -c`,
// `script -c`, tar's checkpoint action, ssh's ProxyCommand (issue 27); a command run in a
// container (`kubectl exec POD -- CMD`, `docker exec CTR CMD`) or by systemd (`systemd-run ...
// CMD`). Each is read like a line of its own, as the command `ssh host CMD` runs is.
import { shellQuote } from "../shell/quoting.js";
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
  ["kubectl", (c) => containerCommand(c, KUBECTL_VALUED)],
  ...["docker", "podman", "nerdctl"].map((n): [string, Extract] => [n, (c) => containerCommand(c, DOCKER_EXEC_VALUED)]),
  ["systemd-run", (c) => commandAfterOptions(c.args, SYSTEMD_RUN_VALUED)],
]);

/** kubectl's options (global and exec's) that take the next word as their value. */
const KUBECTL_VALUED = new Set([
  "-c",
  "--container",
  "-n",
  "--namespace",
  "--context",
  "--kubeconfig",
  "--cluster",
  "--user",
  "-f",
  "--filename",
]);
/** docker exec's (and podman's, nerdctl's) options that take the next word as their value. */
const DOCKER_EXEC_VALUED = new Set([
  "-e",
  "--env",
  "-u",
  "--user",
  "-w",
  "--workdir",
  "--env-file",
  "--detach-keys",
  "-H",
  "--host",
  "--context",
]);
/** systemd-run's options that take the next word as their value (`--on-calendar '*:0/1'`, `-p K=V`). */
const SYSTEMD_RUN_VALUED = new Set([
  "-u",
  "--unit",
  "-p",
  "--property",
  "--description",
  "--slice",
  "-E",
  "--setenv",
  "--uid",
  "--gid",
  "--working-directory",
  "-M",
  "--machine",
  "-H",
  "--host",
  "--on-active",
  "--on-boot",
  "--on-startup",
  "--on-unit-active",
  "--on-unit-inactive",
  "--on-calendar",
  "--timer-property",
  "--path-property",
  "--socket-property",
  "--nice",
  "--service-type",
]);

/** Index of the first operand of args: options skipped (each of `valued` with the next word, unless written `--opt=value`), and a `--`. */
function operandIndex(args: readonly string[], valued: ReadonlySet<string>): number {
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith("-")) {
    const a = args[i] as string;
    if (a === "--") return i + 1;
    i += valued.has(a) ? 2 : 1;
  }
  return i;
}

/** The command after a program's options, quoted back into a line. */
function commandAfterOptions(args: readonly string[], valued: ReadonlySet<string>): string[] {
  const i = operandIndex(args, valued);
  return i < args.length ? [args.slice(i).map(shellQuote).join(" ")] : [];
}

/** `kubectl exec POD -- CMD`, `docker exec [opts] CTR CMD`: the command the container runs (after `--`, else after the container). */
function containerCommand(c: ShellCommand, valued: ReadonlySet<string>): string[] {
  const sub = operandIndex(c.args, valued);
  if (c.args[sub] !== "exec") return [];
  const rest = c.args.slice(sub + 1);
  const dashes = rest.indexOf("--");
  const from = dashes >= 0 ? dashes + 1 : operandIndex(rest, valued) + 1;
  return from < rest.length ? [rest.slice(from).map(shellQuote).join(" ")] : [];
}

/** The command lines nested in c's arguments or static input; undefined for the commands that nest none (most). */
export function embeddedCommands(c: ShellCommand): string[] | undefined {
  const extract = EXTRACTORS.get(c.name);
  return extract === undefined ? undefined : extract(c);
}
