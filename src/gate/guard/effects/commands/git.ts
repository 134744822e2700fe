// git's history-losing subcommands: hard reset, forced push to a shared branch, clean, discarded changes, deleted stashes and branches, rewritten history.
import type { ShellCommand } from "../../shell/records.js";
import { classified, type Effect } from "../effect.js";
import { has, parseOptions, type Options } from "../options.js";
import { none, set, type Handler } from "./handler.js";

export const SHARED_BRANCH_RE =
  /^(\+)?(refs\/heads\/)?(main|master|trunk|develop|development|dev|release([/-].*)?|prod|production|staging|stable|HEAD)$/;

/** git's subcommands that lose history or uncommitted work, each with what makes it do so. */
type GitRule = (o: Options, rest: string[], c: ShellCommand) => Effect[];
export const gitIf =
  (cond: (o: Options, rest: string[], c: ShellCommand) => boolean, what: string): GitRule =>
  (o, rest, c) =>
    cond(o, rest, c) ? [classified("git_history", what)] : none;

export const gitPush: GitRule = (o, rest) => {
  const targets = rest.slice(1);
  const refs = targets.map((r) => (r.includes(":") ? r.slice(r.indexOf(":") + 1) : r));
  if (has(o, "--mirror")) return [classified("git_history", "overwrites every remote ref (push --mirror)")];
  if (has(o, "-d", "--delete") || targets.some((r) => r.startsWith(":"))) {
    return refs.some((r) => SHARED_BRANCH_RE.test(r)) ? [classified("git_history", "deletes a shared remote branch")] : none;
  }
  const force = has(o, "-f", "--force", "--force-with-lease", "--force-if-includes") || targets.some((r) => r.startsWith("+"));
  const shared = refs.length === 0 || refs.some((r) => SHARED_BRANCH_RE.test(r));
  return force && shared ? [classified("git_history", "force-pushes a shared branch")] : none;
};

/**
 * `git checkout` discards work when forced, when given paths (`-- FILE`, `.`, a file list) or a
 * commit then paths (`REF FILE`: the file restored from REF); `git checkout BRANCH` and `-b` do not.
 */
const OPTIONAL_VALUE_RE = /^(direct|inherit|checkout|on-demand|yes|no)$/;
const gitCheckout: GitRule = (o, rest, c) => {
  if (has(o, "-b", "-B", "--orphan")) return none;
  const force = has(o, "-f", "--force");
  // `--track direct main`, `--recurse-submodules on-demand main`: an optional value written apart is not a path.
  const optionalValues = c.args.filter(
    (a, i) => /^(--track|-t|--recurse-submodules)$/.test(c.args[i - 1] ?? "") && OPTIONAL_VALUE_RE.test(a),
  );
  const operands = rest.length - optionalValues.length;
  const paths = has(o, "--pathspec-from-file") || (rest.length > 0 && (c.args.includes("--") || rest.includes("."))) || operands >= 2;
  if (force) return [classified("git_history", "discards uncommitted changes (checkout --force)")];
  return paths ? [classified("git_history", "discards uncommitted changes (checkout -- paths)")] : none;
};

export const GIT_RULES: Readonly<Record<string, GitRule>> = {
  // `--merge` also resets the index and the files that differ between the commit and HEAD: staged work is lost.
  reset: gitIf((o) => has(o, "--hard", "--merge"), "discards uncommitted changes (reset --hard or --merge)"),
  clean: gitIf((o) => has(o, "-f", "--force"), "deletes untracked files (clean -f)"),
  push: gitPush,
  checkout: gitCheckout,
  switch: gitIf((o) => has(o, "-f", "--force", "--discard-changes"), "discards uncommitted changes (switch --discard-changes)"),
  worktree: gitIf(
    (o, rest) => rest[0] === "remove" && has(o, "-f", "--force"),
    "deletes a worktree with its uncommitted changes (worktree remove --force)",
  ),
  restore: gitIf((o) => !has(o, "--staged", "-S") || has(o, "--worktree", "-W"), "discards uncommitted changes (restore)"),
  stash: gitIf((_o, rest) => rest[0] === "drop" || rest[0] === "clear", "deletes stashed changes"),
  branch: gitIf(
    (o, rest) => has(o, "-D") || (has(o, "-d", "--delete") && has(o, "-f", "--force")) || (has(o, "-f", "--force") && rest.length > 0),
    "deletes an unmerged branch or moves one, dropping commits",
  ),
  "filter-branch": gitIf(() => true, "rewrites the repository's history"),
  "filter-repo": gitIf(() => true, "rewrites the repository's history"),
  reflog: gitIf((_o, rest) => rest[0] === "expire" || rest[0] === "delete", "expires the reflog"),
  gc: gitIf((_o, _r, c) => c.args.some((a) => /^--prune=(now|all)/.test(a)), "prunes unreachable commits"),
  "update-ref": gitIf((o) => has(o, "-d"), "deletes a ref"),
};

export const git: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set(
      ...["-C", "-c", "--git-dir", "--work-tree", "--config-env", "--namespace", "-m", "--message", "-b", "-B", "--orphan"],
      ...["--conflict", "--unified", "-U", "--inter-hunk-context"],
      ...["-o", "--push-option", "--exec", "--repo", "-F", "--file", "--pathspec-from-file"],
    ),
  );
  const [sub, ...rest] = o.operands;
  // `git restore --help`, `git reset -h`: the manual or the usage, nothing run.
  if (has(o, "--help", "-h")) return none;
  const rule = sub === undefined || !Object.hasOwn(GIT_RULES, sub) ? undefined : GIT_RULES[sub];
  return rule === undefined ? none : rule(o, rest, c);
};
