// What the model gets back from an MCP tool call (ADR 0051): the result's content as text,
// capped like a built-in tool's output; an error result says so.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** The text of a CallToolResult: text parts as they are, other parts described, structured content as JSON; capped at `capBytes`. */
export function resultText(result: CallToolResult, capBytes: number): string {
  const parts: string[] = [];
  for (const c of result.content ?? []) {
    if (c.type === "text") parts.push(c.text);
    else if (c.type === "image" || c.type === "audio") parts.push(`[${c.type} ${c.mimeType}, ${c.data.length} base64 chars]`);
    else if (c.type === "resource_link") parts.push(`[resource ${c.uri}]`);
    else if (c.type === "resource")
      parts.push("text" in c.resource && typeof c.resource.text === "string" ? c.resource.text : `[resource ${c.resource.uri}]`);
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  let text = parts.join("\n");
  if (result.isError === true) text = `Error from the tool: ${text}`;
  const bytes = Buffer.byteLength(text);
  if (bytes <= capBytes) return text;
  return `${Buffer.from(text).subarray(0, capBytes).toString("utf8")}\n[truncated at ${capBytes} bytes of ${bytes}]`;
}
