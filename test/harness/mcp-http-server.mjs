#!/usr/bin/env node
// A real Streamable HTTP MCP server (the official SDK's server and transport, stateless: one
// server per request), for the tests of an Agent's remote MCP server (`url`, a bearer token
// from a Secret key): it answers only requests carrying `Authorization: Bearer
// $MCP_TOKEN` (401 otherwise), lists one tool, `echo` ({text}), and appends "<method> [<tool>]"
// to $MCP_LOG (when set) for each request it accepts, so a test sees what reached it.
// Usage: MCP_TOKEN=... node mcp-http-server.mjs HOST PORT   (PORT 0: any; prints "listening <port>")
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [host = "127.0.0.1", port = "0"] = process.argv.slice(2);
const token = process.env.MCP_TOKEN ?? "";
const log = process.env.MCP_LOG;
const note = (line) => log !== undefined && appendFileSync(log, `${line}\n`);
const echo = { name: "echo", description: "Echoes its text.", inputSchema: { type: "object", properties: { text: { type: "string" } } } };

const http = createServer((req, res) => {
  if (token === "" || req.headers.authorization !== `Bearer ${token}`) {
    note(`refused ${req.method}`);
    res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
    return;
  }
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const message = body === "" ? undefined : JSON.parse(body);
    if (message?.method !== undefined) note(`${message.method}${message.method === "tools/call" ? ` ${message.params?.name ?? ""}` : ""}`);
    const server = new Server({ name: "gavel-test-http", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [echo] }));
    server.setRequestHandler(CallToolRequestSchema, (r) => ({
      content: [{ type: "text", text: `echo: ${r.params.arguments?.text ?? ""}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => void transport.close().then(() => server.close()));
    void server.connect(transport).then(() => transport.handleRequest(req, res, message));
  });
});
http.listen(Number(port), host, () => process.stdout.write(`listening ${http.address().port}\n`));
