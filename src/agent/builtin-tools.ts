// The built-in tools a worker executes itself once the gate allows a call: cmd.run,
// fs.read, fs.write, fs.list. Each is confined to the mounted volumes and bounded in time
// and output. Results are strings handed back to the model as the tool's output.
import { spawn } from "node:child_process";
import { constants } from "node:fs";
import { open, readdir, lstat } from "node:fs/promises";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonObject, ToolEntry } from "../api/types.js";
import { parseAllowedCommand } from "./command-line.js";
import type { Confinement } from "./confinement.js";

/** A tool as offered to the model: name, description and JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** A tool call the model's arguments did not fit; handed back to the model as a tool error. */
export class ToolInputError extends Error {
  override readonly name = "ToolInputError";
}

export interface BuiltinLimits {
  /** Longest a command may run; default 60 s. A call may ask for less, never more. */
  commandTimeoutSeconds: number;
  /** Bytes kept of each of stdout and stderr, and of a file read; default 64 KiB. */
  outputCapBytes: number;
}

export const DEFAULT_LIMITS: BuiltinLimits = { commandTimeoutSeconds: 60, outputCapBytes: 64 * 1024 };

/** The built-in tools' specs, by name. */
export const BUILTIN_TOOLS: Record<string, ToolSpec> = {
  "cmd.run": {
    name: "cmd.run",
    description:
      "Run one command (no shell: no pipes, redirections or substitutions) in the workspace. Returns exit code, stdout and stderr.",
    parameters: {
      type: "object",
      required: ["command"],
      properties: {
        command: { type: "string", description: 'The command line, e.g. "ls -la /workspace"' },
        cwd: { type: "string", description: "Working directory inside a mounted volume; default the first volume" },
        timeout_seconds: { type: "number", description: "Deadline for this command" },
      },
    },
  },
  "fs.read": {
    name: "fs.read",
    description: "Read a text file inside the mounted volumes.",
    parameters: { type: "object", required: ["path"], properties: { path: { type: "string" } } },
  },
  "fs.write": {
    name: "fs.write",
    description: "Write (or append to) a text file inside a writable mounted volume; parent directories are created.",
    parameters: {
      type: "object",
      required: ["path", "content"],
      properties: { path: { type: "string" }, content: { type: "string" }, append: { type: "boolean" } },
    },
  },
  "fs.list": {
    name: "fs.list",
    description: "List a directory inside the mounted volumes: name, type and size of each entry.",
    parameters: { type: "object", required: ["path"], properties: { path: { type: "string" } } },
  },
};

/**
 * The modules each built-in tool runs, next to this one (`.js` in the image, `.ts` under
 * vitest): the tool's "live code" that guard check 2 compares with its `tool_registry` entry.
 * The worker hashes them before every proposal (`ToolCodeHasher`); `gavel guard tool-hash`
 * prints the same hashes for an installation, to register them.
 */
export function builtinToolFiles(): Record<string, string[]> {
  const here = fileURLToPath(import.meta.url);
  const module = (name: string): string => join(dirname(here), `${name}${extname(here)}`);
  const files = [module("builtin-tools"), module("confinement")];
  return { "cmd.run": [...files, module("command-line")], "fs.read": files, "fs.write": files, "fs.list": files };
}

/** The name of a spec.tools entry. */
export function toolName(entry: ToolEntry): string {
  return typeof entry === "string" ? entry : entry.name;
}

/** The spec.tools entry for a tool name, if the agent declares it. */
export function toolEntry(tools: ToolEntry[], name: string): ToolEntry | undefined {
  return tools.find((t) => toolName(t) === name);
}

function str(args: JsonObject, key: string, required: true): string;
function str(args: JsonObject, key: string, required: false): string | undefined;
function str(args: JsonObject, key: string, required: boolean): string | undefined {
  const v = args[key];
  if (v === undefined && !required) return undefined;
  if (typeof v !== "string") throw new ToolInputError(`argument "${key}" must be a string`);
  return v;
}

function cap(text: Buffer, limit: number): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text: text.toString("utf8"), truncated: false };
  return { text: text.subarray(0, limit).toString("utf8") + `\n[truncated at ${limit} bytes]`, truncated: true };
}

/** Executes an allowed call of a built-in tool; throws ToolInputError/ConfinementError/CommandRefused for the model. */
export async function runBuiltin(
  name: string,
  args: JsonObject,
  ctx: { entry: ToolEntry; confinement: Confinement; limits: BuiltinLimits; env: NodeJS.ProcessEnv },
): Promise<string> {
  switch (name) {
    case "cmd.run":
      return runCommand(args, ctx);
    case "fs.read": {
      const real = await ctx.confinement.forRead(str(args, "path", true));
      const fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        if (!(await fh.stat()).isFile()) throw new ToolInputError(`"${str(args, "path", true)}" is not a file`);
        const buf = Buffer.alloc(ctx.limits.outputCapBytes + 1);
        const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
        return cap(buf.subarray(0, bytesRead), ctx.limits.outputCapBytes).text;
      } finally {
        await fh.close();
      }
    }
    case "fs.write": {
      const content = str(args, "content", true);
      const append = args.append === true;
      const real = await ctx.confinement.forWrite(str(args, "path", true));
      // O_NOFOLLOW: the resolved path itself must not have become a symlink meanwhile.
      const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | (append ? constants.O_APPEND : constants.O_TRUNC);
      const fh = await open(real, flags, 0o644);
      try {
        await fh.writeFile(content, "utf8");
      } finally {
        await fh.close();
      }
      return JSON.stringify({ path: str(args, "path", true), bytes: Buffer.byteLength(content), appended: append });
    }
    case "fs.list": {
      const real = await ctx.confinement.forRead(str(args, "path", true));
      const entries = await readdir(real, { withFileTypes: true });
      const out = [];
      for (const e of entries.slice(0, 1000)) {
        const type = e.isDirectory() ? "dir" : e.isSymbolicLink() ? "symlink" : e.isFile() ? "file" : "other";
        const size = type === "file" ? (await lstat(join(real, e.name)).catch(() => undefined))?.size : undefined;
        out.push({ name: e.name, type, ...(size !== undefined ? { size } : {}) });
      }
      out.sort((a, b) => (a.name < b.name ? -1 : 1));
      return JSON.stringify({ path: str(args, "path", true), entries: out, ...(entries.length > 1000 ? { truncated: true } : {}) });
    }
    default:
      throw new ToolInputError(`tool "${name}" is not a built-in tool this worker can execute`);
  }
}

async function runCommand(
  args: JsonObject,
  ctx: { entry: ToolEntry; confinement: Confinement; limits: BuiltinLimits; env: NodeJS.ProcessEnv },
): Promise<string> {
  const allowlist = typeof ctx.entry === "string" ? undefined : ctx.entry.allowlist;
  const argv = parseAllowedCommand(str(args, "command", true), allowlist);
  const cwdArg = str(args, "cwd", false);
  const cwd = cwdArg !== undefined ? await ctx.confinement.forRead(cwdArg) : ctx.confinement.home;
  const asked = args.timeout_seconds;
  const timeoutS =
    typeof asked === "number" && asked > 0 ? Math.min(asked, ctx.limits.commandTimeoutSeconds) : ctx.limits.commandTimeoutSeconds;
  const limit = ctx.limits.outputCapBytes;
  const [file, ...rest] = argv as [string, ...string[]];
  return new Promise((resolve) => {
    // detached: the command gets its own process group, so a timeout kills all of it.
    const child = spawn(file, rest, { cwd, env: ctx.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outLen = 0;
    let errLen = 0;
    let timedOut = false;
    child.stdout.on("data", (d: Buffer) => {
      if (outLen <= limit) out.push(d);
      outLen += d.length;
    });
    child.stderr.on("data", (d: Buffer) => {
      if (errLen <= limit) err.push(d);
      errLen += d.length;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutS * 1000);
    const finish = (code: number, spawnError?: string) => {
      clearTimeout(timer);
      const stdout = cap(Buffer.concat(out), limit);
      const stderr = cap(Buffer.concat(err), limit);
      resolve(
        JSON.stringify({
          exit_code: code,
          stdout: stdout.text,
          stderr: spawnError ?? stderr.text,
          ...(timedOut ? { timed_out: true, timeout_seconds: timeoutS } : {}),
          ...(stdout.truncated || stderr.truncated ? { truncated: true } : {}),
        }),
      );
    };
    child.once("error", (e) => finish(127, `cannot run "${file}": ${e.message}`));
    child.once("close", (code, signal) => finish(code ?? (signal !== null ? 128 + 9 : 1)));
  });
}
