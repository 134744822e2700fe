// The in-pod MCP endpoint through the official SDK's Streamable HTTP client, with the real
// gate (in process) and the official filesystem server behind it: tools listed, a secret read
// denied as an isError result with the decision, an allowed read returned, nothing run
// without a decision, and the header rules (Host, Origin, MCP-Protocol-Version) held.
import { access, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, JsonObject } from "../api/types.js";
import { BUILTIN_TOOLS, DEFAULT_LIMITS, runBuiltin } from "../agent/builtin-tools.js";
import { Confinement } from "../agent/confinement.js";
import { createGate } from "../gate/gate.js";
import { compilePolicy } from "../gate/guard/policy.js";
import { startMcpEndpoint, type McpEndpoint } from "./mcp-endpoint.js";
import { McpToolbox } from "./mcp-toolbox.js";

const FS_SERVER = join(import.meta.dirname, "../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

describe("the in-pod MCP endpoint", () => {
  let ws: string;
  let box: McpToolbox;
  let endpoint: McpEndpoint;
  let gateDown = false;
  const seen: ToolCallProposal[] = [];
  let client: Client;

  beforeAll(async () => {
    ws = await realpath(await mkdtemp(join(tmpdir(), "gavel-mcp-endpoint-")));
    await writeFile(join(ws, ".env"), "SECRET_TOKEN=not-a-real-one\n");
    await writeFile(join(ws, "notes.md"), "status: done\n");
    const agent: Pick<Agent, "spec"> = {
      spec: { tools: ["fs.read"], mcp_servers: [{ name: "files", command: ["x"] }], volumes: [{ name: "ws", mount_path: ws }] },
    };
    const gate = createGate({
      policyStore: { get: () => compilePolicy([]) },
      agent,
      judgeRunner: () => Promise.reject(new Error("no judges")),
    });
    box = await McpToolbox.start([{ name: "files", command: [process.execPath, FS_SERVER, ws], tools: ["read_text_file", "write_file"] }], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      outputCapBytes: 65536,
      reserved: Object.keys(BUILTIN_TOOLS),
    });
    const confinement = await Confinement.of([{ path: ws, readOnly: false }]);
    endpoint = await startMcpEndpoint({
      identity: { namespace: "default", execution: "e1", iteration: 1 },
      gate: {
        propose(p): Promise<ToolCallDecision> {
          seen.push(p);
          if (gateDown) return Promise.reject(new Error("no decision for tool call within 330000 ms"));
          const o = gate.decide(p, { iteration: { calls: () => [], violations: [] } });
          return "judged" in o ? o.judged() : Promise.resolve(o);
        },
      },
      builtins: {
        tools: [BUILTIN_TOOLS["fs.read"] as (typeof BUILTIN_TOOLS)[string]],
        run: (name, args) => runBuiltin(name, args, { entry: name, confinement, limits: DEFAULT_LIMITS, env: {} }),
      },
      mcp: box,
      port: 0,
    });
    client = new Client({ name: "a-foreign-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await endpoint?.close();
    await box?.close();
    await rm(ws, { recursive: true, force: true });
  });

  it("negotiates the latest revision and lists the built-in and the MCP servers' tools", async () => {
    expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["fs.read", "files.read_text_file", "files.write_file"]);
    expect(tools[1]?.annotations).toMatchObject({ readOnlyHint: true });
  });

  it("denies a secret read through the MCP tool and through fs.read with isError and the decision; returns an allowed read", async () => {
    for (const name of ["files.read_text_file", "fs.read"]) {
      const r = await client.callTool({ name, arguments: { path: join(ws, ".env") } });
      expect(r.isError, name).toBe(true);
      expect(r.structuredContent).toMatchObject({
        denied: true,
        tool: name,
        blocked_by: "guard",
        check: "destructive_pattern",
        reason: "secrets: reads files: a secret file [path]",
      });
      expect(JSON.stringify(r)).not.toContain("not-a-real-one");
    }
    const ok = await client.callTool({ name: "files.read_text_file", arguments: { path: join(ws, "notes.md") } });
    expect(ok).toMatchObject({ content: [{ type: "text", text: "status: done\n" }] });
    expect(ok.isError).toBeFalsy();
    expect(seen.at(-1)).toMatchObject({
      tool: "files.read_text_file",
      step: 3,
      mcp: { server: "files", tool: "read_text_file", pinned: true },
    });
  });

  it("fails closed when the gate gives no decision: the write never reaches the server", async () => {
    gateDown = true;
    try {
      const r = await client.callTool({ name: "files.write_file", arguments: { path: join(ws, "new.md"), content: "x" } });
      expect(r.isError).toBe(true);
      expect((r.content as { text: string }[])[0]?.text).toMatch(/^Tool call files\.write_file not made: no decision from the gate/);
      await expect(access(join(ws, "new.md"))).rejects.toThrow();
    } finally {
      gateDown = false;
    }
  });

  it("refuses a foreign Host or Origin, an unknown protocol revision, and a request without a session", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    };
    const post = (headers: Record<string, string>, body: JsonObject = init) =>
      fetch(endpoint.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(body),
      });
    expect((await post({ origin: "http://evil.example" })).status).toBe(403);
    const port = new URL(endpoint.url).port;
    const hostile = await new Promise<number>((resolve, reject) => {
      // fetch will not send another Host: a raw request does, as a rebinding browser would.
      import("node:http").then(({ request }) => {
        const r = request(
          {
            host: "127.0.0.1",
            port,
            path: "/mcp",
            method: "POST",
            headers: { host: `evil.example:${port}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
          },
          (res) => resolve(res.statusCode ?? 0),
        );
        r.on("error", reject);
        r.end(JSON.stringify(init));
      }, reject);
    });
    expect(hostile).toBe(403);
    const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
    expect((await post({}, list)).status).toBe(400);
    expect((await post({ "mcp-session-id": "nope" }, list)).status).toBe(404);
    const started = await post({});
    expect(started.status).toBe(200);
    const sid = started.headers.get("mcp-session-id") ?? "";
    expect((await post({ "mcp-session-id": sid, "mcp-protocol-version": "1999-01-01" }, list)).status).toBe(400);
  });
});
