// A small OpenAI-compatible chat completions server on a real socket that answers from a
// script; the llm judge's tests (unit and on Docker) talk to it as they would to a provider.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the server received it. */
export interface ReceivedRequest {
  path: string;
  authorization: string | undefined;
  body: { model?: string; temperature?: number; messages?: { role: string; content: string }[]; response_format?: unknown };
}

/** A scripted answer: the assistant's content, or an HTTP error. */
export type ScriptedReply = string | { status: number; body: string };

/** A running server: its base URL (…/v1), what it received, and close(). */
export interface ScriptedChatServer {
  baseUrl: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * Serves POST /v1/chat/completions with the scripted replies in order (the last one repeats).
 * `host` 0.0.0.0 lets a container on the host network reach it.
 */
export async function startScriptedChatServer(replies: ScriptedReply[], host = "127.0.0.1"): Promise<ScriptedChatServer> {
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString()));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
        return;
      }
      let body: ReceivedRequest["body"] = {};
      try {
        body = JSON.parse(raw) as ReceivedRequest["body"];
      } catch {
        res.writeHead(400).end('{"error":{"message":"body is not JSON"}}');
        return;
      }
      received.push({ path: req.url, authorization: req.headers.authorization, body });
      const reply = replies[Math.min(received.length - 1, replies.length - 1)] ?? "";
      if (typeof reply !== "string") {
        res.writeHead(reply.status, { "content-type": "application/json" }).end(reply.body);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: `chatcmpl-${received.length}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? "unknown",
          choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
