// A backtracking regex matcher with a step budget, for the lookaround patterns RE2 refuses
// (lookaround.ts, ADR 0056). JavaScript's own regex cannot be stopped but by a wall-clock
// timeout, which decides differently on a loaded machine; this matcher counts its steps, so the
// same pattern and text always get the same answer. It reads the JavaScript syntax a policy
// writes: literals, `.`, classes and escapes (each tested one character at a time by a
// JavaScript regex of its own, so their meaning is JavaScript's), groups, alternation, greedy
// and lazy quantifiers, `^`, `$`, `\b`, `\B` and the four lookarounds. No backreferences (the
// policy refuses them), no named-group references, no flags but `u`.

/** Raised inside the matcher when the budget is spent; the caller decides what that means. */
export class StepBudgetSpent extends Error {
  constructor(readonly limit: number) {
    super(`the match took more than ${limit} steps`);
  }
}

type Node =
  | { t: "char"; test: (c: string) => boolean }
  | { t: "seq"; items: Node[] }
  | { t: "alt"; alts: Node[] }
  | { t: "rep"; body: Node; min: number; max: number; lazy: boolean }
  | { t: "bol" }
  | { t: "eol" }
  | { t: "wordb"; neg: boolean }
  | { t: "look"; body: Node; ahead: boolean; neg: boolean };

const LINE_TERMINATORS = new Set(["\n", "\r", "\u2028", "\u2029"]);
const isWord = (c: string | undefined): boolean => c !== undefined && /^[A-Za-z0-9_]$/.test(c);

/** Parses a JavaScript pattern into the matcher's tree; throws an Error naming what it cannot read. */
class Parser {
  private i = 0;
  constructor(
    private readonly p: string,
    private readonly unicode: boolean,
  ) {}

  parse(): Node {
    const n = this.alt();
    if (this.i < this.p.length) throw new Error(`unexpected ${JSON.stringify(this.p[this.i])} at ${this.i}`);
    return n;
  }

  private alt(): Node {
    const alts = [this.seq()];
    while (this.p[this.i] === "|") {
      this.i++;
      alts.push(this.seq());
    }
    return alts.length === 1 ? (alts[0] as Node) : { t: "alt", alts };
  }

  private seq(): Node {
    const items: Node[] = [];
    while (this.i < this.p.length && this.p[this.i] !== "|" && this.p[this.i] !== ")") items.push(this.quantified(this.atom()));
    return items.length === 1 ? (items[0] as Node) : { t: "seq", items };
  }

  private quantified(body: Node): Node {
    const rest = this.p.slice(this.i);
    let m: RegExpExecArray | null;
    let min: number;
    let max: number;
    if (rest[0] === "*" || rest[0] === "+" || rest[0] === "?") {
      [min, max] = rest[0] === "*" ? [0, Infinity] : rest[0] === "+" ? [1, Infinity] : [0, 1];
      this.i++;
    } else if ((m = /^\{(\d+)(,(\d*))?\}/.exec(rest)) !== null) {
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      this.i += m[0].length;
    } else return body;
    const lazy = this.p[this.i] === "?";
    if (lazy) this.i++;
    return { t: "rep", body, min, max, lazy };
  }

  private atom(): Node {
    const p = this.p;
    const c = p[this.i] as string;
    if (c === "(") return this.group();
    if (c === "^" || c === "$") {
      this.i++;
      return { t: c === "^" ? "bol" : "eol" };
    }
    if (c === ".") {
      this.i++;
      return { t: "char", test: (x) => !LINE_TERMINATORS.has(x) };
    }
    if (c === "[") {
      const end = classEnd(p, this.i);
      if (end < 0) throw new Error(`unclosed class at ${this.i}`);
      const src = p.slice(this.i, end + 1);
      this.i = end + 1;
      return this.oneChar(src);
    }
    if (c === "\\") return this.escape();
    const ch = this.unicode ? String.fromCodePoint(p.codePointAt(this.i) as number) : c;
    this.i += ch.length;
    return { t: "char", test: (x) => x === ch };
  }

  private escape(): Node {
    const rest = this.p.slice(this.i);
    const e = rest[1];
    if (e === undefined) throw new Error("a pattern ends with \\");
    if (e === "b" || e === "B") {
      this.i += 2;
      return { t: "wordb", neg: e === "B" };
    }
    if (/[1-9k]/.test(e)) throw new Error("backreferences are not supported");
    const m = /^\\(x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]+\}|u[0-9A-Fa-f]{4}|c[A-Za-z]|[pP]\{[^}]*\}|[\s\S])/u.exec(rest);
    const src = (m as RegExpExecArray)[0];
    this.i += src.length;
    return this.oneChar(src);
  }

  private group(): Node {
    const rest = this.p.slice(this.i);
    const look = /^\(\?(<?)([=!])/.exec(rest);
    let head: number;
    if (look !== null) head = look[0].length;
    else if (rest.startsWith("(?:")) head = 3;
    else if (/^\(\?<[A-Za-z_$][\w$]*>/.test(rest)) head = rest.indexOf(">") + 1;
    else if (rest.startsWith("(?")) throw new Error(`group ${JSON.stringify(rest.slice(0, 4))} is not supported`);
    else head = 1;
    this.i += head;
    const body = this.alt();
    if (this.p[this.i] !== ")") throw new Error("unclosed group");
    this.i++;
    return look !== null ? { t: "look", body, ahead: look[1] === "", neg: look[2] === "!" } : body;
  }

  /** One character tested by JavaScript's regex for this class or escape (its meaning stays JavaScript's). */
  private oneChar(src: string): Node {
    const re = new RegExp(`^(?:${src})$`, this.unicode ? "u" : "");
    return { t: "char", test: (x) => re.test(x) };
  }
}

/** Index of the `]` closing the class opened at `start` (a `]` first in the class is literal), or -1. */
export function classEnd(p: string, start: number): number {
  let i = start + 1;
  if (p[i] === "^") i++;
  if (p[i] === "]") i++;
  for (; i < p.length; i++) {
    if (p[i] === "\\") i++;
    else if (p[i] === "]") return i;
  }
  return -1;
}

/** A compiled pattern that answers "does it match this text" in at most `limit` steps per question. */
export class StepBoundedRegex {
  private readonly root: Node;
  private steps = 0;
  private limit = 0;
  private s: string[] = [];

  /** Compiles a JavaScript pattern (flags: `u` or none); throws an Error naming what it cannot read. */
  constructor(
    readonly source: string,
    private readonly unicode: boolean,
  ) {
    this.root = new Parser(source, unicode).parse();
  }

  /** Whether the pattern matches anywhere in any of the texts, within `limit` steps in all; past it, StepBudgetSpent. */
  testAny(texts: readonly string[], limit: number): boolean {
    this.steps = 0;
    this.limit = limit;
    for (const t of texts) {
      this.s = this.unicode ? Array.from(t) : t.split("");
      for (let start = 0; start <= this.s.length; start++) if (this.m(this.root, start, () => true)) return true;
    }
    return false;
  }

  /** Steps the last testAny took (for tests and notes). */
  get lastSteps(): number {
    return this.steps;
  }

  private tick(n = 1): void {
    this.steps += n;
    if (this.steps > this.limit) throw new StepBudgetSpent(this.limit);
  }

  private m(node: Node, i: number, k: (j: number) => boolean): boolean {
    this.tick();
    const s = this.s;
    switch (node.t) {
      case "char":
        return i < s.length && node.test(s[i] as string) && k(i + 1);
      case "seq":
        return this.seq(node.items, 0, i, k);
      case "alt":
        return node.alts.some((a) => this.m(a, i, k));
      case "bol":
        return i === 0 && k(i);
      case "eol":
        return i === s.length && k(i);
      case "wordb":
        return (isWord(s[i - 1]) !== isWord(s[i])) !== node.neg && k(i);
      case "look":
        return this.look(node, i) && k(i);
      case "rep":
        return node.body.t === "char" ? this.run(node.body.test, node, i, k) : this.rep(node, i, k, 0);
    }
  }

  private seq(items: readonly Node[], at: number, i: number, k: (j: number) => boolean): boolean {
    if (at === items.length) return k(i);
    return this.m(items[at] as Node, i, (j) => this.seq(items, at + 1, j, k));
  }

  /** A lookaround holds at i: ahead, the body matches from i; behind, it matches some text ending at i. */
  private look(node: Extract<Node, { t: "look" }>, i: number): boolean {
    let found = false;
    if (node.ahead) found = this.m(node.body, i, () => true);
    else for (let st = i; st >= 0 && !found; st--) found = this.m(node.body, st, (j) => j === i);
    return found !== node.neg;
  }

  /** A quantified single character, without recursion per character: the longest run, then back off (or the shortest, lazily). */
  private run(test: (c: string) => boolean, node: Extract<Node, { t: "rep" }>, i: number, k: (j: number) => boolean): boolean {
    const s = this.s;
    let n = 0;
    while (n < node.max && i + n < s.length && test(s[i + n] as string)) n++;
    this.tick(n);
    if (n < node.min) return false;
    if (node.lazy) {
      for (let c = node.min; c <= n; c++) if (this.stepped(k, i + c)) return true;
    } else for (let c = n; c >= node.min; c--) if (this.stepped(k, i + c)) return true;
    return false;
  }

  private stepped(k: (j: number) => boolean, j: number): boolean {
    this.tick();
    return k(j);
  }

  /** A quantified group: one more iteration or stop, greedy or lazy; an empty iteration past the minimum fails (as in JavaScript). */
  private rep(node: Extract<Node, { t: "rep" }>, i: number, k: (j: number) => boolean, count: number): boolean {
    const more = (): boolean =>
      count < node.max && this.m(node.body, i, (j) => (j === i && count >= node.min ? false : this.rep(node, j, k, count + 1)));
    if (node.lazy) return (count >= node.min && k(i)) || more();
    return more() || (count >= node.min && k(i));
  }
}
