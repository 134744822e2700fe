// The model port of the worker loop: given the conversation and the offered tools, the
// model answers with text, tool calls, or both. Implemented by a scripted replay (demos,
// tests) and by any OpenAI-compatible chat completions API.
import type { JsonObject } from "../api/types.js";
import type { ToolSpec } from "./builtin-tools.js";

/** One tool call the model asks for. */
export interface ModelToolCall {
  /** The model's own id for the call (OpenAI's `call_...`), echoed back with the result. */
  id: string;
  name: string;
  args: JsonObject;
  /** The model's stated reason, when it gives one. */
  intent?: string;
}

/** One turn of the model: calls to make, or (with no calls) the final answer. */
export interface ModelTurn {
  content?: string;
  toolCalls: ModelToolCall[];
}

/** A message of the conversation, in chat-completions terms. */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; toolCalls?: ModelToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

/** A chat model with tool calling. */
export interface ChatModel {
  next(messages: ChatMessage[], tools: ToolSpec[]): Promise<ModelTurn>;
}

/** The model failed in a way the loop cannot recover from (bad script, API down). */
export class ModelError extends Error {
  override readonly name = "ModelError";
}
