// MCP tools at the gate (ADR 0051): the `<server>.<tool>` names, the pinning digest of a
// tool's listing (guard check 2's live hash for it), and what the operators' GuardPolicy
// MCP-server declarations say about a tool (skip_judge, required capability, trust).
import { createHash } from "node:crypto";
import type { McpToolAnnotations, McpToolDescriptor } from "../api/protocol.js";
import type { JsonValue, McpToolCapability } from "../api/types.js";

/** One server's declaration, compiled: whether its annotations are trusted, and per tool (or `*`) what operators declared. */
export interface McpServerDeclaration {
  trusted: boolean;
  capabilities: ReadonlyMap<string, McpToolCapability>;
  /** The policy that declared it. */
  from: string;
}

/** The `<server>.<tool>` name of an MCP tool. */
export function mcpToolName(server: string, tool: string): string {
  return `${server}.${tool}`;
}

/** The server and the server's own tool name of a `<server>.<tool>` name (the server has no dot). */
export function splitMcpToolName(name: string): { server: string; tool: string } | undefined {
  const dot = name.indexOf(".");
  if (dot <= 0 || dot === name.length - 1) return undefined;
  return { server: name.slice(0, dot), tool: name.slice(dot + 1) };
}

/** JSON with object keys sorted at every depth: the same listing always hashes the same. */
function canonicalJson(v: JsonValue | undefined): string {
  if (v === undefined) return "null";
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => canonicalJson(x)).join(",")}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(",")}}`;
}

/**
 * The pinning digest of an MCP tool: hex SHA-256 of the canonical JSON of its name,
 * description and input schema (annotations are hints and left out). A `tool_registry`
 * entry for `<server>.<tool>` with this sha256 pins the tool (guard check 2).
 */
export function mcpToolDigest(t: Pick<McpToolDescriptor, "tool" | "description" | "inputSchema">): string {
  const text = canonicalJson({ name: t.tool, description: t.description ?? "", inputSchema: t.inputSchema });
  return createHash("sha256").update(text).digest("hex");
}

/** What the operators declared for a `<server>.<tool>` tool: its own entry, else the server's `*`. */
export function mcpDeclaration(
  servers: ReadonlyMap<string, McpServerDeclaration> | undefined,
  name: string,
): { server: McpServerDeclaration; tool?: McpToolCapability } | undefined {
  const parts = splitMcpToolName(name);
  const server = parts === undefined ? undefined : servers?.get(parts.server);
  if (server === undefined || parts === undefined) return undefined;
  const tool = server.capabilities.get(parts.tool) ?? server.capabilities.get("*");
  return { server, ...(tool !== undefined ? { tool } : {}) };
}

/** A trusted server's own claim that a tool only reads: readOnlyHint true and destructiveHint not true. */
export function claimsReadOnly(a: McpToolAnnotations | undefined): boolean {
  return a?.readOnlyHint === true && a.destructiveHint !== true;
}

/**
 * skip_judge from the MCP-server declarations (after the policy's map and the built-in table):
 * the declared value, else for a trusted server its annotations, else undefined (judged).
 */
export function mcpSkipJudge(
  servers: ReadonlyMap<string, McpServerDeclaration> | undefined,
  name: string,
  descriptor: McpToolDescriptor | undefined,
): boolean | undefined {
  const d = mcpDeclaration(servers, name);
  if (d === undefined) return undefined;
  if (d.tool?.skip_judge !== undefined) return d.tool.skip_judge;
  if (d.server.trusted && descriptor !== undefined && claimsReadOnly(descriptor.annotations)) return true;
  return undefined;
}
