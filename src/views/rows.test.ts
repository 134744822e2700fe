// gavel get's columns for MCP (an Agent's servers and their form, an Execution's calls per server) and for approvals.
import { describe, expect, it } from "vitest";
import type { Agent, Execution, ToolApproval } from "../api/types.js";
import { approvalOrder, cells, columns, mcpCallsCell } from "./rows.js";
import { AGENTS, EXECUTIONS, TOOL_APPROVALS } from "./resources.js";

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

describe("gavel get approvals", () => {
  const approval = (name: string, phase: string | undefined, deadline: string, createdAt = created) =>
    ({
      apiVersion: "100monkeys.ai/v1",
      kind: "ToolApproval",
      metadata: { name, creationTimestamp: createdAt },
      spec: {
        execution: "run",
        toolCallId: "i1-s1-x",
        iteration: 1,
        step: 1,
        tool: "fs.write",
        digest: `sha256:0123456789ab${"c".repeat(52)}`,
        trigger: "always",
        deadline,
        onTimeout: "deny",
      },
      ...(phase !== undefined
        ? { status: { phase, ...(phase === "Approved" ? { decision: { approved: true, decidedBy: "alice", digest: "x" } } : {}) } }
        : {}),
    }) as ToolApproval;

  it("shows where each stands, its execution, tool, digest prefix and the deadline from now; -o wide why and who", () => {
    expect(columns(TOOL_APPROVALS, false)).toEqual(["NAME", "PHASE", "AGE", "EXECUTION", "TOOL", "DIGEST", "DEADLINE"]);
    expect(cells(TOOL_APPROVALS, approval("a", "Pending", "2026-01-01T00:14:00Z"), false, now)).toEqual([
      "a",
      "Pending",
      "10m",
      "run",
      "fs.write",
      "0123456789ab",
      "in 4m",
    ]);
    expect(cells(TOOL_APPROVALS, approval("b", undefined, "2026-01-01T00:09:00Z"), false, now)[6]).toBe("expired");
    expect(cells(TOOL_APPROVALS, approval("c", "Approved", "2026-01-01T00:14:00Z"), true, now).slice(6)).toEqual([
      "",
      "always",
      "alice",
      "",
    ]);
  });

  it("lists pending approvals first, the nearest deadline first, then the ended ones newest first", () => {
    const order = approvalOrder([
      approval("old-done", "Denied", "2026-01-01T00:01:00Z", "2026-01-01T00:00:00Z"),
      approval("later", "Pending", "2026-01-01T00:20:00Z"),
      approval("new-done", "Approved", "2026-01-01T00:09:00Z", "2026-01-01T00:05:00Z"),
      approval("sooner", undefined, "2026-01-01T00:12:00Z"),
    ]).map((a) => a.metadata.name);
    expect(order).toEqual(["sooner", "later", "new-done", "old-done"]);
  });
});
