// Splits a cmd.run command line into argv without a shell, and matches it against the
// tool's allowlist of command prefixes. No shell runs the command, so `;`, `|`, `&&`,
// `$(...)` and redirections are refused rather than interpreted.

/** A command line that cannot be run: shell syntax, bad quoting, or not on the allowlist. */
export class CommandRefused extends Error {
  override readonly name = "CommandRefused";
}

const SHELL_SYNTAX = new Set([";", "|", "&", "<", ">", "(", ")", "`", "$", "\n", "\r"]);

/** Splits a command line into words: single and double quotes, backslash escapes; no expansion. */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line.charAt(i);
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === "\\" && i + 1 < line.length && '"\\'.includes(line.charAt(i + 1))) word += line.charAt(++i);
      else if (c === "$" || c === "`") throw new CommandRefused(`shell expansion "${c}" is not supported: commands run without a shell`);
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\") {
      if (i + 1 >= line.length) throw new CommandRefused("command ends with a backslash");
      word += line.charAt(++i);
      inWord = true;
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else if (SHELL_SYNTAX.has(c)) {
      throw new CommandRefused(
        `shell syntax "${c}" is not supported: commands run without a shell (one command, no pipes, redirections or substitutions)`,
      );
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote !== undefined) throw new CommandRefused(`unterminated ${quote} quote`);
  if (inWord) words.push(word);
  return words;
}

/**
 * Checks argv against the allowlist: an entry allows a command whose first words equal the
 * entry's words ("npm test" allows `npm test -- --watch=false`, not `npm testx` or `npm
 * install`). No allowlist allows every command; an empty one allows none.
 */
export function allowedBy(argv: string[], allowlist: string[] | undefined): boolean {
  if (allowlist === undefined) return true;
  return allowlist.some((entry) => {
    const prefix = splitCommand(entry);
    return prefix.length > 0 && prefix.length <= argv.length && prefix.every((w, i) => argv[i] === w);
  });
}

/** Parses a command line and checks it against the allowlist; throws CommandRefused naming why. */
export function parseAllowedCommand(line: string, allowlist: string[] | undefined): string[] {
  const argv = splitCommand(line);
  if (argv.length === 0) throw new CommandRefused("command is empty");
  if (!allowedBy(argv, allowlist)) {
    throw new CommandRefused(
      `command "${argv.join(" ")}" is not on the cmd.run allowlist (${(allowlist ?? []).map((a) => `"${a}"`).join(", ")})`,
    );
  }
  return argv;
}
