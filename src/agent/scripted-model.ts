// A model that replays a YAML list of turns (tool calls, then a final answer): for demos
// and tests, where the worker must behave the same on every run.
import { parse } from "yaml";
import type { JsonObject } from "../api/types.js";
import type { ToolSpec } from "./builtin-tools.js";
import { ModelError, type ChatMessage, type ChatModel, type ModelToolCall, type ModelTurn } from "./model.js";

/**
 * The script format, a list of turns (or `{turns: [...]}`):
 *
 *   - say: "Let me look around."          # optional text with the calls
 *     tool_calls:
 *       - tool: cmd.run
 *         args: { command: "ls /workspace" }
 *         intent: "see what is there"
 *   - final: "Done: the workspace holds 3 files."
 *
 * In a `final` answer, `{{result N}}` stands for the content of the Nth tool result of the
 * conversation (1-based): a scripted run can show what its tools returned to the model.
 */
export interface ScriptTurn {
  say?: string;
  tool_calls?: { tool: string; args?: JsonObject; intent?: string; id?: string }[];
  final?: string;
}

/** Parses and checks a script; errors name the turn and field. */
export function parseScript(text: string, source = "script"): ScriptTurn[] {
  let doc: unknown;
  try {
    doc = parse(text) as unknown;
  } catch (err) {
    throw new ModelError(`${source}: not valid YAML: ${(err as Error).message}`);
  }
  const turns = Array.isArray(doc)
    ? doc
    : typeof doc === "object" && doc !== null && "turns" in doc
      ? (doc as { turns: unknown }).turns
      : undefined;
  if (!Array.isArray(turns) || turns.length === 0)
    throw new ModelError(`${source}: expected a non-empty list of turns (or {turns: [...]})`);
  return turns.map((t: unknown, i) => {
    const at = `${source}: turns[${i}]`;
    if (typeof t !== "object" || t === null || Array.isArray(t)) throw new ModelError(`${at} must be a mapping`);
    const turn = t as Record<string, unknown>;
    for (const k of Object.keys(turn)) {
      if (!["say", "tool_calls", "final"].includes(k)) throw new ModelError(`${at}.${k} is not a known field (say, tool_calls, final)`);
    }
    if (turn.say !== undefined && typeof turn.say !== "string") throw new ModelError(`${at}.say must be a string`);
    if (turn.final !== undefined && typeof turn.final !== "string") throw new ModelError(`${at}.final must be a string`);
    if (turn.final !== undefined && turn.tool_calls !== undefined) throw new ModelError(`${at} has both final and tool_calls`);
    if (turn.final === undefined && turn.tool_calls === undefined) throw new ModelError(`${at} needs tool_calls or final`);
    if (turn.tool_calls !== undefined) {
      if (!Array.isArray(turn.tool_calls) || turn.tool_calls.length === 0)
        throw new ModelError(`${at}.tool_calls must be a non-empty list`);
      turn.tool_calls.forEach((c: unknown, j) => {
        const cat = `${at}.tool_calls[${j}]`;
        if (typeof c !== "object" || c === null) throw new ModelError(`${cat} must be a mapping`);
        const call = c as Record<string, unknown>;
        if (typeof call.tool !== "string" || call.tool === "") throw new ModelError(`${cat}.tool must be a tool name`);
        if (call.args !== undefined && (typeof call.args !== "object" || call.args === null || Array.isArray(call.args))) {
          throw new ModelError(`${cat}.args must be a mapping`);
        }
        if (call.intent !== undefined && typeof call.intent !== "string") throw new ModelError(`${cat}.intent must be a string`);
      });
    }
    return turn as ScriptTurn;
  });
}

/** A final answer with each `{{result N}}` replaced by the Nth tool result's content ("" when there is none). */
function withResults(text: string, messages: ChatMessage[]): string {
  const results = messages.filter((m) => m.role === "tool").map((m) => m.content);
  return text.replace(/\{\{result (\d+)\}\}/g, (_m, n: string) => results[Number(n) - 1] ?? "");
}

/** Replays a script turn by turn; running out of turns before a final answer is an error. */
export class ScriptedModel implements ChatModel {
  private next_ = 0;
  /** Every conversation the model was shown, for tests and debugging. */
  readonly seen: ChatMessage[][] = [];

  constructor(private readonly turns: ScriptTurn[]) {}

  next(messages: ChatMessage[], _tools: ToolSpec[]): Promise<ModelTurn> {
    this.seen.push([...messages]);
    const index = this.next_++;
    const turn = this.turns[index];
    if (turn === undefined) {
      return Promise.reject(new ModelError(`script ended after ${this.turns.length} turn(s) without a final answer`));
    }
    if (turn.final !== undefined) return Promise.resolve({ content: withResults(turn.final, messages), toolCalls: [] });
    const toolCalls: ModelToolCall[] = (turn.tool_calls ?? []).map((c, j) => ({
      id: c.id ?? `script-${index + 1}-${j + 1}`,
      name: c.tool,
      args: c.args ?? {},
      ...(c.intent !== undefined ? { intent: c.intent } : {}),
    }));
    return Promise.resolve({ ...(turn.say !== undefined ? { content: turn.say } : {}), toolCalls });
  }
}
