// An Agent's MCP servers as one toolbox for the worker runtime (ADR 0051): started together,
// their tools offered under `<server>.<tool>` and pinned as listed at start, each call made
// only after the gate allowed it (the worker loop's job) and its result rendered for the model.
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { McpToolDescriptor } from "../api/protocol.js";
import type { JsonObject, McpServerSpec } from "../api/types.js";
import { messageOf } from "../errors.js";
import { mcpToolDigest, mcpToolName } from "../gate/mcp-tools.js";
import { McpServer, McpServerError } from "./mcp-server.js";
import { resultText } from "./mcp-result.js";

/** An MCP tool as the model is offered it and the gate is told of it. */
export interface McpTool {
  name: string;
  description: string;
  parameters: JsonObject;
  descriptor: McpToolDescriptor;
}

export interface McpToolboxOptions {
  /** Environment of the servers (secrets and gavel's variables removed). */
  env: Record<string, string>;
  cwd?: string;
  /** Bytes of a result kept for the model (the built-in tools' output cap). */
  outputCapBytes: number;
  /** Names no MCP tool may take (the built-in tools'). */
  reserved: readonly string[];
  /** The bearer tokens of url servers, by server name. */
  tokens?: Readonly<Record<string, string>>;
  log?: (event: Record<string, unknown>) => void;
}

/** An MCP tool name as the 2025-11-25 revision recommends it; anything else cannot be a stable `<server>.<tool>`. */
const TOOL_NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
/** Largest JSON-RPC message from a server: a result past it closes the server rather than filling memory. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** The descriptor of a listed tool (untrusted text, sent to the gate as the server's claim). */
function descriptorOf(server: string, t: Tool, pinned: boolean): McpToolDescriptor {
  const a = t.annotations;
  const annotations =
    a === undefined
      ? undefined
      : {
          ...(typeof a.title === "string" ? { title: a.title.slice(0, 1024) } : {}),
          ...(typeof a.readOnlyHint === "boolean" ? { readOnlyHint: a.readOnlyHint } : {}),
          ...(typeof a.destructiveHint === "boolean" ? { destructiveHint: a.destructiveHint } : {}),
          ...(typeof a.idempotentHint === "boolean" ? { idempotentHint: a.idempotentHint } : {}),
          ...(typeof a.openWorldHint === "boolean" ? { openWorldHint: a.openWorldHint } : {}),
        };
  return {
    server,
    tool: t.name,
    ...(t.description !== undefined ? { description: t.description.slice(0, 16384) } : {}),
    inputSchema: t.inputSchema as JsonObject,
    ...(annotations !== undefined ? { annotations } : {}),
    pinned,
  };
}

/** The started MCP servers of one worker run and their tools. */
export class McpToolbox {
  /** Digest of each offered tool as listed at start. */
  private readonly pins = new Map<string, string>();
  /** The latest listing of each server's tools, by `<server>.<tool>` (re-read when a server says its list changed). */
  private readonly listed = new Map<string, McpToolDescriptor>();
  private offered: McpTool[] = [];

  private constructor(
    private readonly servers: Map<string, McpServer>,
    private readonly o: McpToolboxOptions,
  ) {}

  /** Starts every server, lists and checks their tools; on any failure closes them all and throws McpServerError naming the server (and tool). */
  static async start(specs: readonly McpServerSpec[], o: McpToolboxOptions): Promise<McpToolbox> {
    const servers = new Map<string, McpServer>();
    const box = new McpToolbox(servers, o);
    const started = await Promise.allSettled(
      specs.map((spec) =>
        McpServer.start(spec, {
          env: o.env,
          maxMessageBytes: MAX_MESSAGE_BYTES,
          ...(o.tokens?.[spec.name] !== undefined ? { token: o.tokens[spec.name] } : {}),
          onToolsChanged: () => box.relist(spec.name),
          ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
          ...(o.log !== undefined ? { log: o.log } : {}),
        }),
      ),
    );
    for (const r of started) if (r.status === "fulfilled") servers.set(r.value.spec.name, r.value);
    try {
      const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed !== undefined) throw failed.reason;
      for (const spec of specs) box.offer(spec, await (servers.get(spec.name) as McpServer).listTools());
    } catch (err) {
      await box.close();
      throw err instanceof McpServerError ? err : new McpServerError("?", messageOf(err), undefined, { cause: err });
    }
    return box;
  }

  /** The tools offered to the model, as listed at start. */
  tools(): readonly McpTool[] {
    return this.offered;
  }

  /** Whether a tool name is one of the MCP servers' (`<server>.<tool>` of a started server). */
  owns(name: string): boolean {
    const dot = name.indexOf(".");
    return dot > 0 && this.servers.has(name.slice(0, dot));
  }

  /** The tool's latest listing, pinned when its digest is the one listed at start; undefined when its server lists no such tool. */
  descriptor(name: string): McpToolDescriptor | undefined {
    const d = this.listed.get(name);
    if (d === undefined) return undefined;
    return { ...d, pinned: this.pins.get(name) === mcpToolDigest(d) };
  }

  /** Calls an allowed tool; returns the text for the model (a tool error result included); throws McpServerError naming server and tool. */
  async call(name: string, args: JsonObject): Promise<string> {
    return resultText(await this.result(name, args), this.o.outputCapBytes);
  }

  /** Calls an allowed tool; returns the server's result as it is (the in-pod endpoint passes it on to an MCP client); throws McpServerError naming server and tool. */
  async result(name: string, args: JsonObject): Promise<CallToolResult> {
    const d = this.listed.get(name);
    const server = d === undefined ? undefined : this.servers.get(d.server);
    if (d === undefined || server === undefined)
      throw new McpServerError(name.split(".")[0] ?? name, `MCP tool ${name} is not listed by its server`);
    return server.call(d.tool, args);
  }

  /** Stops every server. */
  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.close()));
  }

  /** Checks a server's listing and offers its tools (all, or the Agent's `tools`). */
  private offer(spec: McpServerSpec, tools: Tool[]): void {
    const seen = new Set<string>();
    for (const t of tools) {
      if (!TOOL_NAME_RE.test(t.name))
        throw new McpServerError(
          spec.name,
          `MCP server ${spec.name} lists a tool named ${JSON.stringify(t.name.slice(0, 200))}: tool names must match ${TOOL_NAME_RE.source}`,
          t.name,
        );
      if (seen.has(t.name)) throw new McpServerError(spec.name, `MCP server ${spec.name} lists tool ${t.name} twice`, t.name);
      seen.add(t.name);
    }
    for (const wanted of spec.tools ?? []) {
      if (!seen.has(wanted))
        throw new McpServerError(
          spec.name,
          `MCP server ${spec.name} does not list tool ${wanted} (spec.mcp_servers[${spec.name}].tools; it lists ${[...seen].join(", ") || "none"})`,
          wanted,
        );
    }
    const allowed = spec.tools === undefined ? undefined : new Set(spec.tools);
    for (const t of tools) {
      const name = mcpToolName(spec.name, t.name);
      if (this.o.reserved.includes(name) || this.listed.has(name))
        throw new McpServerError(
          spec.name,
          `MCP tool ${name} collides with ${this.o.reserved.includes(name) ? "a built-in tool" : "another tool"} of that name`,
          t.name,
        );
      const descriptor = descriptorOf(spec.name, t, true);
      this.listed.set(name, descriptor);
      if (allowed !== undefined && !allowed.has(t.name)) continue;
      this.pins.set(name, mcpToolDigest(descriptor));
      this.offered.push({ name, description: descriptor.description ?? "", parameters: descriptor.inputSchema, descriptor });
    }
    this.o.log?.({
      event: "mcp_tools",
      server: spec.name,
      listed: tools.length,
      offered: this.offered.filter((t) => t.descriptor.server === spec.name).map((t) => t.name),
    });
  }

  /** Re-reads a server's listing after its tools/list_changed: new or changed tools are proposed unpinned. */
  private relist(server: string): void {
    const s = this.servers.get(server);
    if (s === undefined) return;
    void s.listTools().then(
      (tools) => {
        for (const key of [...this.listed.keys()]) if (this.listed.get(key)?.server === server) this.listed.delete(key);
        for (const t of tools) if (TOOL_NAME_RE.test(t.name)) this.listed.set(mcpToolName(server, t.name), descriptorOf(server, t, false));
        this.o.log?.({ event: "mcp_tools_changed", server, listed: tools.length });
      },
      (err: unknown) => this.o.log?.({ event: "mcp_relist_failed", server, error: messageOf(err) }),
    );
  }
}
