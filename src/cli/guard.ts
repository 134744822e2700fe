// `gavel guard check`: runs the deterministic guard over one proposed call offline, with the
// same code the gate uses, so operators can test GuardPolicy objects before applying them.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { JsonObject } from "../api/types.js";
import type { compilePolicy } from "../gate/guard.js";
import {
  type AgentScope,
  agentScope,
  callViews,
  findingAction,
  type HistoryEntry,
  isShellTool,
  readCall,
  runGuard,
  type ViewOptions,
  workerViews,
} from "../gate/guard.js";
import { ExitCode, UsageError, type Command } from "./command.js";
import { messageOf } from "../errors.js";
import { checkPolicy, readAgent } from "./manifests.js";

const USAGE = [
  "gavel guard check --tool NAME --args JSON [--agent FILE] [--policy FILE...] [--history JSON] [--step N] [--capabilities a,b] [--live-hash TOOL=SHA256...] [--home DIR] [--explain]",
  "gavel guard tool-hash [TOOL...] | --file PATH... | --mcp-server NAME -- COMMAND [ARG...]",
].join("\n       ");

/** The flags of `guard check`. */
function parseCheckFlags(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tool: { type: "string" },
      args: { type: "string", default: "{}" },
      agent: { type: "string" },
      policy: { type: "string", multiple: true, default: [] },
      history: { type: "string", default: "[]" },
      step: { type: "string" },
      capabilities: { type: "string" },
      "live-hash": { type: "string", multiple: true, default: [] },
      home: { type: "string" },
      explain: { type: "boolean", default: false },
    },
  });
}

type CheckFlags = ReturnType<typeof parseCheckFlags>["values"];

/** The proposed call of `guard check`: tool, arguments (a JSON object), history, step. */
function proposedCall(values: CheckFlags): { tool: string; args: JsonObject; history: HistoryEntry[]; step: number } {
  if (values.tool === undefined || values.tool === "") throw new UsageError("--tool NAME is required");
  const args = parseJson("--args", values.args);
  if (args === null || typeof args !== "object" || Array.isArray(args)) throw new UsageError("--args must be a JSON object");
  const history = parseHistory(parseJson("--history", values.history));
  const step = values.step === undefined ? (history.at(-1)?.step ?? 0) + 1 : Number(values.step);
  if (!Number.isInteger(step) || step < 1) throw new UsageError(`--step must be a positive integer, not "${values.step ?? ""}"`);
  return { tool: values.tool, args: args as JsonObject, history, step };
}

/** The Agent's side of the check: its tools and capabilities (--agent, else the one tool), how its arguments are viewed (--home). */
async function checkScope(values: CheckFlags, tool: string, cwd: string): Promise<{ scope: AgentScope; views: ViewOptions }> {
  let scope: AgentScope;
  let views: ViewOptions = workerViews({ spec: {} });
  if (values.agent !== undefined) {
    const agent = await readAgent(resolve(cwd, values.agent));
    scope = agentScope(agent);
    views = workerViews(agent);
  } else scope = { tools: new Map([[tool, { name: tool }]]), capabilities: new Set<string>() };
  if (values.home !== undefined) {
    if (!values.home.startsWith("/")) throw new UsageError(`--home must be an absolute directory, not "${values.home}"`);
    views = { ...views, home: values.home };
  }
  if (values.capabilities !== undefined)
    scope = {
      tools: scope.tools,
      capabilities: new Set(
        values.capabilities
          .split(",")
          .map((c) => c.trim())
          .filter((c) => c !== ""),
      ),
    };
  return { scope, views };
}

/** --live-hash TOOL=SHA256 pairs. */
function liveHashesOf(pairs: string[]): Map<string, string> {
  const liveHashes = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--live-hash must be TOOL=SHA256, not "${pair}"`);
    liveHashes.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return liveHashes;
}

/** `gavel guard check`: the guard's decision on one proposed call as JSON (exit 0 when approved). */
async function check(argv: string[], io: Parameters<Command["run"]>[1]): Promise<number> {
  const { values, positionals } = parseCheckFlags(argv);
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0] ?? ""}"`);
  const { tool, args, history, step } = proposedCall(values);
  const { scope, views } = await checkScope(values, tool, io.cwd);
  const policy = await checkPolicy(values.policy, io.cwd);
  for (const w of policy.warnings) io.stderr.write(`gavel guard: warning: ${w}\n`);
  const ctx = { policy, scope, history, liveHashes: liveHashesOf(values["live-hash"]), views };
  const d = runGuard({ tool, args, step }, ctx);
  const out = {
    approved: d.approved,
    blocked_by: d.approved ? "none" : "guard",
    check: d.check ?? null,
    reason: d.reason ?? null,
    flags: d.flags ?? [],
    warnings: d.warnings ?? [],
    dryrun: d.dryrun ?? [],
  };
  io.stdout.write(`${JSON.stringify(values.explain ? { ...out, explain: explain(tool, args, ctx) } : out)}\n`);
  return d.approved ? ExitCode.ok : ExitCode.failed;
}

export const guardCommand: Command = {
  name: "guard",
  summary: "evaluate a proposed tool call with the deterministic guard (guard check); print tool code hashes to register (guard tool-hash)",
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === "tool-hash") return toolHash(rest, io);
    if (sub !== "check") throw new UsageError(sub === undefined ? "missing subcommand: check or tool-hash" : `unknown subcommand "${sub}"`);
    return check(rest, io);
  },
};

/**
 * What the effect model read from the call (`--explain`): each command of each command field
 * (or each path argument of another tool) with its effects and their targets, and the threat
 * classes found with the action the policy gives each. The operator's own input, so targets
 * are shown; denial reasons never carry them.
 */
function explain(
  tool: string,
  args: JsonObject,
  ctx: { policy: ReturnType<typeof compilePolicy>; scope: AgentScope; views: ViewOptions },
): unknown {
  const shell = isShellTool(tool, ctx);
  const read = readCall(
    tool,
    args,
    callViews(args, ctx.views, shell),
    { home: ctx.views.home ?? "/root", workspace: ctx.views.cwd ?? "/workspace" },
    shell,
  );
  return {
    home: ctx.views.home,
    cwd: ctx.views.cwd,
    profile: ctx.policy.profile,
    commands: read.commands.map((c) => ({
      key: c.key,
      command: c.command,
      args: c.args,
      effects: c.effects.map((e) => ({
        kind: e.kind,
        what: e.what,
        ...(e.class !== undefined ? { class: e.class } : {}),
        ...(e.targets.length > 0 ? { targets: e.targets } : {}),
      })),
    })),
    findings: read.findings.map((f) => ({ class: f.class, effect: f.what, key: f.key, action: findingAction(f, ctx.policy.threats) })),
  };
}

/**
 * `gavel guard tool-hash`: the SHA-256 of each built-in tool's code in this installation (the
 * same build as the gavel/agent image, whose workers send these hashes with their proposals),
 * or of the given files in order (a tool of one's own); what `tool_registry[].sha256` takes.
 */
async function toolHash(argv: string[], io: Parameters<Command["run"]>[1]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { file: { type: "string", multiple: true, default: [] }, "mcp-server": { type: "string" } },
  });
  if (values["mcp-server"] !== undefined) return mcpDigests(values["mcp-server"], positionals, io);
  // Imported here: `guard check` starts without it (bench/cli-start.ts).
  const { ToolCodeHasher } = await import("../gate/tool-code.js");
  if (values.file.length > 0) {
    if (positionals.length > 0) throw new UsageError("give tool names or --file, not both");
    const hasher = new ToolCodeHasher({ files: values.file.map((f) => resolve(io.cwd, f)) });
    await hasher.refresh();
    const h = hasher.hashes().get("files");
    if (h === undefined) throw new UsageError(`cannot read ${values.file.join(", ")}`);
    io.stdout.write(`${h}\n`);
    return ExitCode.ok;
  }
  // Imported here: the worker runtime's modules are not loaded by `guard check`.
  const { builtinToolFiles } = await import("../agent/builtin-tools.js");
  const files = builtinToolFiles();
  for (const t of positionals)
    if (files[t] === undefined)
      throw new UsageError(`"${t}" is not a built-in tool (${Object.keys(files).join(", ")}); hash its files with --file`);
  const hasher = new ToolCodeHasher(positionals.length > 0 ? Object.fromEntries(positionals.map((t) => [t, files[t] ?? []])) : files);
  await hasher.refresh();
  io.stdout.write(`${JSON.stringify(Object.fromEntries(hasher.hashes()))}\n`);
  return ExitCode.ok;
}

/**
 * `gavel guard tool-hash --mcp-server NAME -- COMMAND...`: starts the stdio MCP server as the
 * worker runtime would, lists its tools and prints each `<NAME>.<tool>`'s pinning digest (ADR
 * 0051), what a `tool_registry` entry for it takes. The server's environment is PATH and HOME only.
 */
async function mcpDigests(server: string, command: string[], io: Parameters<Command["run"]>[1]): Promise<number> {
  if (command.length === 0)
    throw new UsageError(
      "--mcp-server needs the server's command after --, e.g. -- npx @modelcontextprotocol/server-filesystem /workspace",
    );
  const { MCP_SERVER_NAME_PATTERN } = await import("../api/mcp-schema.js");
  if (!new RegExp(MCP_SERVER_NAME_PATTERN).test(server)) throw new UsageError(`--mcp-server must match ${MCP_SERVER_NAME_PATTERN}`);
  // Imported here: only this subcommand starts MCP servers.
  const { McpToolbox } = await import("../mcp/mcp-toolbox.js");
  const { mcpToolDigest } = await import("../gate/mcp-tools.js");
  const env = Object.fromEntries(["PATH", "HOME"].flatMap((k) => (io.env[k] !== undefined ? [[k, io.env[k]]] : [])));
  const box = await McpToolbox.start([{ name: server, command }], { env, cwd: io.cwd, outputCapBytes: 65536, reserved: [] }).catch(
    (err: unknown) => {
      throw new UsageError(messageOf(err));
    },
  );
  try {
    io.stdout.write(`${JSON.stringify(Object.fromEntries(box.tools().map((t) => [t.name, mcpToolDigest(t.descriptor)])))}\n`);
  } finally {
    await box.close();
  }
  return ExitCode.ok;
}

function parseJson(flag: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`${flag} is not valid JSON: ${messageOf(err)}`);
  }
}

/** `--history`: tool names in call order, or `{tool, step}` objects. */
function parseHistory(v: unknown): HistoryEntry[] {
  if (!Array.isArray(v)) throw new UsageError("--history must be a JSON array of tool names or {tool, step} objects");
  return v.map((item: unknown, i) => {
    if (typeof item === "string") return { tool: item, step: i + 1 };
    if (item !== null && typeof item === "object") {
      const o = item as { tool?: unknown; step?: unknown };
      if (typeof o.tool === "string" && Number.isInteger(o.step)) return { tool: o.tool, step: o.step as number };
    }
    throw new UsageError(`--history[${i}] must be a tool name or {tool, step}`);
  });
}
