// The in-pod MCP endpoint as the sidecar runs it (ADR 0061): the worker runtime as a real
// process in endpoint mode, with a worker's NATS credential, the real gate deciding over a real
// nats-server, and the reference server server-everything (npm) as an Agent MCP server. An
// agent on the official SDK's client lists the built-in and MCP tools, gets an allowed call's
// result as the server made it, a secret read denied as an isError result with the decision,
// and no call runs once the gate cannot be reached; SIGTERM (the kubelet's stop) exits 0.
import { access, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAgent, type AgentBuild } from "../harness/agent-build.js";
import { mcpConformanceKit, startEndpointProcess, startGatedNats, type EndpointProcess, type GatedNats } from "../harness/mcp-endpoint.js";

describe("the in-pod MCP endpoint process (real gate over real NATS, server-everything behind it)", () => {
  let build: AgentBuild;
  let nats: GatedNats;
  let endpoint: EndpointProcess;
  let client: Client;
  let ws: string;

  beforeAll(async () => {
    const kit = await mcpConformanceKit();
    build = await buildAgent("mcp-endpoint");
    ws = await realpath(await mkdtemp(join(tmpdir(), "gavel-mcp-endpoint-ws-")));
    await writeFile(join(ws, ".env"), "SECRET_TOKEN=not-a-real-one\n");
    await writeFile(join(ws, "notes.md"), "status: done\n");
    const mcpServers = [{ name: "everything", command: ["node", kit.everything, "stdio"], tools: ["echo", "get-sum", "get-tiny-image"] }];
    const spec = { tools: ["fs.read", "fs.write"], mcp_servers: mcpServers, volumes: [{ name: "ws", mount_path: ws }] };
    nats = await startGatedNats({ spec });
    // A short gate budget: the unreachable case below waits for it.
    endpoint = await startEndpointProcess(build, {
      nats,
      namespace: "team",
      execution: "py-1",
      tools: spec.tools,
      mcpServers,
      mounts: [ws],
      env: { GAVEL_GATE_TIMEOUT_SECONDS: "4" },
    });
    client = new Client({ name: "a-foreign-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
  }, 600_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await endpoint?.stop();
    await nats?.stop();
    await build?.remove();
    if (ws !== undefined) await rm(ws, { recursive: true, force: true });
  });

  it("lists the built-in tools of spec.tools and the server's offered tools under <server>.<tool>", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["fs.read", "fs.write", "everything.echo", "everything.get-sum", "everything.get-tiny-image"]);
  });

  it("returns an allowed call's result as the server made it (an image too), after the gate decided it under the worker's identity", async () => {
    const r = await client.callTool({ name: "everything.get-sum", arguments: { a: 2, b: 40 } });
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: "text", text: "The sum of 2 and 40 is 42." }]);
    const image = await client.callTool({ name: "everything.get-tiny-image", arguments: {} });
    expect((image.content as { type: string; mimeType?: string }[]).map((c) => [c.type, c.mimeType])).toContainEqual([
      "image",
      "image/png",
    ]);
    const echoed = await client.callTool({ name: "everything.echo", arguments: { message: "hello through the gate" } });
    expect(echoed.content).toEqual([{ type: "text", text: "Echo: hello through the gate" }]);
    expect(nats.proposals.map((p) => [p.namespace, p.execution, p.tool, p.mcp?.server, p.mcp?.pinned])).toEqual([
      ["team", "py-1", "everything.get-sum", "everything", true],
      ["team", "py-1", "everything.get-tiny-image", "everything", true],
      ["team", "py-1", "everything.echo", "everything", true],
    ]);
  });

  it("denies a secret read as an isError tool result with the decision; runs an allowed read and write of the worker's files", async () => {
    const denied = await client.callTool({ name: "fs.read", arguments: { path: join(ws, ".env") } });
    expect(denied.isError).toBe(true);
    expect(denied.structuredContent).toMatchObject({
      denied: true,
      tool: "fs.read",
      blocked_by: "guard",
      check: "destructive_pattern",
      reason: "secrets: reads files: a secret file [path]",
    });
    expect(JSON.stringify(denied)).not.toContain("not-a-real-one");
    const read = await client.callTool({ name: "fs.read", arguments: { path: join(ws, "notes.md") } });
    expect(read.content).toEqual([{ type: "text", text: "status: done\n" }]);
    const wrote = await client.callTool({
      name: "fs.write",
      arguments: { path: join(ws, "out.md"), content: "written through the endpoint\n" },
    });
    expect(wrote.isError, JSON.stringify(wrote)).toBeFalsy();
    expect(await readFile(join(ws, "out.md"), "utf8")).toBe("written through the endpoint\n");
    // The built-ins' code is hashed as a worker hashes it (guard check 2 pins it through tool_registry).
    expect(nats.proposals.find((p) => p.tool === "fs.read")?.toolHash).toMatch(/^[0-9a-f]{64}$/);
    // A tool outside the Agent's tools is refused by the gate, not run.
    const outside = await client.callTool({ name: "cmd.run", arguments: { command: "touch /tmp/x" } });
    expect(outside).toMatchObject({ isError: true, structuredContent: { denied: true, blocked_by: "guard", check: "capability" } });
  });

  it("runs nothing without a decision: with the gate gone a write fails closed; SIGTERM then stops the endpoint with exit 0", async () => {
    await nats.stop();
    const r = await client.callTool({ name: "fs.write", arguments: { path: join(ws, "never.md"), content: "x" } });
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r.content)).toContain("no decision from the gate");
    await expect(access(join(ws, "never.md"))).rejects.toThrow();
    await client.close();
    expect(await endpoint.stop()).toBe(0);
  }, 60_000);
});
