// Secret files found by a search and handed to a program (issue 27, fifth round, from the fourth
// held-out part's `find ... | grep cookies.sqlite | xargs sqlite3`): the files a line reads are
// often not named in it but found by name (`find / -name id_rsa -exec cat {} \;`, `cat $(locate
// .env)`, a search's results filtered by grep and given to xargs). When the name searched for is
// a secret file's and what is found reaches a program as its files (by -exec, xargs or a
// substitution, not as lines of names piped to a filter), the line reads secret files.
import type { ShellCommand } from "../shell/records.js";
import { findRoots } from "./commands/files.js";
import { effect, type Effect, type ThreatClass } from "./effect.js";
import { parseOptions } from "./options.js";
import { isSecretFile, resolveTarget } from "./targets.js";

interface LineCommand {
  command: ShellCommand;
}

const SEARCHERS = new Set(["find", "locate", "plocate", "mlocate", "fd", "fdfind", "ls"]);
/** Programs given found names that look at names or metadata only, or change permissions: they read no content. */
const NAME_ONLY = new Set([
  "ls",
  "stat",
  "file",
  "echo",
  "printf",
  "wc",
  "du",
  "chmod",
  "chown",
  "chgrp",
  "touch",
  "rm",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "test",
  "[",
]);
const FIND_NAME_OPTIONS = new Set(["-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename"]);

/** The name patterns a search or its filter looks for: find's -name values, locate's and fd's operands, a grep after a search. */
function patterns(cmds: readonly LineCommand[]): { pattern: string; by: ShellCommand }[] {
  const out: { pattern: string; by: ShellCommand }[] = [];
  for (const { command: c } of cmds) {
    if (c.name === "find") {
      c.args.forEach((a, i) => FIND_NAME_OPTIONS.has(c.args[i - 1] ?? "") && out.push({ pattern: a, by: c }));
    } else if (/^(p|m)?locate$|^fd(find)?$/.test(c.name)) {
      for (const a of c.args) if (!a.startsWith("-")) out.push({ pattern: a, by: c });
    } else if (/^(grep|egrep|fgrep|rg)$/.test(c.name) && cmds.some((s) => SEARCHERS.has(s.command.name) && s.command.pipe === c.pipe)) {
      const o = parseOptions(c.args, new Set(["-e", "--regexp", "-m", "-A", "-B", "-C"]));
      // `grep -v` keeps what does not match: the pattern names what is left out.
      if (o.flags.has("-v") || o.flags.has("--invert-match")) continue;
      for (const p of [...(o.values.get("-e") ?? []), ...o.operands.slice(0, 1)]) out.push({ pattern: p, by: c });
    }
  }
  return out;
}

/** `find / -name id_rsa -exec cat {} \;`, `find ... | grep cookies.sqlite | xargs sqlite3 {}`: secret files found and read. */
export function foundSecrets(cmds: readonly LineCommand[], home: string, add: (cls: ThreatClass, what: string) => void): void {
  if (!cmds.some((ce) => SEARCHERS.has(ce.command.name))) return;
  const secret = patterns(cmds).filter(({ pattern }) => {
    const name = pattern
      .replace(/^\^|\$$|\\/g, "")
      .replace(/^[*.]*\*/, "x")
      .replace(/\*/g, "");
    return name !== "" && isSecretFile(`${home}/found/${name.replace(/^.*\//, "")}`, home);
  });
  if (secret.length === 0) return;
  const index = new Map(cmds.map((ce, i) => [ce.command, i]));
  const handed = cmds.some(({ command: c }) => {
    if (SEARCHERS.has(c.name) || NAME_ONLY.has(c.name) || c.name === "" || secret.some((s) => s.by === c)) return false;
    // Found names reach c as files: run by -exec or xargs (nested deeper), or substituted into its arguments.
    return secret.some((s) => c.depth > s.by.depth || s.by.parent === index.get(c));
  });
  if (handed) add("secrets", "reads secret files a search found by name");
}

/** find tests that narrow what it lists (by name, path, age, size, owner): a listing filtered so is not the whole tree. */
const FIND_FILTER_RE =
  /^-(i?name|i?path|i?wholename|i?regex|newer\w*|[acm](time|min)|size|empty|user|group|uid|gid|perm|links|inum|samefile|prune)$/;
const DELETERS = new Set(["rm", "shred", "unlink", "srm"]);

/**
 * `find ~ | xargs -I{} rm {}`, `find / -type f | parallel rm`: every file a search lists, unfiltered,
 * handed to a delete, deletes the tree it searched, as `find ~ -delete` does. The effect sits on
 * the xargs (or parallel) command; a find filtered by name, age or size is not the whole tree.
 */
export function foundDeletes(c: ShellCommand, log: readonly ShellCommand[]): Effect[] {
  if (!/^(xargs|parallel)$/.test(c.name) || !c.args.some((a) => DELETERS.has(a.replace(/^.*\//, "")))) return [];
  // The search feeds the delete directly (`find | grep X | xargs rm` deletes only what grep kept).
  const search = log.find(
    (f) => f.name === "find" && f.pipe === c.pipe && f.pos === c.pos - 1 && !f.args.some((a) => FIND_FILTER_RE.test(a)),
  );
  if (search === undefined) return [];
  return [
    effect(
      "delete",
      "deletes every file a search lists",
      findRoots(search.args).map((r) => resolveTarget(r, search.cwd)),
      { recursive: true },
    ),
  ];
}
