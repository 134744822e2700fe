// Shell functions: a definition's body is kept by name, and each call is read as that body with
// the call's arguments as $1, $2, ..., so that `send "$url" /etc/passwd` is read as the curl the
// function runs, not as an unknown program naming a file (issue 27, round 3).
import { MAX_DEPTH, type Env, type Expanded } from "./expansion.js";
import type { Token } from "./lexer.js";

/** Positional parameters a call can set; those past its arguments are unset in the body. */
const MAX_POSITIONAL = 9;

const plainWord = (t: Token | undefined, s: string): boolean =>
  t?.k === "word" && t.parts.length === 1 && t.parts[0]?.t === "lit" && !t.parts[0].quoted && t.parts[0].s === s;
const isOp = (t: Token | undefined, op: string): boolean => t?.k === "op" && t.op === op;
const functionName = (t: Token | undefined): string | undefined => {
  const p = t?.k === "word" && t.parts.length === 1 ? t.parts[0] : undefined;
  return p?.t === "lit" && !p.quoted && /^[A-Za-z_][\w.:-]*$/.test(p.s) ? p.s : undefined;
};

/** Where a definition's pieces are: its name, the index of its body's `{`, and of the matching `}`. */
export interface FunctionDefinition {
  name: string;
  open: number;
  close: number;
}

/**
 * The function defined at tokens[i], a command's first word: `name() { ...; }`, `function name
 * { ...; }` or `function name() { ...; }`. A body in `( ... )` or one whose `}` is missing is not
 * one (its commands are still read where they stand).
 */
export function functionDefinition(tokens: readonly Token[], i: number): FunctionDefinition | undefined {
  let j = i;
  let name: string | undefined;
  if (plainWord(tokens[j], "function")) {
    name = functionName(tokens[j + 1]);
    j += 2;
    if (isOp(tokens[j], "(") && isOp(tokens[j + 1], ")")) j += 2;
  } else {
    name = functionName(tokens[j]);
    if (!isOp(tokens[j + 1], "(") || !isOp(tokens[j + 2], ")")) return undefined;
    j += 3;
  }
  if (name === undefined) return undefined;
  while (isOp(tokens[j], "\n")) j++;
  if (!plainWord(tokens[j], "{")) return undefined;
  let depth = 0;
  for (let k = j; k < tokens.length; k++) {
    if (plainWord(tokens[k], "{")) depth++;
    else if (plainWord(tokens[k], "}") && --depth === 0) return { name, open: j, close: k };
  }
  return undefined;
}

/** Whether a call of `name` is read as its function's body: one the line defined, not already being read (recursion). */
export function readsAsFunction(name: string, env: Env): readonly Token[] | undefined {
  return env.log.calling.has(name) ? undefined : env.log.functions.get(name);
}

/** Reads a call of a function: its body under the call's arguments as positional parameters; returns the body's output when static. */
export function callFunction(name: string, body: readonly Token[], args: readonly Expanded[], env: Env): string | undefined {
  // Calls nested past the reader's depth: the body was read where it was defined.
  if (env.depth >= MAX_DEPTH) return undefined;
  const vars = new Map(env.vars);
  for (let n = 1; n <= MAX_POSITIONAL; n++) {
    const a = args[n - 1];
    if (a === undefined) vars.delete(String(n));
    else vars.set(String(n), a.unknown ? undefined : a.values);
  }
  const all = args.some((a) => a.unknown) ? undefined : [args.map((a) => a.values[0] ?? "").join(" ")];
  vars.set("@", all);
  vars.set("*", all);
  vars.set("#", [String(args.length)]);
  const inner: Env = { ...env, vars, depth: env.depth + 1 };
  delete inner.unresolved;
  env.log.calling.add(name);
  const out = env.run([...body], inner);
  env.log.calling.delete(name);
  if (inner.unresolved !== undefined) env.unresolved ??= inner.unresolved;
  return out;
}
