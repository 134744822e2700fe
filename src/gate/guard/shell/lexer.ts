// The shell reader's lexer: splits a command line into words (each a list of parts that keep
// their quoting and the expansions in them) and operators, as sh would, without expanding.
import { decodeAnsiC } from "./quoting.js";

/** One piece of a word: literal text, a parameter expansion, a command substitution, or something unknowable. */
export type Part =
  | { t: "lit"; s: string; quoted: boolean }
  | { t: "var"; name: string; op: string; arg: string; quoted: boolean }
  | { t: "sub"; src: string; quoted: boolean; proc?: boolean }
  | { t: "unknown"; quoted: boolean; subs?: string[] };
export type Word = { k: "word"; parts: Part[] };
export type Token = Word | { k: "op"; op: string };

const OPERATORS = ["&&", "||", ";;", "|&", "<<<", "<<", ">>", "&>", ">&", "<(", ">(", ";", "|", "&", "<", ">", "(", ")", "\n"];
const OPERATOR_START = new Set(["&", "|", ";", "<", ">", "(", ")", "\n"]);
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*/;
const BRACED_RE = /^(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(.*)$/s;
const PARAM_OP_RE = /^(:?[-=+?]|:|\/\/|\/|\^\^|,,|\^|,|%%|%|##|#)/;
const HERE_DOC_RE = /^<<-?[ \t]*(['"]?)([^\s'";|&<>()]+)\1/;

/** Index of the `)` closing a `(` just before i, honouring quotes and nesting; -1 if none. */
export function closeParen(s: string, i: number): number {
  let depth = 1;
  for (let j = i; j < s.length; j++) {
    const c = s[j];
    if (c === "\\") j++;
    else if (c === "'") {
      const e = s.indexOf("'", j + 1);
      if (e < 0) return -1;
      j = e;
    } else if (c === '"') {
      for (j++; j < s.length && s[j] !== '"'; j++) if (s[j] === "\\") j++;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return j;
  }
  return -1;
}

/** The command substitutions (`$(...)`, backquotes) inside an arithmetic expression, nested arithmetic included. */
export function substitutionsIn(expr: string): string[] {
  const out: string[] = [];
  for (let j = 0; j < expr.length; j++) {
    if (expr[j] === "`") {
      const e = expr.indexOf("`", j + 1);
      out.push(expr.slice(j + 1, e < 0 ? expr.length : e));
      j = e < 0 ? expr.length : e;
    } else if (expr.startsWith("$(", j) && expr[j + 2] !== "(") {
      const e = closeParen(expr, j + 2);
      out.push(expr.slice(j + 2, e < 0 ? expr.length : e));
      j = e < 0 ? expr.length : e;
    }
  }
  return out;
}

/** Splits a command line into words (with their quoting and expansions) and operators. */
export function tokenize(src: string): Token[] {
  return new Lexer(src).run();
}

/** One pass over a line; each method reads one construct at an index and returns the index after it. */
class Lexer {
  private readonly tokens: Token[] = [];
  /** The word being read (undefined between words). */
  private parts: Part[] | undefined;
  /** Literal text not yet added to `parts`, and whether it was quoted. */
  private lit = "";
  private litQuoted = false;
  /** Here-document bodies, [start, end), jumped over when the line that opens them ends. */
  private readonly skips: [number, number][] = [];

  constructor(private readonly src: string) {}

  run(): Token[] {
    let i = 0;
    while (i < this.src.length) i = this.next(i);
    this.endWord();
    return this.tokens;
  }

  private next(i: number): number {
    const src = this.src;
    const c = src[i] as string;
    switch (c) {
      case " ":
      case "\t":
        this.endWord();
        return i + 1;
      case "\\":
        if (src[i + 1] === "\n") return i + 2;
        this.pushLit(src[i + 1] ?? "", true);
        return i + 2;
      case "'": {
        const end = src.indexOf("'", i + 1);
        this.pushLit(src.slice(i + 1, end < 0 ? src.length : end), true);
        return end < 0 ? src.length : end + 1;
      }
      case '"':
        return this.doubleQuoted(i);
      case "$":
        // `$"..."`: a locale string, read as a plain double-quoted one.
        return src[i + 1] === '"' ? i + 1 : this.dollar(i, false);
      case "`":
        return this.backtick(i, false);
      case "#":
        // A comment (only at the start of a word) runs to the end of the line.
        if (this.parts === undefined) {
          const nl = src.indexOf("\n", i);
          return nl < 0 ? src.length : nl;
        }
    }
    const op = OPERATOR_START.has(c) ? OPERATORS.find((o) => src.startsWith(o, i)) : undefined;
    if (op !== undefined) return this.operator(op, i);
    this.pushLit(c, false);
    return i + 1;
  }

  private flushLit(): void {
    if (this.lit !== "") (this.parts ??= []).push({ t: "lit", s: this.lit, quoted: this.litQuoted });
    this.lit = "";
  }

  private pushLit(s: string, quoted: boolean): void {
    if (quoted !== this.litQuoted) this.flushLit();
    this.litQuoted = quoted;
    this.lit += s;
    this.parts ??= [];
  }

  private pushPart(p: Part): void {
    this.flushLit();
    (this.parts ??= []).push(p);
  }

  private endWord(): void {
    this.flushLit();
    if (this.parts !== undefined) this.tokens.push({ k: "word", parts: this.parts });
    this.parts = undefined;
  }

  private doubleQuoted(i: number): number {
    const src = this.src;
    this.pushLit("", true);
    let j = i + 1;
    while (j < src.length && src[j] !== '"') {
      const d = src[j] as string;
      if (d === "\\" && j + 1 < src.length && '$`"\\\n'.includes(src[j + 1] as string)) {
        this.pushLit(src[j + 1] as string, true);
        j += 2;
      } else if (d === "$") j = this.dollar(j, true);
      else if (d === "`") j = this.backtick(j, true);
      else {
        this.pushLit(d, true);
        j++;
      }
    }
    return j + 1;
  }

  private backtick(i: number, quoted: boolean): number {
    const end = this.src.indexOf("`", i + 1);
    this.pushPart({ t: "sub", src: this.src.slice(i + 1, end < 0 ? this.src.length : end), quoted });
    return end < 0 ? this.src.length : end + 1;
  }

  /** A `$...` expansion at i (src[i] === "$"). */
  private dollar(i: number, quoted: boolean): number {
    const src = this.src;
    const n = src[i + 1] ?? "";
    if (n === "(") return this.parenthesised(i, quoted);
    if (n === "{") return this.braced(i, quoted);
    // `$[ expr ]`: the old form of `$(( expr ))`, arithmetic (unknown), not a `(` opening a subshell.
    if (n === "[") {
      const end = src.indexOf("]", i + 2);
      this.pushPart({ t: "unknown", quoted });
      return end < 0 ? src.length : end + 1;
    }
    if (n === "'" && !quoted) {
      const { text, end } = decodeAnsiC(src, i + 2);
      this.pushLit(text, true);
      return end + 1;
    }
    const name = NAME_RE.exec(src.slice(i + 1))?.[0] ?? (/[0-9@*#?$!-]/.test(n) ? n : "");
    if (name === "") {
      this.pushLit("$", quoted);
      return i + 1;
    }
    this.pushPart({ t: "var", name, op: "", arg: "", quoted });
    return i + 1 + name.length;
  }

  /** `$((...))` (arithmetic: unknown, the commands substituted inside it still run) or `$(...)` (a command substitution). */
  private parenthesised(i: number, quoted: boolean): number {
    const src = this.src;
    if (src[i + 2] === "(") {
      const end = closeParen(src, i + 2);
      const subs = substitutionsIn(src.slice(i + 3, end < 0 ? src.length : end));
      this.pushPart(subs.length > 0 ? { t: "unknown", quoted, subs } : { t: "unknown", quoted });
      return end < 0 ? src.length : end + 1;
    }
    const end = closeParen(src, i + 2);
    this.pushPart({ t: "sub", src: src.slice(i + 2, end < 0 ? src.length : end), quoted });
    return end < 0 ? src.length : end + 1;
  }

  /** `${NAME}`, `${#NAME}`, `${NAME<op><arg>}`. */
  private braced(i: number, quoted: boolean): number {
    const src = this.src;
    const end = src.indexOf("}", i + 2);
    const m = BRACED_RE.exec(src.slice(i + 2, end < 0 ? src.length : end));
    if (m === null) this.pushPart({ t: "unknown", quoted });
    else {
      const rest = m[3] ?? "";
      const op = m[1] === "#" ? "len" : (PARAM_OP_RE.exec(rest)?.[0] ?? (rest === "" ? "" : "?unsupported"));
      this.pushPart({ t: "var", name: m[2] ?? "", op, arg: op === "?unsupported" ? "" : rest.slice(op.length), quoted });
    }
    return end < 0 ? src.length : end + 1;
  }

  private operator(op: string, i: number): number {
    // `2>` / `2>&1`: a number right before a redirection is its file descriptor.
    if ((op[0] === ">" || op[0] === "<" || op === "&>") && this.lit !== "" && /^[0-9]+$/.test(this.lit) && this.parts?.length === 0) {
      this.lit = "";
      this.parts = undefined;
    }
    if (op === "<(" || op === ">(") return this.processSubstitution(i);
    if (op === "<<") {
      const after = this.hereDocument(i);
      if (after !== undefined) return after;
    }
    this.endWord();
    this.tokens.push({ k: "op", op });
    let next = i + op.length;
    // The line ending: skip the bodies of here-documents opened on it.
    if (op === "\n") for (const [from, to] of this.skips) if (from === next) next = to;
    return next;
  }

  /** `<(cmd)` / `>(cmd)`: a word of its own, standing for a path to the command's output or input. */
  private processSubstitution(i: number): number {
    this.endWord();
    const end = closeParen(this.src, i + 2);
    this.tokens.push({
      k: "word",
      parts: [{ t: "sub", src: this.src.slice(i + 2, end < 0 ? this.src.length : end), quoted: false, proc: true }],
    });
    return end < 0 ? this.src.length : end + 1;
  }

  /** A here-document: its body is the command's input (data, not commands of this line); undefined if `<<` opens none. */
  private hereDocument(i: number): number | undefined {
    const src = this.src;
    this.endWord();
    const m = HERE_DOC_RE.exec(src.slice(i));
    if (m === null) return undefined;
    const delim = m[2] as string;
    const lineEnd = src.indexOf("\n", i);
    const bodyStart = lineEnd < 0 ? src.length : lineEnd + 1;
    const lines = src.slice(bodyStart).split("\n");
    const end = lines.findIndex((l) => l.replace(/^\t+/, "") === delim);
    const body = (end < 0 ? lines : lines.slice(0, end)).join("\n");
    this.tokens.push({ k: "op", op: "<<<" }, { k: "word", parts: [{ t: "lit", s: body, quoted: true }] });
    this.skips.push([bodyStart, end < 0 ? src.length : bodyStart + lines.slice(0, end + 1).join("\n").length]);
    return i + m[0].length;
  }
}
