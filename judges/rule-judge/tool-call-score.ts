// The rule judge's graded phase for a proposed tool call (vaglio phase two): a benevolent
// base score moved by a few signals, clamped to [0, 1].
import type { Verdict } from "../shared/judge-io.js";

export const BASE_SCORE = 0.7;
const INTENT_BONUS = 0.1;
const TRAVERSAL_PENALTY = 0.2;
const ODD_KEY_PENALTY = 0.1;
const READ_ONLY_BONUS = 0.05;

type Signal = NonNullable<Verdict["signals"]>[number];

/** What the graded phase looks at. */
export interface ToolCallFacts {
  tool: string;
  args: Record<string, unknown>;
  /** The user's objective (the task), never the model's own justification. */
  intent: string;
  /** Tools the operator declared read-only; undefined: guess from the tool's name. */
  readOnlyTools?: readonly string[];
}

/** A tool name split into lower-case tokens on separators and camelCase. */
export function nameTokens(tool: string): string[] {
  return tool
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t !== "");
}

const READ_VERBS = new Set([
  "read",
  "list",
  "get",
  "search",
  "find",
  "stat",
  "cat",
  "ls",
  "view",
  "glob",
  "grep",
  "head",
  "tail",
  "show",
  "describe",
  "fetch",
]);
const WRITE_VERBS = new Set([
  "write",
  "delete",
  "remove",
  "rm",
  "exec",
  "run",
  "put",
  "post",
  "create",
  "update",
  "move",
  "mv",
  "patch",
  "apply",
  "shell",
  "cmd",
  "edit",
  "append",
]);

/** Whether a tool cannot change state: declared so, or named with read verbs only. */
export function isReadOnlyTool(tool: string, declared?: readonly string[]): boolean {
  if (declared !== undefined) return declared.includes(tool);
  const tokens = nameTokens(tool);
  return tokens.some((t) => READ_VERBS.has(t)) && !tokens.some((t) => WRITE_VERBS.has(t));
}

function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out);
  else if (typeof value === "object" && value !== null) for (const v of Object.values(value)) stringsOf(v, out);
  return out;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The raw graded score and the signals that moved it. */
export function scoreToolCall(f: ToolCallFacts): { score: number; signals: Signal[]; notes: string[] } {
  let score = BASE_SCORE;
  const signals: Signal[] = [];
  const notes: string[] = [];
  const intentWords = new Set(nameTokens(f.intent));
  const matched = nameTokens(f.tool).filter((t) => t.length >= 3 && intentWords.has(t));
  if (matched.length > 0) {
    score += INTENT_BONUS;
    notes.push("intent matches tool");
    signals.push({ category: "intent_match", score: 1, message: `the task mentions "${matched[0]}" from tool ${f.tool}` });
  } else {
    signals.push({ category: "intent_match", score: 0, message: `the task does not mention tool ${f.tool}` });
  }
  const traversal = stringsOf(f.args).find((s) => s.includes("..") && s.includes("/"));
  if (traversal !== undefined) {
    score -= TRAVERSAL_PENALTY;
    notes.push("possible path traversal ('..' in args)");
    signals.push({ category: "path_traversal", score: 0, message: "an argument contains '..' and '/'" });
  }
  const odd = Object.keys(f.args).filter((k) => !IDENTIFIER.test(k));
  if (odd.length > 0) {
    score -= ODD_KEY_PENALTY;
    notes.push(`odd argument keys: ${odd.map((k) => JSON.stringify(k)).join(", ")}`);
    signals.push({ category: "odd_keys", score: 0, message: `argument keys that are not identifiers: ${odd.length}` });
  }
  if (isReadOnlyTool(f.tool, f.readOnlyTools)) {
    score += READ_ONLY_BONUS;
    notes.push("read-only tool");
    signals.push({ category: "read_only", score: 1, message: `${f.tool} cannot change state` });
  }
  return { score: Math.min(1, Math.max(0, score)), signals, notes };
}
