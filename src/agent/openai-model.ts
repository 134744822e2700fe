// A model behind any OpenAI-compatible chat completions API with tool calling (OpenAI,
// vLLM, llama.cpp server, Ollama, LiteLLM ...). Tool names such as `cmd.run` are mapped
// to function names the API accepts (`cmd_run`) and back.
import type { JsonObject } from "../api/types.js";
import { backoffDelay, sleep } from "../backoff.js";
import type { ToolSpec } from "./builtin-tools.js";
import { ModelError, type ChatMessage, type ChatModel, type ModelToolCall, type ModelTurn } from "./model.js";

export interface OpenAiModelOptions {
  /** e.g. https://api.openai.com/v1 (the path /chat/completions is appended). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per-request deadline; default 120 s. */
  timeoutMs?: number;
  /** Retries on 429, 5xx and network errors; default 3. */
  retries?: number;
  temperature?: number;
}

interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

interface WireResponse {
  choices?: { message?: { content?: string | null; tool_calls?: WireToolCall[] } }[];
}

/** The function name an API accepts for a tool name (`^[a-zA-Z0-9_-]{1,64}$`). */
export function functionName(tool: string): string {
  return tool.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);
}

/** The chat completions client. */
export class OpenAiModel implements ChatModel {
  constructor(private readonly options: OpenAiModelOptions) {}

  async next(messages: ChatMessage[], tools: ToolSpec[]): Promise<ModelTurn> {
    const byFunction = new Map(tools.map((t) => [functionName(t.name), t.name]));
    const body = {
      model: this.options.model,
      messages: messages.map((m) => toWire(m)),
      ...(tools.length > 0
        ? {
            tools: tools.map((t) => ({
              type: "function",
              function: { name: functionName(t.name), description: t.description, parameters: t.parameters },
            })),
            tool_choice: "auto",
          }
        : {}),
      ...(this.options.temperature !== undefined ? { temperature: this.options.temperature } : {}),
    };
    const res = await this.post(body);
    const message = res.choices?.[0]?.message;
    if (message === undefined) throw new ModelError("chat completions response has no choices[0].message");
    const toolCalls: ModelToolCall[] = (message.tool_calls ?? []).map((c) => {
      let args: JsonObject;
      try {
        const parsed = JSON.parse(c.function.arguments === "" ? "{}" : c.function.arguments) as unknown;
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
        args = parsed as JsonObject;
      } catch {
        // Kept as a call with the raw text, so the gate sees (and records) what was asked.
        args = { _unparsed_arguments: c.function.arguments };
      }
      const name = byFunction.get(c.function.name) ?? c.function.name;
      return { id: c.id, name, args, ...(message.content ? { intent: message.content } : {}) };
    });
    return { ...(message.content != null ? { content: message.content } : {}), toolCalls };
  }

  private async post(body: unknown): Promise<WireResponse> {
    const url = `${this.options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    const retries = this.options.retries ?? 3;
    let lastError = "";
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, { initialMs: 500, maxMs: 8000 }));
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(this.options.timeoutMs ?? 120_000),
        });
      } catch (err) {
        lastError = `${url}: ${(err as Error).message}`;
        continue;
      }
      const text = await res.text();
      if (res.status === 429 || res.status >= 500) {
        lastError = `${url}: HTTP ${res.status} ${text.slice(0, 500)}`;
        continue;
      }
      if (!res.ok) throw new ModelError(`${url}: HTTP ${res.status} ${text.slice(0, 500)}`);
      try {
        return JSON.parse(text) as WireResponse;
      } catch {
        throw new ModelError(`${url}: response is not JSON: ${text.slice(0, 200)}`);
      }
    }
    throw new ModelError(`chat completions failed after ${retries + 1} attempt(s): ${lastError}`);
  }
}

function toWire(m: ChatMessage): Record<string, unknown> {
  switch (m.role) {
    case "system":
    case "user":
      return { role: m.role, content: m.content };
    case "assistant":
      return {
        role: "assistant",
        content: m.content,
        ...(m.toolCalls !== undefined && m.toolCalls.length > 0
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: "function",
                function: { name: functionName(c.name), arguments: JSON.stringify(c.args) },
              })),
            }
          : {}),
      };
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: m.content };
  }
}
