// The effect model over one call: the commands of its command fields (as the shell reader
// read them) and, for other tools, its path arguments; their effects and the threat classes
// the rules find, each with the argument key path that carried it.
import type { JsonValue } from "../../../api/types.js";
import type { CallViews } from "../argument-views.js";
import type { Effect, Finding } from "./effect.js";
import { lineFindings, logEffects, type CommandEffects, type Where } from "./rules.js";
import { toolEffects } from "./tool-effects.js";

/** What the effect model read from a call: per key path, each command (or path argument) and its effects; and the findings. */
export interface CallEffects {
  commands: { key: string; command: string; args: string[]; effects: Effect[] }[];
  findings: Finding[];
}

/** The findings of one call (the guard's check), cheap when no command has an effect. */
export function callFindings(tool: string, args: JsonValue, views: CallViews, where: Where, shellTool: boolean): Finding[] {
  return readCall(tool, args, views, where, shellTool).findings;
}

/** The text a write tool writes: its `content` (or `text`, `data`, `body`) argument. */
function writtenContent(args: JsonValue): string | undefined {
  if (args === null || typeof args !== "object" || Array.isArray(args)) return undefined;
  for (const k of ["content", "contents", "text", "data", "body"]) {
    const v = args[k];
    if (typeof v === "string") return v;
  }
  return undefined;
}

/** The effects and findings of one call (`gavel guard check --explain` prints them). */
export function readCall(tool: string, args: JsonValue, views: CallViews, where: Where, shellTool: boolean): CallEffects {
  const out: CallEffects = { commands: [], findings: [] };
  const seen = new Set<string>();
  for (const { key, log } of views.commands) {
    const cmds: CommandEffects[] = logEffects(log, where);
    for (const f of lineFindings(cmds, key, where)) {
      const id = `${f.class}\0${f.what}\0${f.key}`;
      if (!seen.has(id)) {
        seen.add(id);
        out.findings.push(f);
      }
    }
    for (const ce of cmds) out.commands.push({ key, command: ce.command.name, args: ce.command.args, effects: ce.effects });
  }
  if (!shellTool || views.commands.length === 0) {
    const content = writtenContent(args);
    for (const { key, effects } of toolEffects(tool, args, where.home, where.workspace)) {
      const cmd: CommandEffects = {
        command: { name: tool, word: tool, args: [], redirs: [], cwd: where.workspace, pipe: 0, pos: 0, hereInput: false, depth: 0 },
        effects,
      };
      // What a write tool puts in a place that runs it (`fs.write` of ~/.bashrc) is read as `echo ... > path` would be.
      const written = effects.find((e) => e.kind === "overwrite")?.targets[0];
      if (written !== undefined && content !== undefined)
        Object.assign(cmd.command, { redirs: [{ op: ">", target: written }], output: content });
      for (const f of lineFindings([cmd], key, where))
        if (!out.findings.some((g) => g.class === f.class && g.key === f.key)) out.findings.push(f);
      out.commands.push({ key, command: tool, args: [], effects });
    }
  }
  return out;
}
