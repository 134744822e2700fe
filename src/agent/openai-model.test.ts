// The OpenAI-compatible model against a chat completions server on a real socket: the
// request carries the offered tools under API-safe names, replies map back to gavel's
// tool names, and HTTP failures are retried or reported.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_TOOLS } from "./builtin-tools.js";
import { functionName, OpenAiModel } from "./openai-model.js";

type Handler = (body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => void;

describe("OpenAiModel", () => {
  let server: Server;
  let url: string;
  let handler: Handler = () => undefined;
  const bodies: Record<string, unknown>[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let text = "";
      req.on("data", (d: Buffer) => (text += d.toString()));
      req.on("end", () => {
        const body = JSON.parse(text) as Record<string, unknown>;
        bodies.push(body);
        handler(body, req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  it("offers tools under API-safe names and maps tool calls back", async () => {
    let auth: string | undefined;
    handler = (_body, req, res) => {
      auth = req.headers.authorization;
      reply(res, 200, {
        choices: [
          {
            message: {
              content: "I will list the workspace.",
              tool_calls: [
                { id: "call_1", type: "function", function: { name: "fs_list", arguments: '{"path":"/workspace"}' } },
                { id: "call_2", type: "function", function: { name: "cmd_run", arguments: "not json" } },
              ],
            },
          },
        ],
      });
    };
    const model = new OpenAiModel({ baseUrl: `${url}/`, model: "test-model", apiKey: "sk-test" });
    const turn = await model.next(
      [
        { role: "system", content: "sys" },
        { role: "user", content: "task" },
        { role: "assistant", content: null, toolCalls: [{ id: "call_0", name: "fs.read", args: { path: "a" } }] },
        { role: "tool", toolCallId: "call_0", name: "fs.read", content: "text" },
      ],
      [BUILTIN_TOOLS["fs.list"], BUILTIN_TOOLS["cmd.run"]].filter((t) => t !== undefined),
    );
    expect(auth).toBe("Bearer sk-test");
    const body = bodies.at(-1) as { model: string; tools: { function: { name: string } }[]; messages: Record<string, unknown>[] };
    expect(body.model).toBe("test-model");
    expect(body.tools.map((t) => t.function.name)).toEqual(["fs_list", "cmd_run"]);
    expect(body.messages[2]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_0", type: "function", function: { name: "fs_read", arguments: '{"path":"a"}' } }],
    });
    expect(body.messages[3]).toEqual({ role: "tool", tool_call_id: "call_0", content: "text" });
    expect(turn.toolCalls).toEqual([
      { id: "call_1", name: "fs.list", args: { path: "/workspace" }, intent: "I will list the workspace." },
      { id: "call_2", name: "cmd.run", args: { _unparsed_arguments: "not json" }, intent: "I will list the workspace." },
    ]);
  });

  it("returns the final answer when there are no tool calls", async () => {
    handler = (_b, _r, res) => reply(res, 200, { choices: [{ message: { content: "42" } }] });
    const turn = await new OpenAiModel({ baseUrl: url, model: "m" }).next([{ role: "user", content: "q" }], []);
    expect(turn).toEqual({ content: "42", toolCalls: [] });
    expect(bodies.at(-1)).not.toHaveProperty("tools");
  });

  it("retries 429 and 5xx, then succeeds", async () => {
    let n = 0;
    handler = (_b, _r, res) =>
      ++n < 3 ? reply(res, n === 1 ? 429 : 503, { error: "busy" }) : reply(res, 200, { choices: [{ message: { content: "ok" } }] });
    const turn = await new OpenAiModel({ baseUrl: url, model: "m", retries: 3 }).next([{ role: "user", content: "q" }], []);
    expect(turn.content).toBe("ok");
    expect(n).toBe(3);
  });

  it("fails on a 4xx at once, and after the retries on persistent 5xx", async () => {
    handler = (_b, _r, res) => reply(res, 401, { error: "bad key" });
    await expect(new OpenAiModel({ baseUrl: url, model: "m" }).next([], [])).rejects.toThrow(/HTTP 401/);
    handler = (_b, _r, res) => reply(res, 500, { error: "down" });
    await expect(new OpenAiModel({ baseUrl: url, model: "m", retries: 1 }).next([], [])).rejects.toThrow(/after 2 attempt\(s\).*HTTP 500/);
  });

  it("maps names the API would refuse", () => {
    expect(functionName("cmd.run")).toBe("cmd_run");
    expect(functionName("mcp/github.create issue")).toBe("mcp_github_create_issue");
  });
});
