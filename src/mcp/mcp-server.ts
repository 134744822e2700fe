// One MCP server of an Agent (ADR 0051): a stdio child of the worker runtime, a remote url, or
// a server container beside the worker in its pod (ADR 0066), started and initialized within a
// deadline, its tools listed, each call bounded by a
// deadline. A crash, malformed JSON-RPC or an oversized message ends the calls in flight at
// once with an error naming the server and the tool, and the server stays down.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ToolListChangedNotificationSchema, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerSpec } from "../api/types.js";
import { Backoff } from "../backoff.js";
import { messageOf } from "../errors.js";
import { gavelVersion } from "../version.js";
import { mcpConnection } from "./mcp-transport.js";

/** An MCP server failed: it did not start, crashed, answered out of protocol, or a call ran past its deadline. */
export class McpServerError extends Error {
  override readonly name = "McpServerError";
  constructor(
    readonly server: string,
    message: string,
    readonly tool?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface McpServerOptions {
  /** Environment of the server process (the worker's, without gavel's variables and secrets). */
  env: Record<string, string>;
  cwd?: string;
  /** Largest JSON-RPC message accepted from the server, in bytes; past it the server is closed. */
  maxMessageBytes: number;
  /** A url server's bearer token. */
  token?: string;
  /** Called when the server says its tool list changed. */
  onToolsChanged?: () => void;
  log?: (event: Record<string, unknown>) => void;
}

const DEFAULT_CALL_TIMEOUT_S = 60;
const DEFAULT_STARTUP_TIMEOUT_S = 30;
/** Lines of a server's stderr kept for its error messages. */
const STDERR_LINES = 20;

/** A started MCP server: list its tools, call them, close it. */
export class McpServer {
  private down: string | undefined;
  private readonly inflight = new Set<AbortController>();
  private readonly stderrTail: string[] = [];

  private constructor(
    readonly spec: McpServerSpec,
    private readonly client: Client,
  ) {}

  /**
   * Starts the server and runs initialize within its startup deadline; throws McpServerError
   * naming it. An image server is a container the kubelet started just before the worker, so
   * it may not listen yet: a refused connection is tried again until the deadline (ADR 0066).
   */
  static async start(spec: McpServerSpec, o: McpServerOptions): Promise<McpServer> {
    const deadline = Date.now() + (spec.startup_timeout_seconds ?? DEFAULT_STARTUP_TIMEOUT_S) * 1000;
    const backoff = new Backoff({ initialMs: 100, maxMs: 1000 });
    for (;;) {
      try {
        return await McpServer.startOnce(spec, o, Math.max(1, deadline - Date.now()));
      } catch (err) {
        if (spec.image === undefined || !refused(err) || !(await backoff.wait({ deadline }))) throw err;
      }
    }
  }

  private static async startOnce(spec: McpServerSpec, o: McpServerOptions, timeoutMs: number): Promise<McpServer> {
    let connection;
    try {
      connection = mcpConnection(spec, o);
    } catch (err) {
      throw new McpServerError(spec.name, messageOf(err), undefined, { cause: err });
    }
    const { transport, where } = connection;
    const client = new Client({ name: "gavel-agent", version: gavelVersion() }, { capabilities: {} });
    const server = new McpServer(spec, client);
    connection.stderr?.on("data", (d: Buffer) => server.keepStderr(d.toString("utf8")));
    let transportError: unknown;
    client.onerror = (err) => {
      transportError ??= err;
      server.fail(transportFailure(err));
    };
    client.onclose = () => server.fail("exited");
    if (o.onToolsChanged !== undefined) client.setNotificationHandler(ToolListChangedNotificationSchema, () => o.onToolsChanged?.());
    try {
      await client.connect(transport, { timeout: timeoutMs });
    } catch (err) {
      await server.close();
      throw new McpServerError(
        spec.name,
        `MCP server ${spec.name} (${where}) did not start: ${server.down ?? messageOf(err)}${server.stderrNote()}`,
        undefined,
        // The transport's own error says why (a refused connection); the SDK's only that it closed.
        { cause: transportError ?? err },
      );
    }
    o.log?.({ event: "mcp_server_started", server: spec.name, serverInfo: client.getServerVersion() });
    return server;
  }

  /** Every tool the server lists (all pages), within the startup deadline. */
  async listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    const deadline = Date.now() + (this.spec.startup_timeout_seconds ?? DEFAULT_STARTUP_TIMEOUT_S) * 1000;
    do {
      this.throwIfDown();
      try {
        const page = await this.client.listTools(cursor !== undefined ? { cursor } : {}, { timeout: Math.max(1, deadline - Date.now()) });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } catch (err) {
        throw new McpServerError(
          this.spec.name,
          `MCP server ${this.spec.name}: tools/list failed: ${this.down ?? messageOf(err)}${this.stderrNote()}`,
          undefined,
          { cause: err },
        );
      }
      if (tools.length > 1024) throw new McpServerError(this.spec.name, `MCP server ${this.spec.name} lists more than 1024 tools`);
    } while (cursor !== undefined);
    return tools;
  }

  /** Calls a tool (the server's own name) within the server's call deadline; throws McpServerError naming server and tool. */
  async call(tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
    this.throwIfDown(tool);
    const abort = new AbortController();
    this.inflight.add(abort);
    const timeoutS = this.spec.timeout_seconds ?? DEFAULT_CALL_TIMEOUT_S;
    try {
      return (await this.client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: timeoutS * 1000,
        maxTotalTimeout: timeoutS * 1000,
        signal: abort.signal,
      })) as CallToolResult;
    } catch (err) {
      const timedOut = /timed out|timeout/i.test(messageOf(err)) && this.down === undefined;
      // A server that hung past the deadline is not trusted with another call: it is closed.
      if (timedOut) this.fail(`did not answer ${tool} within ${timeoutS} s`);
      throw new McpServerError(
        this.spec.name,
        `MCP tool ${this.spec.name}.${tool}: ${this.down ?? messageOf(err)}${this.stderrNote()}`,
        tool,
        { cause: err },
      );
    } finally {
      this.inflight.delete(abort);
    }
  }

  /** Why the server is down, or undefined while it runs. */
  get failure(): string | undefined {
    return this.down;
  }

  /** Stops the server process (the SDK ends it with SIGTERM, then SIGKILL). */
  async close(): Promise<void> {
    await this.client.close().catch(() => undefined);
  }

  /** Marks the server down for good and ends every call in flight with the reason. */
  private fail(why: string): void {
    if (this.down !== undefined) return;
    this.down = `MCP server ${this.spec.name} ${why}`;
    for (const a of this.inflight) a.abort(new Error(this.down));
    void this.close();
  }

  private throwIfDown(tool?: string): void {
    if (this.down !== undefined)
      throw new McpServerError(
        this.spec.name,
        `${tool !== undefined ? `MCP tool ${this.spec.name}.${tool}: ` : ""}${this.down}${this.stderrNote()}`,
        tool,
      );
  }

  private keepStderr(text: string): void {
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      this.stderrTail.push(line.slice(0, 500));
      if (this.stderrTail.length > STDERR_LINES) this.stderrTail.shift();
    }
  }

  private stderrNote(): string {
    return this.stderrTail.length === 0 ? "" : ` (its stderr: ${this.stderrTail.slice(-3).join(" | ")})`;
  }
}

/** The system error code (ECONNREFUSED, UND_ERR_SOCKET, ...) in an error's cause chain, if any. */
function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; typeof e === "object" && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

/** Whether a start failed because nothing listened at the server's address yet (connection refused). */
function refused(err: unknown): boolean {
  return networkCode(err) === "ECONNREFUSED";
}

/** Why the server is down after its transport failed: a lost connection (an HTTP server gone) or an answer out of protocol. */
function transportFailure(err: unknown): string {
  const code = networkCode(err);
  if (code !== undefined) return `lost its connection: ${messageOf(err)} (${code})`;
  // The SDK's HTTP client reports a stream cut mid-answer as a new Error holding only the text.
  if (/SSE stream disconnected|fetch failed|terminated|socket hang up/i.test(messageOf(err)))
    return `lost its connection: ${messageOf(err)}`;
  return `answered out of protocol: ${messageOf(err)}`;
}
