// Code written now that runs later: what a line writes (redirections, tee, cp of a file it
// wrote, crontab, at, git config) to a place that runs it is read as the commands it will
// become, and the write is persistence carrying the class of what it would do; a program
// written in the line and then run or compiled is read as code; a search whose matches get
// code appended is an infection (issue 27, ADR 0052).
import { posix } from "node:path";
import type { ShellCommand } from "../shell/records.js";
import { SHELLS } from "../command-names.js";
import { autorunPlace, payloadLines, type AutorunPlace } from "./autorun.js";
import type { ThreatClass } from "./effect.js";
import { COMMAND_EFFECTS } from "./command-table.js";
import { findRoots } from "./commands/files.js";
import { parseOptions } from "./options.js";
import { resolveTarget } from "./targets.js";

/** What a finding of written code adds: its class, phrase and the classes of the payload it carries. */
export type AddCarrying = (cls: ThreatClass, what: string, carries?: readonly ThreatClass[]) => void;

/** How the rules read text that will run: as shell lines, or as source code of another language. */
export interface CodeReader {
  shell(text: string, cwd: string): { class: ThreatClass; what: string }[];
  code(text: string, like: ShellCommand): { class: ThreatClass; what: string }[];
}

/** One write of a line: its target, its content when static, and whether it came from the network. */
interface Write {
  target: string;
  content: string | undefined;
  fetched: boolean;
  /** The place it names when the target is a synthetic one (a user's cron table). */
  place?: AutorunPlace;
  /** A file a program names in its arguments (named-files.ts), not a write the line shows. */
  named?: boolean;
  command: ShellCommand;
}

const WRITES_STDOUT = new Set([">", ">>", "&>", ">|", "&>>"]);
const GIT_RUNS_RE =
  /^(core\.(pager|fsmonitor|sshcommand|editor|askpass)|sequence\.editor|alias\..+|credential\.helper|diff\.[\w-]+\.(textconv|command)|filter\.[\w-]+\.(clean|smudge|process)|gpg\.program|pager\.[\w-]+)$/i;
const COMPILERS = new Set([
  "go",
  "gcc",
  "cc",
  "clang",
  "g++",
  "clang++",
  "rustc",
  "javac",
  "java",
  "kotlinc",
  "swiftc",
  "tcc",
  "jshell",
  "dotnet",
  "cargo",
  "nim",
  "zig",
  "deno",
  "bun",
  "ts-node",
  "tsx",
]);
const CRON_TABLE: AutorunPlace = { what: "a cron table", format: "cron", always: true };
const AT_JOB: AutorunPlace = { what: "an at job", format: "shell", always: true };
const GIT_CONFIG: AutorunPlace = { what: "git configuration that runs a command", format: "shell", always: false };
const COPIERS = new Set(["cp", "install", "mv", "ln", "rsync", "dd"]);

type Put = (
  command: ShellCommand,
  target: string,
  content: string | undefined,
  append: boolean,
  fetched?: boolean,
  pl?: AutorunPlace,
) => void;
/** The writes of one command (beyond its redirections), given the contents of files written before it. */
type CommandWrites = (c: ShellCommand, files: ReadonlyMap<string, string>, put: Put) => void;

const tee: CommandWrites = (c, _files, put) => {
  const o = parseOptions(c.args);
  for (const t of o.operands) put(c, resolveTarget(t, c.cwd), c.input, o.flags.has("-a") || o.flags.has("--append"));
};

/** cp/mv/install/ln/rsync/dd: the destination gets the source's content when the line wrote it. */
const copy: CommandWrites = (c, files, put) => {
  const ops =
    c.name === "dd"
      ? [c.args.find((a) => a.startsWith("if="))?.slice(3) ?? "", c.args.find((a) => a.startsWith("of="))?.slice(3) ?? ""]
      : parseOptions(c.args, new Set(["-m", "--mode", "-o", "-g", "-S"])).operands;
  if (ops.length < 2) return;
  const src = resolveTarget(ops[0] as string, c.cwd);
  const last = ops.at(-1) as string;
  const dest = last.endsWith("/") ? posix.join(resolveTarget(last, c.cwd), posix.basename(src)) : resolveTarget(last, c.cwd);
  put(c, dest, files.get(src) ?? (c.name === "dd" && src === "/dev/stdin" ? c.input : undefined), false);
};

const crontab: CommandWrites = (c, files, put) => {
  if (c.args.some((a) => /^-[a-z]*[lre]/.test(a))) return;
  const file = c.args.find((a) => a !== "-" && !a.startsWith("-"));
  put(c, "/var/spool/cron/crontabs/(user)", file === undefined ? c.input : files.get(resolveTarget(file, c.cwd)), false, false, CRON_TABLE);
};

const atJob: CommandWrites = (c, files, put) => {
  const f = parseOptions(c.args, new Set(["-f", "-q", "-t"])).values.get("-f")?.[0];
  put(c, "/var/spool/at/(job)", f === undefined ? c.input : files.get(resolveTarget(f, c.cwd)), false, false, AT_JOB);
};

/** `git config KEY VALUE` for a key whose value git runs (a pager, an `!` alias, an fsmonitor hook). */
const gitConfig: CommandWrites = (c, _files, put) => {
  if (!c.args.includes("config")) return;
  const [key = "", value] = c.args.filter((a) => !a.startsWith("-") && a !== "config");
  if (!GIT_RUNS_RE.test(key) || value === undefined) return;
  const run = key.startsWith("alias.") ? (value.startsWith("!") ? value.slice(1) : "") : value;
  put(c, "(git config)", run, false, false, GIT_CONFIG);
};

/**
 * `sed -i '4i TEXT' FILE`, `sed -i '$a TEXT'`, `sed -i '/re/c TEXT'`: the text inserted, appended or
 * put in place is what the file gains (the rest of an in-place edit is unknown content).
 */
const sedInPlace: CommandWrites = (c, _files, put) => {
  const o = parseOptions(c.args, new Set(["-e", "--expression", "-f", "--file", "-l", "--line-length"]));
  if (![...o.flags].some((f) => f === "-i" || f.startsWith("--in-place") || /^-[a-zA-Z]*i/.test(f))) return;
  const scripts = o.values.get("-e") ?? o.values.get("--expression") ?? [];
  const files = scripts.length > 0 ? o.operands : o.operands.slice(1);
  const script = (scripts.length > 0 ? scripts : o.operands.slice(0, 1)).join("\n");
  const text = [...script.matchAll(/(?:^|[;\n])\s*(?:\d+|\$|\/[^/]*\/)?\s*[aic]\\?\s*(.+)/g)].map((m) => m[1] as string);
  for (const f of files) put(c, resolveTarget(f, c.cwd), text.length > 0 ? text.join("\n") : undefined, true);
};

const WRITERS_BY_NAME: ReadonlyMap<string, CommandWrites> = new Map<string, CommandWrites>([
  ["tee", tee],
  ["sed", sedInPlace],
  ...[...COPIERS].map((n): [string, CommandWrites] => [n, copy]),
  ["crontab", crontab],
  ["at", atJob],
  ["batch", atJob],
  ["git", gitConfig],
]);

/** Every write of a line, in order, with the content of files written earlier followed through copies. */
function gatherWrites(cmds: readonly ShellCommand[]): { writes: Write[]; files: Map<string, string> } {
  const files = new Map<string, string>();
  const writes: Write[] = [];
  const put: Put = (command, target, content, append, fetched = false, pl) => {
    const before = files.get(target);
    const full = content === undefined ? undefined : append && before !== undefined ? before + content : content;
    if (full !== undefined) files.set(target, full);
    writes.push({ target, content: full, fetched, command, ...(pl === undefined ? {} : { place: pl }) });
  };
  for (const c of cmds) {
    // `cat /tmp/x >> ~/.bashrc`: what cat prints of files the line wrote is what the redirection writes.
    const output = c.output ?? (c.name === "cat" ? catOfWritten(c, files) : undefined);
    for (const r of c.redirs) if (writesFile(r)) put(c, resolveTarget(r.target, c.cwd), output, r.op.startsWith(">>") || r.op === "&>>");
    WRITERS_BY_NAME.get(c.name)?.(c, files, put);
  }
  return { writes, files };
}

/** The content `cat` prints when every file it reads was written earlier in the line. */
function catOfWritten(c: ShellCommand, files: ReadonlyMap<string, string>): string | undefined {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const parts = ops.map((a) => files.get(resolveTarget(a, c.cwd)));
  return ops.length > 0 && parts.every((p) => p !== undefined) ? parts.join("") : undefined;
}

/** What a payload would do, read by its place's format. */
function payloadFindings(w: Write, pl: AutorunPlace, read: CodeReader): { class: ThreatClass; what: string }[] {
  if (w.content === undefined) return [];
  // The payload is read as the program it becomes, without the writing command's redirections:
  // those are this write, already found once for its destination (not again, nested, per level).
  if (pl.format === "code")
    return read.code(w.content, { ...w.command, name: /\.(py|pth)$/.test(w.target) ? "python3" : "php", redirs: [] });
  const cronUser = /^\/etc\/(crontab|cron\.d\/)/.test(w.target);
  return payloadLines(w.content, pl.format, cronUser).flatMap((l) => read.shell(l, w.command.cwd));
}

const WRITERS = new Set(["find", ...WRITERS_BY_NAME.keys()]);

/** Whether a line can write anything the rules below read: most lines cannot, and skip them. */
const writesAnything = (cmds: readonly { command: ShellCommand; effects: readonly { kind: string; named?: boolean }[] }[]): boolean =>
  cmds.some(
    (ce) =>
      ce.command.redirs.some(writesFile) ||
      WRITERS.has(ce.command.name) ||
      ce.effects.some((e) => e.kind === "download" || (e.kind === "overwrite" && e.named === true)),
  );
/** A redirection that writes a file (not `2>&1`, not `/dev/null`). */
const writesFile = (r: { op: string; target: string }): boolean =>
  WRITES_STDOUT.has(r.op) && r.target !== "/dev/null" && !/^&?\d*$/.test(r.target);

/** Persistence (code written to a place that runs it later), programs written then run, infected search results. */
export function writtenCode(
  cmds: readonly { command: ShellCommand; effects: readonly { kind: string; targets: readonly string[]; named?: boolean }[] }[],
  home: string,
  workspace: string,
  reader: () => CodeReader,
  add: AddCarrying,
): void {
  if (!writesAnything(cmds)) return;
  const read = reader();
  const shellCmds = cmds.map((ce) => ce.command);
  const { writes, files } = gatherWrites(shellCmds);
  for (const ce of cmds)
    for (const e of ce.effects)
      if (e.kind === "download")
        for (const t of e.targets) writes.push({ target: t, content: undefined, fetched: true, command: ce.command });
  // A file a program names and may write (named-files.ts): its content is unknown, so only places that count whatever is written do.
  for (const ce of cmds)
    for (const e of ce.effects)
      if (e.kind === "overwrite" && e.named === true)
        for (const t of e.targets) writes.push({ target: t, content: undefined, fetched: false, named: true, command: ce.command });
  const staged: Write[] = [];
  let placed = false;
  for (const w of writes) {
    const pl = w.place ?? autorunPlace(w.target, home, workspace);
    if (pl === undefined) {
      staged.push(w);
      continue;
    }
    const found = payloadFindings(w, pl, read);
    if (!pl.always && found.length === 0 && !(w.fetched && pl.downloads === true)) continue;
    const first = found[0];
    const how = w.fetched ? "saves a download" : w.named === true ? "names a file it may write" : "writes code that runs later";
    add("persistence", `${how} to ${pl.what}${first === undefined ? "" : ` (${first.class}: ${first.what})`}`, [
      ...new Set(found.map((f) => f.class)),
    ]);
    placed = true;
  }
  // A script staged and then put where it runs is read there (above), not as staged.
  if (!placed) for (const w of staged) stagedScript(w, shellCmds, read, add);
  if (files.size > 0) writtenPrograms(cmds, files, read, add);
  infection(shellCmds, workspace, add);
}

/** Classes a staged script carries to be read as planted: what a run of it would be denied for, not a privilege change or a git rewrite. */
const PLANTED: ReadonlySet<ThreatClass> = new Set<ThreatClass>([
  "privilege_escalation",
  "reverse_shell",
  "exfiltration",
  "remote_code",
  "secrets",
  "protection_off",
  "persistence",
  "account_change",
  "destruction",
]);
/** `chmod +x F`, `chmod 755 F`, `chmod u+x F`: the mode makes F a program. */
const MAKES_EXECUTABLE_RE = /^([ugoa]*\+[rwxst]*x[rwxst]*|[0-7]?[0-7]*[1357][0-7]{0,2})$/;

/**
 * A script written anywhere, not run in the line but made a program (a `#!` line, or `chmod +x` on
 * it): whatever runs it later (a hook, a root job that runs the file by that name, the caller's
 * next call) runs its code, so code in it that escalates, persists, opens a shell or sends data
 * is planted now (`echo '#!/bin/bash ... chmod 4777 /tmp/b' > pre-commit; chmod +x pre-commit`,
 * round 9). A script with only harmless code, or one the line runs (read as run), is not.
 */
function stagedScript(w: Write, cmds: readonly ShellCommand[], read: CodeReader, add: AddCarrying): void {
  if (w.content === undefined || w.fetched || w.target === "/dev/null") return;
  const text = w.content.replace(/\\n/g, "\n");
  const executable =
    /^#!.*\b(ba|da|z|k)?sh\b/.test(text) ||
    cmds.some(
      (c) =>
        c.name === "chmod" && c.args.some((a) => MAKES_EXECUTABLE_RE.test(a)) && c.args.some((a) => resolveTarget(a, c.cwd) === w.target),
    );
  const runs = cmds.some(
    (c) =>
      (c.word.includes("/") && resolveTarget(c.word, c.cwd) === w.target) ||
      ((SHELLS.has(c.name) || c.name === "source" || c.name === ".") && c.args.some((a) => resolveTarget(a, c.cwd) === w.target)),
  );
  if (!executable || runs) return;
  const found = read.shell(text, w.command.cwd).filter((f) => PLANTED.has(f.class));
  const first = found[0];
  if (first === undefined) return;
  add("persistence", `writes a script that runs later (${first.class}: ${first.what})`, [...new Set(found.map((f) => f.class))]);
}

/** A program written in the line (`echo '...' > x.go`) and then run or compiled: what it would do. */
function writtenPrograms(
  cmds: readonly { command: ShellCommand; effects: readonly { kind: string; targets: readonly string[] }[] }[],
  files: Map<string, string>,
  read: CodeReader,
  add: AddCarrying,
): void {
  for (const { command: c, effects } of cmds) {
    // What a copier or writer run so does with the file is a write (read above), not a program run on it.
    if (c.asUser !== undefined && !COPIERS.has(c.name) && !WRITERS_BY_NAME.has(c.name) && handsShellFile(c, files))
      add(
        "privilege_escalation",
        `hands a program run as another user (${c.asUser} ${c.name}) a file written in this call that starts a shell`,
      );
    const run = effects.filter((e) => e.kind === "runs_file").flatMap((e) => e.targets);
    // A compiler, or a program the table does not know (`v run t.v`, `crystal t.cr`), given a file the line wrote: the file is its code.
    const compiled =
      COMPILERS.has(c.name) || !COMMAND_EFFECTS.has(c.name)
        ? c.args.filter((a) => !a.startsWith("-")).map((a) => resolveTarget(a, c.cwd))
        : [];
    for (const path of [...run, ...compiled]) {
      const code = files.get(path);
      if (code === undefined) continue;
      const shellScript = /\.(sh|bash)$/.test(path) || /^#!.*\b(ba|da|z|k)?sh\b/.test(code);
      for (const f of shellScript ? read.shell(code, c.cwd) : read.code(code, c))
        add(f.class, `${f.what} (a program written in this call)`);
    }
  }
}

/** A shell named in a file's text past its `#!` line (`exec /bin/sh`, `CALL "SYSTEM" USING "/bin/sh"`, `! exec /bin/sh`). */
const STARTS_SHELL_RE = /(^|[^\w./-])(\/usr)?\/bin\/(ba|da|z|k|c|tc|fi|po|a|mk)?sh(?![\w.-])/m;

/**
 * A file the line wrote, whose text starts a shell, named in the arguments of a program run as
 * another user (`sudo check_ssl_cert --grep-bin F`, `sudo wget --use-askpass=F`, `sudo cobc F`):
 * the program runs or interprets it as that user, so the shell is theirs (GTFOBins' sudo forms).
 * A script whose only shell is its `#!` line (`sudo ./install.sh`) is not a shell handed over.
 * A program the table knows takes the file as an option's value (`--use-askpass=F`), not as an
 * operand it works on (`sudo chmod +x F`).
 */
function handsShellFile(c: ShellCommand, files: ReadonlyMap<string, string>): boolean {
  const known = COMMAND_EFFECTS.has(c.name);
  return c.args.some((a, i) => {
    if (known && !/^--?[\w-]+=/.test(a) && !(c.args[i - 1] ?? "").startsWith("-")) return false;
    const text = files.get(resolveTarget(a.replace(/^-[\w-]*=/, ""), c.cwd));
    return text !== undefined && STARTS_SHELL_RE.test(text.replace(/\\n/g, "\n").replace(/^#!\S*/, ""));
  });
}

/** `find / -perm ... -exec sh -c 'echo ... >> "{}"'`: code appended to every file a search outside the workspace finds. */
function infection(cmds: readonly ShellCommand[], workspace: string, add: AddCarrying): void {
  const wide = cmds.some(
    (c) =>
      c.name === "find" &&
      findRoots(c.args).some((r) => !resolveTarget(r, c.cwd).startsWith(`${workspace}/`) && resolveTarget(r, c.cwd) !== workspace),
  );
  if (!wide) return;
  const appends = cmds.some(
    (c) =>
      c.depth > 0 &&
      (c.redirs.some((r) => WRITES_STDOUT.has(r.op) && /(^|\/)\{\}$/.test(r.target)) ||
        (c.name === "tee" && c.args.some((a) => /(^|\/)\{\}$/.test(a)))),
  );
  if (appends) add("persistence", "writes into every file a search outside the workspace finds");
}
