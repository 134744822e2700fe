// The text commands whose output the shell reader computes from literals (for `$(...)` and
// pipelines into a shell): echo, printf, cat, rev, tr, base64 -d, xxd -r -p.
import { unescapePrintf } from "./quoting.js";

/** A text command: its arguments and static stdin give its output, or undefined when unknown. */
type TextCommand = (args: string[], stdin: string | undefined) => string | undefined;

const TEXT_COMMANDS: Readonly<Record<string, TextCommand>> = {
  echo,
  printf,
  cat: (args, stdin) => (args.length === 0 || (args.length === 1 && args[0] === "-") ? stdin : undefined),
  rev: (_args, stdin) =>
    stdin
      ?.split("\n")
      .map((l) => [...l].reverse().join(""))
      .join("\n"),
  base64: (args, stdin) => {
    if (stdin === undefined || !args.some((a) => a === "-d" || a === "--decode" || a === "-D")) return undefined;
    return Buffer.from(stdin.replace(/\s+/g, ""), "base64").toString("latin1");
  },
  xxd: (args, stdin) => {
    if (stdin === undefined || !(args.includes("-r") && args.includes("-p"))) return undefined;
    return Buffer.from(stdin.replace(/[^0-9a-fA-F]/g, ""), "hex").toString("latin1");
  },
  tr,
};

/** The output of a command whose output the guard can compute from literals, else undefined. */
export function staticOutput(words: string[], stdin: string | undefined): string | undefined {
  const [cmd, ...args] = words;
  const f = cmd === undefined || !Object.hasOwn(TEXT_COMMANDS, cmd) ? undefined : TEXT_COMMANDS[cmd];
  return f?.(args, stdin);
}

function echo(args: string[]): string {
  let escapes = false;
  let newline = true;
  while (args[0] !== undefined && /^-[neE]+$/.test(args[0])) {
    const f = args.shift() as string;
    if (f.includes("e")) escapes = true;
    if (f.includes("n")) newline = false;
  }
  const text = args.join(" ");
  return (escapes ? unescapePrintf(text) : text) + (newline ? "\n" : "");
}

function printf(args: string[]): string | undefined {
  const fmt = args.shift();
  if (fmt === undefined) return undefined;
  let k = 0;
  return unescapePrintf(fmt).replace(/%([%sbdq])/g, (_m, f: string) => {
    if (f === "%") return "%";
    const a = args[k++] ?? "";
    return f === "b" ? unescapePrintf(a) : a;
  });
}

function tr(args: string[], stdin: string | undefined): string | undefined {
  if (stdin === undefined) return undefined;
  if (args[0] === "-d" && args.length === 2) {
    const del = new Set(trSet(args[1] as string));
    return [...stdin].filter((c) => !del.has(c)).join("");
  }
  if (args.length !== 2 || (args[0] as string).startsWith("-")) return undefined;
  const from = trSet(args[0] as string);
  const to = trSet(args[1] as string);
  if (from.length === 0 || to.length === 0) return undefined;
  const map = new Map<string, string>();
  from.forEach((c, idx) => map.set(c, to[Math.min(idx, to.length - 1)] as string));
  return [...stdin].map((c) => map.get(c) ?? c).join("");
}

const TR_CLASSES: Readonly<Record<string, string>> = {
  "[:lower:]": "a-z",
  "[:upper:]": "A-Z",
  "[:digit:]": "0-9",
  "[:alpha:]": "a-zA-Z",
  "[:alnum:]": "a-zA-Z0-9",
};

/** A tr set: ranges (`a-z`), `[:lower:]`-style classes and escapes spelled out. */
function trSet(s: string): string[] {
  const t = unescapePrintf(s.replace(/\[:[a-z]+:\]/g, (m) => TR_CLASSES[m] ?? m));
  const out: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const a = t.charCodeAt(i);
    if (t[i + 1] === "-" && i + 2 < t.length) {
      const b = t.charCodeAt(i + 2);
      for (let c = a; c <= b && out.length < 1024; c++) out.push(String.fromCharCode(c));
      i += 2;
    } else out.push(t[i] as string);
  }
  return out;
}
