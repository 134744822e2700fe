#!/usr/bin/env node
// A real stdio MCP server process that misbehaves on purpose, for the tests of src/mcp: it
// speaks newline-delimited JSON-RPC 2.0 (initialize, tools/list, tools/call) and, per the
// mode in argv[2], lists a tool twice or under a bad name, or answers a call by crashing,
// hanging, writing a line that is not JSON-RPC, or a result larger than the client accepts.
// Mode "ok" echoes its arguments. With a LOG file it appends "<pid> <method> [<tool>]" there for
// each request it gets, so a test sees what reached it (and which process to kill).
// Usage: node mcp-fault-server.mjs MODE [LOG]
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const mode = process.argv[2] ?? "ok";
const log = process.argv[3];
const send = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
const tool = (name) => ({ name, description: `the ${name} tool`, inputSchema: { type: "object", properties: { text: { type: "string" } } } });

if (mode === "nostart") {
  process.stderr.write("fault server: refusing to start\n");
  process.exit(3);
}
const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return; // notifications
  if (log !== undefined) appendFileSync(log, `${process.pid} ${m.method}${m.method === "tools/call" ? ` ${m.params?.name ?? ""}` : ""}\n`);
  if (m.method === "initialize") {
    if (mode === "noinit") return; // never answers: the client's startup deadline ends it
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "fault", version: "1.0.0" } } });
  } else if (m.method === "tools/list") {
    const tools = mode === "dup" ? [tool("echo"), tool("echo")] : mode === "badname" ? [tool("echo now!")] : [tool("echo")];
    send({ jsonrpc: "2.0", id: m.id, result: { tools } });
  } else if (m.method === "tools/call") {
    if (mode === "crash") process.exit(7);
    if (mode === "hang") return;
    if (mode === "garbage") {
      process.stdout.write("this is not JSON-RPC\n");
      return;
    }
    if (mode === "huge") {
      send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "x".repeat(5 * 1024 * 1024) }] } });
      return;
    }
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: `echo: ${m.params.arguments?.text ?? ""}` }] } });
  } else {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: `no method ${m.method}` } });
  }
});
