// The in-pod MCP endpoint for agents gavel did not write (ADR 0051): a Streamable HTTP MCP
// server on 127.0.0.1 serving the built-in tools and the Agent's MCP servers' tools. Every
// tools/call is proposed to the gate first; only an allowed call runs. A denial is a tool
// result with isError and the decision in structuredContent, never a protocol error; a gate
// that cannot be reached fails the call closed.
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  isInitializeRequest,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { JsonObject } from "../api/types.js";
import { messageOf } from "../errors.js";
import { refusalOf, refusalText } from "../gate/refusal.js";
import { gavelVersion } from "../version.js";
import type { McpToolbox } from "./mcp-toolbox.js";

/** The tools the worker runtime runs itself (src/agent/builtin-tools.ts), as a port: the endpoint sits below the agent. */
export interface BuiltinToolRunner {
  tools: readonly { name: string; description: string; parameters: JsonObject }[];
  run(name: string, args: JsonObject): Promise<string>;
  /** The live hash of a built-in's code (guard check 2), as a worker sends it; undefined when not known. */
  hash?(name: string): Promise<string | undefined>;
}

export interface McpEndpointOptions {
  identity: { namespace: string; execution: string; iteration: number };
  gate: { propose(p: ToolCallProposal): Promise<ToolCallDecision> };
  builtins: BuiltinToolRunner;
  mcp?: McpToolbox;
  /** Port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** Sessions held at once; a new one past it closes the least recently used. Default 16. */
  maxSessions?: number;
  log?: (event: Record<string, unknown>) => void;
}

/** A running endpoint: its URL (for the agent's environment) and how to stop it. */
export interface McpEndpoint {
  url: string;
  close(): Promise<void>;
}

/** The body of a POST, parsed; bounded so a client cannot fill memory. */
async function jsonBody(req: IncomingMessage, limit = 4 * 1024 * 1024): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) throw new Error(`request body over ${limit} bytes`);
    chunks.push(c);
  }
  return size === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown);
}

function httpError(res: ServerResponse, status: number, message: string): void {
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/** The tool result of a denial: the refusal (gate/refusal.ts) as text and as structuredContent, the same the worker loop tells. */
export function denialResult(tool: string, d: ToolCallDecision): CallToolResult {
  const refusal = refusalOf(tool, d);
  return { isError: true, content: [{ type: "text", text: refusalText(refusal) }], structuredContent: { ...refusal } };
}

/** The tools served: the built-ins, then the MCP servers' (annotations passed on as the servers' hints). */
function servedTools(o: McpEndpointOptions): Tool[] {
  return [
    ...o.builtins.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters as Tool["inputSchema"] })),
    ...(o.mcp?.tools() ?? []).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.parameters as Tool["inputSchema"],
      ...(t.descriptor.annotations !== undefined ? { annotations: t.descriptor.annotations } : {}),
    })),
  ];
}

/** tools/call: propose, then run only an allowed call; steps count the run's calls in order. */
function toolCaller(o: McpEndpointOptions, tools: Tool[]): (name: string, args: JsonObject) => Promise<CallToolResult> {
  const nonce = randomBytes(4).toString("hex");
  const builtinNames = new Set(o.builtins.tools.map((t) => t.name));
  let step = 0;
  return async (name, args) => {
    const toolCallId = `i${o.identity.iteration}-s${++step}-${nonce}`;
    const listing = o.mcp?.owns(name) === true ? o.mcp.descriptor(name) : undefined;
    const toolHash = listing === undefined && builtinNames.has(name) ? await o.builtins.hash?.(name) : undefined;
    const proposal: ToolCallProposal = {
      ...o.identity,
      step,
      toolCallId,
      tool: name,
      args,
      ...(listing !== undefined ? { mcp: listing } : {}),
      ...(toolHash !== undefined ? { toolHash } : {}),
    };
    let decision: ToolCallDecision;
    try {
      decision = await o.gate.propose(proposal);
    } catch (err) {
      // Fail closed: without a decision nothing runs.
      o.log?.({ event: "gate_error", tool: name, toolCallId, error: messageOf(err) });
      return {
        isError: true,
        content: [{ type: "text", text: `Tool call ${name} not made: no decision from the gate (${messageOf(err)})` }],
      };
    }
    o.log?.({
      event: "tool_call",
      step: proposal.step,
      toolCallId,
      tool: name,
      allowed: decision.allowed,
      blockedBy: decision.blocked_by,
      check: decision.guard.check,
      argKeys: Object.keys(args),
    });
    if (!decision.allowed) return denialResult(name, decision);
    try {
      // The server's result as it is (images, resources, structured content): the agent speaks MCP.
      if (listing !== undefined && o.mcp !== undefined) return await o.mcp.result(name, args);
      if (builtinNames.has(name)) return { content: [{ type: "text", text: await o.builtins.run(name, args) }] };
      return {
        isError: true,
        content: [{ type: "text", text: `Tool ${name} is not available here (${tools.map((t) => t.name).join(", ") || "no tools"})` }],
      };
    } catch (err) {
      return { isError: true, content: [{ type: "text", text: `Error: ${messageOf(err)}` }] };
    }
  };
}

/** The HTTP side: one SDK transport per session (created by initialize), requests routed by Mcp-Session-Id. */
class SessionRouter {
  private readonly transports = new Map<string, StreamableHTTPServerTransport>();
  /** Host and Origin values allowed, set once the port is known. */
  hosts: string[] = [];
  origins: string[] = [];

  constructor(
    private readonly newSession: () => Server,
    private readonly maxSessions: number,
    private readonly log?: (event: Record<string, unknown>) => void,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? "/", "http://127.0.0.1").pathname !== "/mcp") return httpError(res, 404, "the MCP endpoint is /mcp");
    const id = req.headers["mcp-session-id"];
    const existing = typeof id === "string" ? this.transports.get(id) : undefined;
    // Map order is use order: the first entry is the least recently used session.
    if (existing !== undefined && typeof id === "string") {
      this.transports.delete(id);
      this.transports.set(id, existing);
    }
    if (req.method !== "POST") {
      if (existing === undefined)
        return httpError(
          res,
          typeof id === "string" ? 404 : 400,
          typeof id === "string" ? `no session ${id}` : "Mcp-Session-Id header required",
        );
      return existing.handleRequest(req, res);
    }
    const body = await jsonBody(req);
    if (existing !== undefined) return existing.handleRequest(req, res, body);
    if (typeof id === "string") return httpError(res, 404, `no session ${id}`);
    if (!isInitializeRequest(body)) return httpError(res, 400, "no session: the first request must be initialize");
    // A client that never ends its sessions (no DELETE) must not lock the agent out: the least recently used one goes.
    if (this.transports.size >= this.maxSessions) await this.evictOldest();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts: this.hosts,
      allowedOrigins: this.origins,
      onsessioninitialized: (sid) => void this.transports.set(sid, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.transports.delete(transport.sessionId);
    };
    await this.newSession().connect(transport);
    await transport.handleRequest(req, res, body);
  }

  private async evictOldest(): Promise<void> {
    const [sid, oldest] = this.transports.entries().next().value ?? [];
    if (sid === undefined || oldest === undefined) return;
    this.transports.delete(sid);
    this.log?.({ event: "mcp_session_evicted", session: sid, sessions: this.maxSessions });
    await oldest.close().catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.transports.values()].map((t) => t.close().catch(() => undefined)));
  }
}

/** Starts the endpoint on 127.0.0.1 (Host and Origin checked against it: no DNS rebinding). */
export async function startMcpEndpoint(o: McpEndpointOptions): Promise<McpEndpoint> {
  const tools = servedTools(o);
  const call = toolCaller(o, tools);
  const router = new SessionRouter(
    () => {
      const server = new Server({ name: "gavel-gate", version: gavelVersion() }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
      server.setRequestHandler(CallToolRequestSchema, (req) => call(req.params.name, (req.params.arguments ?? {}) as JsonObject));
      return server;
    },
    o.maxSessions ?? 16,
    o.log,
  );
  const http: HttpServer = createServer((req, res) => {
    void router.handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) httpError(res, 400, messageOf(err));
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(o.port, "127.0.0.1", () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  router.hosts.push(`127.0.0.1:${port}`, `localhost:${port}`);
  router.origins.push(`http://127.0.0.1:${port}`, `http://localhost:${port}`);
  const url = `http://127.0.0.1:${port}/mcp`;
  o.log?.({ event: "mcp_endpoint", url, tools: tools.map((t) => t.name) });
  return {
    url,
    async close() {
      await router.closeAll();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
