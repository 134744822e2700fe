// Effects of a call to a tool that is not a shell: what its path arguments are to it (read,
// written or deleted), judged by the tool's name (`fs.read`, `write_file`, `fs.delete`).
import type { JsonValue } from "../../../api/types.js";
import { effect, type Effect } from "./effect.js";
import { resolveTarget } from "./targets.js";

const DELETE_RE = /(^|[._-])(delete|remove|rm|unlink|rmdir|destroy|trash)([._-]|$)/i;
const WRITE_RE = /(^|[._-])(write|put|save|create|append|edit|patch|replace|move|mv|copy|cp|upload|overwrite)([._-]|$)/i;
const READ_RE = /(^|[._-])(read|cat|get|open|view|download|load|show|head|tail|grep|search|fetch)([._-]|$)/i;

/** A value that names one path (not prose, not a URL). */
const isPathValue = (v: string): boolean =>
  (v.length <= 1024 && /^(~|\.{1,2}\/|\/|[\w.-]+\/)/.test(v) && !/\s/.test(v) && !v.includes("://")) ||
  /^\.env(\.[\w-]+)?$/.test(v) ||
  /^id_(rsa|dsa|ecdsa|ed25519)$/.test(v);

/** Path values of the arguments with their key paths (`path`, `files[]`, `opts.src`), up to a bound. */
function pathValues(v: JsonValue, key: string, out: { key: string; path: string }[], depth = 0): void {
  if (out.length >= 64 || depth > 8) return;
  if (typeof v === "string") {
    if (isPathValue(v)) out.push({ key, path: v });
  } else if (Array.isArray(v)) for (const x of v) pathValues(x, `${key}[]`, out, depth + 1);
  else if (v !== null && typeof v === "object")
    for (const k of Object.keys(v)) pathValues(v[k] as JsonValue, key === "" ? k : `${key}.${k}`, out, depth + 1);
}

/** Per key path, the effects of a non-shell tool's path arguments. */
export function toolEffects(tool: string, args: JsonValue, home: string, workspace: string): { key: string; effects: Effect[] }[] {
  const kind = DELETE_RE.test(tool) ? "delete" : WRITE_RE.test(tool) ? "overwrite" : READ_RE.test(tool) ? "read" : undefined;
  if (kind === undefined) return [];
  const paths: { key: string; path: string }[] = [];
  pathValues(args, "", paths);
  const recursive = args !== null && typeof args === "object" && !Array.isArray(args) && (args.recursive === true || args.force === true);
  return paths.map(({ key, path }) => {
    const expanded =
      path === "~" || path.startsWith("~/")
        ? home + path.slice(1)
        : path.replace(/^~([a-z_][\w-]*)(?=\/|$)/, (_m, u: string) => (u === "root" ? "/root" : `/home/${u}`));
    const target = resolveTarget(expanded, workspace);
    const what =
      kind === "delete" ? (recursive ? "deletes recursively" : "deletes files") : kind === "overwrite" ? "writes files" : "reads files";
    return { key, effects: [effect(kind, what, [target], { recursive })] };
  });
}
