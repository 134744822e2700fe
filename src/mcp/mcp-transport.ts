// How the worker runtime reaches one MCP server of its Agent (ADR 0051, 0059, 0066): a stdio
// child process of its own (`command`), a remote Streamable HTTP server (`url`) with the
// bearer token the pod's environment holds (from a Secret key; never logged or passed on), or
// the Streamable HTTP server container (`image`) beside it on the pod's loopback.
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Stream } from "node:stream";
import { DEFAULT_MCP_IMAGE_PATH } from "../api/mcp-schema.js";
import type { McpServerSpec } from "../api/types.js";

export interface McpTransportOptions {
  /** Environment of a stdio server process (the worker's, without gavel's variables and secrets). */
  env: Record<string, string>;
  cwd?: string;
  /** Largest JSON-RPC message accepted from a stdio server, in bytes. */
  maxMessageBytes: number;
  /** The bearer token of a `url` server that declares one. */
  token?: string;
}

/** The transport of one server, and its stderr when it is a child process. */
export interface McpConnection {
  transport: Transport;
  stderr?: Stream | null;
  /** What the server is, for error messages: its command line or its URL (never the token). */
  where: string;
}

/** Where an image server serves: its port and path on the pod's loopback, which every container of the pod shares. */
export function imageServerUrl(spec: McpServerSpec): string {
  return `http://127.0.0.1:${spec.port ?? 0}${spec.path ?? DEFAULT_MCP_IMAGE_PATH}`;
}

/** A stdio transport for a `command` server, a Streamable HTTP one for a `url` or `image` server. */
export function mcpConnection(spec: McpServerSpec, o: McpTransportOptions): McpConnection {
  if (spec.image !== undefined) {
    const url = imageServerUrl(spec);
    return { transport: new StreamableHTTPClientTransport(new URL(url)), where: `${spec.image} at ${url}` };
  }
  if (spec.url !== undefined) {
    const headers: Record<string, string> = o.token !== undefined ? { authorization: `Bearer ${o.token}` } : {};
    return { transport: new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers } }), where: spec.url };
  }
  const [command, ...args] = spec.command ?? [];
  if (command === undefined) throw new Error(`MCP server ${spec.name}: command is empty`);
  const transport = new StdioClientTransport({
    command,
    args,
    env: o.env,
    stderr: "pipe",
    maxBufferSize: o.maxMessageBytes,
    ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
  });
  return { transport, stderr: transport.stderr, where: (spec.command ?? []).join(" ") };
}
