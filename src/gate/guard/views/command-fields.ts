// The bridge to the shell reader (shell/): the fields of a call that hold a command line,
// the directory it runs in, and the views of a command line as the shell would run it.
import type { JsonObject } from "../../../api/types.js";
import { deobfuscate } from "../decode.js";
import { normalisePath, PATH_SPLIT_RE } from "../paths.js";
import { plainCommandLog } from "../shell/command-words.js";
import { COMMAND_HANDLERS } from "../shell/commands.js";
import { analyseShell, PRINTERS } from "../shell/interpreter.js";
import { shellQuote } from "../shell/quoting.js";
import type { CommandLog } from "../shell/records.js";
import { charFlags, F_GLOB, F_SHELL, F_TILDE } from "../text-flags.js";
import { LARGE_TEXT, MAX_DECODE_DEPTH, viewsOf } from "./text-views.js";
import { add, type ViewSet } from "./view-set.js";

/** Argument fields a shell-capable tool runs as a command line (vaglio reads `command` or `cmd`). */
const SHELL_FIELDS = ["command", "cmd", "script", "shell", "argv", "commandLine", "command_line"];
/** Fields naming the directory a command runs in. */
const CWD_FIELDS = ["cwd", "workdir", "working_dir", "workingDirectory", "dir"];

/** The command lines of a call's command fields (an argv array quoted word by word), with their keys. */
export function commandFields(args: JsonObject): { key: string; line: string }[] {
  const out: { key: string; line: string }[] = [];
  for (const key of SHELL_FIELDS) {
    const v = args[key];
    let line: string | undefined;
    if (typeof v === "string") line = v;
    else if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string")) line = v.map(shellQuote).join(" ");
    if (line !== undefined && line.length <= LARGE_TEXT) out.push({ key, line });
  }
  return out;
}

/** The directory a call's command runs in: its first absolute `cwd`-like field, else `fallback`. */
export function commandDirectory(args: JsonObject, fallback: string): string {
  for (const f of CWD_FIELDS) {
    const v = args[f];
    if (typeof v === "string" && v.startsWith("/")) return normalisePath(v, fallback);
  }
  return fallback;
}

/**
 * Views a command line as the shell would run it (shell/interpreter.ts): each expanded line, with its
 * paths resolved against the command's directory. Returns what could not be resolved, if anything.
 */
export function shellLine(
  line: string,
  cwd: string,
  ctx: ViewSet,
  onLog: (log: CommandLog) => void,
): { unresolved: string | undefined; read: boolean } {
  const decoded = deobfuscate(line);
  let unresolved: string | undefined;
  let read = false;
  for (const text of decoded === line ? [line] : [line, decoded]) {
    const flags = charFlags(text);
    if ((flags & (F_SHELL | F_GLOB | F_TILDE)) === 0 && cwd === ctx.cwd) {
      // Plain words: nothing to view beyond the text, but the effect model reads its command,
      // unless that command runs others (`parallel rm -rf ::: /`, `xargs`, `sh -c`): the reader follows it.
      const log = plainCommandLog(text, cwd);
      // A printer's words are data: the reader renders the line without them (`echo rm -rf /`).
      if (!log.commands.some((c) => COMMAND_HANDLERS.has(c.name) || PRINTERS.has(c.name))) {
        onLog(log);
        continue;
      }
    }
    const analysis = analyseShell(text, { home: ctx.home, cwd });
    onLog(analysis.log);
    unresolved ??= analysis.unresolved;
    if (text === line) read = true;
    const saved = ctx.cwd;
    ctx.cwd = cwd;
    try {
      for (const t of analysis.texts) {
        if (t.length > LARGE_TEXT) continue;
        add(t, ctx);
        // Already expanded as sh would: not shell-normalised again (that would strip the quotes echo's data keeps).
        viewsOf(t, charFlags(t), ctx, MAX_DECODE_DEPTH - 1, false);
      }
      // A command run in another directory: its bare words may be file names there.
      if (cwd !== saved) {
        for (const t of [text, ...analysis.texts]) {
          for (const w of t.split(PATH_SPLIT_RE)) if (w !== "" && !w.startsWith("-") && !w.includes("/")) add(normalisePath(w, cwd), ctx);
        }
      }
    } finally {
      ctx.cwd = saved;
    }
  }
  return { unresolved, read };
}
