// Programs that run a command once per input item: `xargs` (stdin's words, or its lines put where
// a replacement string stands: `-I{}`, `-i`, `--replace`, BSD `-J`) and GNU `parallel` (its `:::`
// lists, `::::` files or stdin's lines, put where `{}` and its kin stand or appended). Each run is
// read as a nested line, so `echo / | xargs -I{} bash -c 'rm -rf {}'` reads `rm -rf /`.
import { posix } from "node:path";
import type { CommandHandler, readNested as ReadNested } from "./commands.js";
import { shellQuote } from "./quoting.js";

/** Runs read per fan-out: enough to show what each kind of item does, bounded for the hot path. */
const MAX_RUNS = 8;

/** The options of a command whose arguments are options, then a command: where the command starts and what the options said. */
interface FanOptions {
  /** Index of the first word of the command run. */
  start: number;
  /** The replacement string, if one was given. */
  replace?: string;
  /** Input items are lines (a replacement string, a delimiter or a line count was given), not words. */
  lines: boolean;
  /** The file the items come from (`-a FILE`, `--arg-file=FILE`), if any. */
  fromFile?: string;
}

/** xargs's options: short letters taking a value, those taking an attached optional one, and long options taking a value. */
const XARGS_VALUED = new Set("aEILnPsJRSd");
const XARGS_OPTIONAL = new Set("iel");
const XARGS_LONG_VALUED = new Set(["--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"]);

/** One long xargs option at v[i] into o; returns the index of its last word. */
function xargsLong(v: readonly string[], i: number, o: FanOptions): number {
  const a = v[i] as string;
  const eq = a.indexOf("=");
  const name = eq < 0 ? a : a.slice(0, eq);
  const value = eq < 0 ? undefined : a.slice(eq + 1);
  // `--replace` and `--replace=` mean `{}`, as `-i` does.
  if (name === "--replace") o.replace = value === undefined || value === "" ? "{}" : value;
  if (name === "--delimiter" || name === "--max-lines") o.lines = true;
  const last = eq < 0 && XARGS_LONG_VALUED.has(name) ? i + 1 : i;
  if (name === "--arg-file") o.fromFile = value ?? v[last];
  return last;
}

/** One cluster of short xargs options at v[i] into o; returns the index of its last word. */
function xargsShort(v: readonly string[], i: number, o: FanOptions): number {
  const a = v[i] as string;
  for (let j = 1; j < a.length; j++) {
    const ch = a[j] as string;
    const attached = a.slice(j + 1);
    if (XARGS_OPTIONAL.has(ch)) {
      if (ch === "i") o.replace = attached === "" ? "{}" : attached;
      if (ch === "l") o.lines = true;
      return i;
    }
    if (XARGS_VALUED.has(ch)) {
      const last = attached === "" ? i + 1 : i;
      const value = attached === "" ? v[last] : attached;
      if (ch === "I" || ch === "J") o.replace = value;
      if (ch === "d" || ch === "L") o.lines = true;
      if (ch === "a") o.fromFile = value;
      return last;
    }
  }
  return i;
}

function xargsOptions(v: readonly string[]): FanOptions {
  const o: FanOptions = { start: v.length, lines: false };
  for (let i = 0; i < v.length; i++) {
    const a = v[i] as string;
    if (a === "--") return { ...o, start: i + 1 };
    if (!a.startsWith("-") || a === "-") return { ...o, start: i };
    i = a.startsWith("--") ? xargsLong(v, i, o) : xargsShort(v, i, o);
  }
  return o;
}

/** parallel's options that take a value when not written `--name=value` or `-jN`. */
const PARALLEL_VALUED = new Set(
  (
    "-j --jobs -P --max-procs -S --sshlogin --sshloginfile --slf -a --arg-file --results --res -d --delimiter -E -I " +
    "--colsep -C -n --max-args -N --max-replace-args -L --max-lines --joblog --timeout --halt --halt-on-error --memfree " +
    "--load --nice --workdir --wd --tmpdir --tempdir --env --tagstring --tag-string --basefile --bf --return " +
    "--transferfile --tf --retries --delay --limit --block --block-size --recstart --recend --header --sshdelay --sqlmaster " +
    "--sqlworker --sqlandworker --termseq --rpl --plus-rpl --shebang-wrap --ssh --hostgroups --tee-filter"
  ).split(" "),
);
const GROUP_SEPARATORS = new Set([":::", ":::+", "::::", "::::+"]);

function parallelOptions(v: readonly string[]): FanOptions & { dryRun: boolean } {
  const o: FanOptions & { dryRun: boolean } = { start: v.length, lines: true, dryRun: false };
  for (let i = 0; i < v.length; i++) {
    const a = v[i] as string;
    if (a === "--") return { ...o, start: i + 1 };
    if (GROUP_SEPARATORS.has(a) || !a.startsWith("-") || a === "-") return { ...o, start: i };
    const eq = a.indexOf("=");
    const name = a.startsWith("--") && eq >= 0 ? a.slice(0, eq) : a;
    if (name === "--dry-run" || name === "--dryrun") o.dryRun = true;
    if (name === "-a" || name === "--arg-file") o.fromFile = a.startsWith("--") && eq >= 0 ? a.slice(eq + 1) : v[i + 1];
    if (name === "-I") o.replace = v[i + 1];
    else if (a.startsWith("-I") && a.length > 2) o.replace = a.slice(2);
    if (PARALLEL_VALUED.has(name) && !(a.startsWith("--") && eq >= 0)) i++;
  }
  return o;
}

/** Input items: stdin's lines, or its words; undefined when stdin is not known. */
function stdinItems(input: string | undefined, lines: boolean): string[] | undefined {
  if (input === undefined) return undefined;
  return (lines ? input.split("\n") : input.split(/\s+/)).filter((x) => x !== "");
}

/** parallel's replacement strings for one run: `{}`, `{.}`, `{/}`, `{//}`, `{/.}`, `{#}`, `{%}`, `{N}`. */
function parallelReplace(word: string, items: readonly string[], custom: string | undefined): string {
  const first = items[0] ?? "";
  const noExt = (s: string): string => s.replace(/\.[^./]*$/, "");
  let out = word.replace(/\{(\d+)\}/g, (_m, n: string) => items[Number(n) - 1] ?? "");
  out = out
    .replaceAll("{//}", posix.dirname(first))
    .replaceAll("{/.}", noExt(posix.basename(first)))
    .replaceAll("{/}", posix.basename(first))
    .replaceAll("{.}", noExt(first))
    .replaceAll("{#}", "1")
    .replaceAll("{%}", "1")
    .replaceAll("{}", first);
  return custom === undefined || custom === "" ? out : out.replaceAll(custom, first);
}

const PARALLEL_PLACEHOLDER_RE = /\{(\d+|\.|\/|\/\/|\/\.|#|%)?\}/;

/** The argument groups after `:::` (values) and `::::` (files, read as `$(cat FILE)`). */
function groups(v: readonly string[], from: number): { lists: string[][]; files: string[] } {
  const lists: string[][] = [];
  const files: string[] = [];
  for (let i = from; i < v.length; i++) {
    const sep = v[i] as string;
    if (!GROUP_SEPARATORS.has(sep)) continue;
    const items: string[] = [];
    for (i++; i < v.length && !GROUP_SEPARATORS.has(v[i] as string); i++) items.push(v[i] as string);
    i--;
    if (sep.startsWith("::::")) files.push(...items);
    else lists.push(items);
  }
  return { lists, files };
}

/** The item tuples of the runs: one value from each group (all combinations), bounded. */
function combinations(lists: readonly string[][]): string[][] {
  let out: string[][] = [[]];
  for (const l of lists) out = out.flatMap((prefix) => l.map((x) => [...prefix, x])).slice(0, MAX_RUNS);
  return out;
}

/** A handler factory: `readNested` is passed in so this file and commands.ts do not import each other at load. */
export function fanOutHandlers(readNested: typeof ReadNested): { xargs: CommandHandler; parallel: CommandHandler } {
  const xargs: CommandHandler = ({ env, argValues, input }) => {
    const o = xargsOptions(argValues);
    const cmd = argValues.slice(o.start);
    if (cmd.length === 0) return;
    if (o.fromFile) {
      // `xargs -a FILE CMD`: the items are the file's words, as `CMD $(cat FILE)` has them.
      readNested(env, `${cmd.map(shellQuote).join(" ")} $(cat ${shellQuote(o.fromFile)})`, "xargs of a computed command");
      return;
    }
    const items = stdinItems(input, o.lines || o.replace !== undefined);
    const replace = o.replace;
    // With a replacement string the command does not use, the items are read as appended (as xargs without one has them).
    if (replace === undefined || items === undefined || !cmd.some((w) => w.includes(replace))) {
      // `echo / | xargs rm -rf`: the command gets stdin's words appended.
      const tail = items === undefined ? "" : ` ${items.map(shellQuote).join(" ")}`;
      readNested(env, `${cmd.map(shellQuote).join(" ")}${tail}`, "xargs of a computed command");
      return;
    }
    for (const item of items.slice(0, MAX_RUNS))
      readNested(env, cmd.map((w) => shellQuote(w.replaceAll(replace, item))).join(" "), "xargs of a computed command");
  };

  const parallel: CommandHandler = ({ env, argValues, input }) => {
    const o = parallelOptions(argValues);
    if (o.dryRun) return;
    let end = o.start;
    while (end < argValues.length && !GROUP_SEPARATORS.has(argValues[end] as string)) end++;
    const cmd = argValues.slice(o.start, end);
    const g = groups(argValues, end);
    if (o.fromFile !== undefined) g.files.push(o.fromFile);
    const fromStdin = g.lists.length === 0 && g.files.length === 0;
    // Items read from a file are what `$(cat FILE)` prints: the reader sees a computed word there.
    const fileItems = new Set(g.files.map((f) => `$(cat ${shellQuote(f)})`));
    const lists = fromStdin ? [stdinItems(input, true) ?? []] : [...g.lists, ...[...fileItems].map((f) => [f])];
    const quote = (x: string): string => (fileItems.has(x) ? x : shellQuote(x));
    const runs = lists.length === 0 || lists.every((l) => l.length === 0) ? [[]] : combinations(lists);
    const placed = cmd.some((w) => PARALLEL_PLACEHOLDER_RE.test(w) || (o.replace !== undefined && w.includes(o.replace)));
    for (const items of runs) {
      if (cmd.length === 0) {
        // `parallel ::: 'rm -rf /'`: each argument is a command line.
        for (const item of items) readNested(env, item, "parallel of a computed command");
        continue;
      }
      const words = placed ? cmd.map((w) => parallelReplace(w, items, o.replace)) : [...cmd, ...items];
      // parallel joins its command words with spaces and hands them to a shell; read as argv too
      // (as `-q` does), so `bash -c 'rm -rf {}'` is read as the script it was meant to be.
      const joined = placed
        ? cmd.map((w) => parallelReplace(w, items.map(quote), o.replace)).join(" ")
        : [...cmd, ...items.map(quote)].join(" ");
      readNested(env, joined, "parallel of a computed command");
      if (cmd.some((w) => /\s/.test(w))) readNested(env, words.map(shellQuote).join(" "), "parallel of a computed command");
    }
  };
  return { xargs, parallel };
}
