// A command run as another user (ADR 0078): `sudo X`, `doas X`, `pkexec X`, `runuser -u U X`,
// `setpriv --reuid=0 X`, `su -c X`. Running as another user is a privilege change whatever X
// does (`privilege_change`: flagged under standard, denied under strict); a shell started that
// way, or handed to a program run that way (GTFOBins' sudo forms: `sudo env /bin/sh`, `sudo
// find . -exec /bin/sh \;`, `sudo man '-H/bin/sh #' man`), is a root shell (`privilege_escalation`).
import { INTERPRETERS, SHELLS } from "../command-names.js";
import { RUN_AS } from "../shell/command-words.js";
import type { ShellCommand } from "../shell/records.js";
import { COMMAND_EFFECTS } from "./command-table.js";
import { classified, type Effect } from "./effect.js";

/** A shell named as a word or inside one: `/bin/sh`, `bash`, `'/bin/sh -i 0<&2'`, `system("/bin/sh")`, `-wrapper /bin/sh,-s`. */
const SHELL_IN_WORD_RE = /(^|[^\w.-]|^--?[A-Za-z][\w-]*=?)(\/usr)?\/bin\/(ba|da|z|k|c|tc|fi|po|a|mk)?sh(?![\w.-])/;
/** The options of sudo/doas that start the target user's shell: `-s`, `-i`, `--shell`, `--login`, combined (`-si`). */
const SHELL_OPTION_RE = /^(-[a-zA-Z]*[si][a-zA-Z]*|--shell|--login)$/;
/** An option that gives a shell or interpreter its script: `sh -c`, `python -c`, `perl -e`, `ruby -e`, `node -e`, `python -m`. */
const SCRIPT_OPTION_RE = /^-[a-zA-Z]*[ceEm][a-zA-Z]*$|^--(command|eval|execute)(=|$)/;

/** Whether a shell or interpreter reads its commands from the terminal: not fed by a pipe or here-document, no script option or operand. */
const interactive = (c: ShellCommand): boolean =>
  (SHELLS.has(c.name) || INTERPRETERS.has(c.name)) &&
  c.pos === 0 &&
  !c.hereInput &&
  c.input === undefined &&
  c.args.every((a) => a.startsWith("-") && !SCRIPT_OPTION_RE.test(a));

/** `script` without `-c` starts the user's shell and records it (`sudo script -q /dev/null`). */
const startsShell = (c: ShellCommand): boolean => c.name === "script" && !c.args.some((a) => /^(-[a-zA-Z]*c|--command)(=|$)/.test(a));

/** A shell in privileged mode (`sh -p`, `bash -p`): it keeps the effective uid of a setuid copy instead of dropping it. */
const privilegedMode = (c: ShellCommand): boolean => SHELLS.has(c.name) && c.args.some((a) => /^-[a-zA-Z]*p[a-zA-Z]*$/.test(a));

const givenShell = (c: ShellCommand): boolean => c.args.some((a) => SHELL_IN_WORD_RE.test(a) || SHELLS.has(a));

/** The effects of running as another user: none for a command run as itself. */
export function runAsEffects(c: ShellCommand): Effect[] {
  if (privilegedMode(c)) return [classified("privilege_escalation", "starts a shell that keeps a setuid owner's privileges (-p)")];
  if (c.name === "su") {
    const command = c.args.some((a) => /^(-c|--command|--session-command)(=|$)/.test(a));
    // `su`, `su -`, `su - root`: root's shell. `su nobody` is another user's shell, not root's.
    const user = c.args.find((a, i) => !a.startsWith("-") && !/^(-c|--command|-s|--shell|-g|--group|-G)$/.test(c.args[i - 1] ?? ""));
    return !command && (user === undefined || user === "root")
      ? [classified("privilege_escalation", "starts a root shell (su)")]
      : givenShell(c)
        ? [classified("privilege_escalation", "hands a shell to a command run as another user (su)")]
        : [classified("privilege_change", "runs a command as another user (su)")];
  }
  if (RUN_AS.has(c.name)) {
    // The prefix with no command after it: `sudo -i`, `sudo -s` start the target user's shell; `sudo -l` lists what it may run.
    return c.args.some((a) => SHELL_OPTION_RE.test(a))
      ? [classified("privilege_escalation", `starts a shell as another user (${c.name})`)]
      : [classified("privilege_change", `runs as another user (${c.name})`)];
  }
  if (c.asUser === undefined) return [];
  if (interactive(c) || startsShell(c))
    return [classified("privilege_escalation", `starts a shell as another user (${c.asUser} ${c.name})`)];
  if (givenShell(c)) return [classified("privilege_escalation", `hands a shell to a program run as another user (${c.asUser} ${c.name})`)];
  return [classified("privilege_change", `runs a command as another user (${c.asUser})`)];
}

/** Programs with a command prompt of their own that the command table knows (clients, pagers, editors); those it does not know may have one too. */
const PROMPTING = new Set([
  "sftp",
  "ftp",
  "less",
  "more",
  "man",
  "vi",
  "vim",
  "nano",
  "ed",
  "gdb",
  "mysql",
  "psql",
  "sqlite3",
  "ssh",
  "telnet",
  "debugfs",
  "xfs_db",
]);
/** Options that ask a program for its prompt (`jtag --interactive`, `gdb -i`). */
const INTERACTIVE_OPTION_RE = /^(-i|--interactive|--repl|--shell|--console)$/;
/** Programs that only print or test their words: a shell path among them is text. */
const TEXT_ONLY = new Set(["echo", "printf", "[", "[[", "test", "true", "false", ":"]);

/**
 * Lines typed into a program run as another user: in a call typed at a terminal, the line after
 * a program with a prompt of its own (`sudo ispell F`, `sudo sftp host`, `sudo jtag --interactive`)
 * is its input, so a shell started on it (`!/bin/sh`, `shell /bin/sh`) is that program's shell
 * escape, run as its user. Only the next line is read so, and only when it is an escape's form
 * (`!CMD`, or a word the table does not know handed a shell: `sudo touch F` then `printf
 * '#!/bin/bash'` is not) or a bare shell after a program known to prompt or told to (`-i`,
 * `--interactive`): a bare `bash` after `sudo apt-get update`, which prompts for nothing, is the
 * caller's own shell (round 9).
 */
export function typedEscapes(cmds: readonly ShellCommand[]): Effect[] {
  const i = cmds.findIndex(
    (c) =>
      c.asUser !== undefined &&
      c.depth === 0 &&
      !RUN_AS.has(c.name) &&
      !SHELLS.has(c.name) &&
      (PROMPTING.has(c.name) || !COMMAND_EFFECTS.has(c.name)) &&
      !TEXT_ONLY.has(c.name),
  );
  const program = cmds[i];
  if (program === undefined) return [];
  const next = cmds.slice(i + 1).find((c) => c.depth === 0 && c.pipe > program.pipe);
  if (next === undefined || next.asUser !== undefined) return [];
  const prompts = PROMPTING.has(program.name) || program.args.some((a) => INTERACTIVE_OPTION_RE.test(a));
  const escape =
    (interactive(next) && (prompts || next.word.startsWith("!"))) ||
    (next.name !== "" && !COMMAND_EFFECTS.has(next.name) && !TEXT_ONLY.has(next.name) && givenShell(next));
  return escape
    ? [classified("privilege_escalation", `starts a shell typed into a program run as another user (${program.asUser} ${program.name})`)]
    : [];
}
