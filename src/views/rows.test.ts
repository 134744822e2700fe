// gavel get's columns for MCP: an Agent's servers and their form, an Execution's calls per server.
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { cells, columns, mcpCallsCell } from "./rows.js";
import { AGENTS, EXECUTIONS } from "./resources.js";

const now = Date.parse("2026-01-01T00:10:00Z");
const created = "2026-01-01T00:00:00Z";

describe("MCP columns of gavel get -o wide", () => {
  it("an Execution's decided calls per MCP server (calls/blocked); built-in calls are not counted", () => {
    const ex = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name: "run", creationTimestamp: created },
      spec: { agentRef: { name: "w" } },
      status: {
        phase: "Succeeded",
        iterations: [
          {
            number: 1,
            phase: "Passed",
            toolCalls: {
              proposed: 4,
              allowed: 2,
              blockedByGuard: 2,
              blockedByJudge: 0,
              recent: [
                { step: 1, tool: "fs.read", toolCallId: "a", allowed: false, blockedBy: "guard" },
                { step: 2, tool: "files.read_text_file", server: "files", toolCallId: "b", allowed: false, blockedBy: "guard" },
                { step: 3, tool: "files.write_file", server: "files", toolCallId: "c", allowed: true, blockedBy: "none" },
                { step: 4, tool: "remote.echo", server: "remote", toolCallId: "d", allowed: true, blockedBy: "none" },
              ],
            },
          },
        ],
      },
    } as unknown as Execution;
    expect(mcpCallsCell(ex)).toBe("files:2/1,remote:1/0");
    const head = columns(EXECUTIONS, true);
    expect(cells(EXECUTIONS, ex, true, now)[head.indexOf("MCP-CALLS")]).toBe("files:2/1,remote:1/0");
    expect(mcpCallsCell({ ...ex, status: {} } as Execution)).toBe("");
  });

  it("an Agent's MCP servers with their form", () => {
    const a = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "w", creationTimestamp: created },
      spec: {
        mcp_servers: [
          { name: "files", command: ["x"] },
          { name: "remote", url: "https://h/mcp" },
          { name: "everything", image: "gavel/mcp-everything:dev", port: 3001 },
        ],
      },
    } as unknown as Agent;
    const head = columns(AGENTS, true);
    expect(cells(AGENTS, a, true, now)[head.indexOf("MCP-SERVERS")]).toBe("files(stdio),remote(url),everything(image)");
    expect(cells(AGENTS, { ...a, spec: {} } as Agent, true, now)[head.indexOf("MCP-SERVERS")]).toBe("<none>");
    expect(columns(AGENTS, false)).not.toContain("MCP-SERVERS");
  });
});
