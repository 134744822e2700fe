// A literal prefilter for RE2 patterns (the idea of RE2's FilteredRE2): from each pattern it
// extracts strings one of which every match must contain, finds them in all texts at once with
// an Aho-Corasick automaton, and runs RE2 only where they occur. A pattern without such a
// required literal (e.g. `^.{500,}$`) runs on every text. Case is folded, so it only over-selects.

/** A parsed pattern, reduced to what literal extraction needs. */
type Node =
  | { k: "lit"; s: string }
  | { k: "any" }
  | { k: "empty" }
  | { k: "cat"; xs: Node[] }
  | { k: "alt"; xs: Node[] }
  | { k: "rep"; x: Node; min: number; max: number };

const MAX_SET = 64;
const NO_CANDIDATES: readonly [number, number[]][] = Object.freeze([]);
/** Alphabet of the automaton: ASCII folded to lower case, every other UTF-16 unit in one class. */
const OTHER = 128;
const CLASSES = 129;

/** Folds one UTF-16 unit to its automaton class (RE2's case folding of k and s reaches K and ſ). */
function classOf(c: number): number {
  return CLASS_TABLE[c] as number;
}

// classOf for every UTF-16 unit, precomputed: the scan does one table read per character.
// Every unit from 128 up is OTHER but K (Kelvin sign, folds to k) and ſ (long s, folds to s):
// filled natively, then the 130 exceptions set one by one (a loop over all 65536 units cost a
// few milliseconds at every start of `gavel guard check`, bench/cli-start.ts).
const CLASS_TABLE = (() => {
  const t = new Uint8Array(65536).fill(OTHER);
  for (let c = 0; c < 128; c++) t[c] = c >= 65 && c <= 90 ? c + 32 : c;
  t[0x212a] = 107;
  t[0x17f] = 115;
  return t;
})();

class Parser {
  private i = 0;
  constructor(private readonly p: string) {}

  parse(): Node {
    const n = this.alt();
    return this.i < this.p.length ? { k: "any" } : n;
  }

  private alt(): Node {
    const xs = [this.cat()];
    while (this.p[this.i] === "|") {
      this.i++;
      xs.push(this.cat());
    }
    return xs.length === 1 ? (xs[0] as Node) : { k: "alt", xs };
  }

  /** A run of unrepeated literals is one literal node (`rm` rather than `r`, `m`): the same literals, built in one step. */
  private cat(): Node {
    const xs: Node[] = [];
    while (this.i < this.p.length && this.p[this.i] !== "|" && this.p[this.i] !== ")") {
      const x = this.repeat(this.atom());
      const last = xs[xs.length - 1];
      if (x.k === "lit" && last?.k === "lit") xs[xs.length - 1] = { k: "lit", s: last.s + x.s };
      else xs.push(x);
    }
    return { k: "cat", xs };
  }

  private repeat(x: Node): Node {
    for (;;) {
      const c = this.p[this.i];
      let min: number;
      let max: number;
      if (c === "*" || c === "+" || c === "?") {
        this.i++;
        min = c === "+" ? 1 : 0;
        max = c === "?" ? 1 : Infinity;
      } else if (c === "{") {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.p.slice(this.i));
        if (m === null) return x;
        this.i += m[0].length;
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === "" || m[3] === undefined ? Infinity : Number(m[3]);
      } else return x;
      if (this.p[this.i] === "?") this.i++;
      x = { k: "rep", x, min, max };
    }
  }

  private atom(): Node {
    const c = this.p[this.i] as string;
    if (c === "(") return this.group();
    if (c === "[") return this.charClass();
    this.i++;
    if (c === ".") return { k: "any" };
    if (c === "^" || c === "$") return { k: "empty" };
    if (c !== "\\") return { k: "lit", s: c };
    return this.escape(this.p[this.i++] ?? "");
  }

  /** `(...)`: (?flags) sets flags; (?:...), (?flags:...), (?P<n>...), (?<n>...) group. */
  private group(): Node {
    const p = this.p;
    this.i++;
    if (p[this.i] === "?") {
      const m = /^\?(P?<[^>]*>|[a-zA-Z-]*:|[a-zA-Z-]*\))/.exec(p.slice(this.i));
      if (m === null) return this.skipToEnd();
      this.i += m[0].length;
      if (m[0].endsWith(")")) return { k: "empty" };
    }
    const inner = this.alt();
    if (p[this.i] === ")") this.i++;
    return inner;
  }

  /** The escape `\e` (the backslash and e already read). */
  private escape(e: string): Node {
    const p = this.p;
    if (e === "Q") {
      const end = p.indexOf("\\E", this.i);
      const s = p.slice(this.i, end < 0 ? p.length : end);
      this.i = end < 0 ? p.length : end + 2;
      return { k: "cat", xs: [...s].map((ch) => ({ k: "lit", s: ch }) as Node) };
    }
    if ("bBAz".includes(e)) return { k: "empty" };
    // Small classes become alternatives so that `rm\s+` yields "rm " rather than "rm".
    if (e === "s") return { k: "alt", xs: [" ", "\t", "\n", "\r", "\f", "\v"].map((ch) => ({ k: "lit", s: ch }) as Node) };
    if (e === "d") return { k: "alt", xs: [..."0123456789"].map((ch) => ({ k: "lit", s: ch }) as Node) };
    if ("pP".includes(e)) {
      if (p[this.i] === "{") this.i = Math.max(this.i, p.indexOf("}", this.i) + 1);
      else this.i++;
      return { k: "any" };
    }
    if (e === "x") {
      const m = /^(\{([0-9a-fA-F]+)\}|([0-9a-fA-F]{2}))/.exec(p.slice(this.i));
      if (m === null) return { k: "any" };
      this.i += m[0].length;
      return { k: "lit", s: String.fromCodePoint(parseInt(m[2] ?? m[3] ?? "0", 16)) };
    }
    const control = CONTROLS[e];
    if (control !== undefined) return { k: "lit", s: control };
    if (/[0-9a-zA-Z]/.test(e)) return { k: "any" };
    return { k: "lit", s: e };
  }

  private charClass(): Node {
    const p = this.p;
    this.i++;
    if (p[this.i] === "^") this.i++;
    if (p[this.i] === "]") this.i++;
    while (this.i < p.length && p[this.i] !== "]") {
      if (p[this.i] === "\\") this.i += 2;
      else if (p.startsWith("[:", this.i)) this.i = Math.max(this.i + 1, p.indexOf(":]", this.i + 2) + 2);
      else this.i++;
    }
    this.i++;
    return { k: "any" };
  }

  private skipToEnd(): Node {
    this.i = this.p.length;
    return { k: "any" };
  }
}

const CONTROLS: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r", f: "\f", v: "\v", a: "\x07" };

interface Info {
  /** Every string the node can match, when few. */
  exact?: string[];
  /** Strings one of which every match contains. */
  req?: string[];
}

const score = (set: string[]): number => Math.min(...set.map((s) => s.length));
const fold = (s: string): string =>
  [...s]
    .map((ch) =>
      ch.length === 1 ? String.fromCharCode(classOf(ch.charCodeAt(0)) === OTHER ? ch.charCodeAt(0) : classOf(ch.charCodeAt(0))) : ch,
    )
    .join("");

function info(n: Node): Info {
  switch (n.k) {
    case "lit":
      return { exact: [fold(n.s)] };
    case "any":
      return {};
    case "empty":
      return { exact: [""] };
    case "rep":
      return repInfo(n);
    case "alt":
      return altInfo(n.xs);
    case "cat":
      return catInfo(n.xs);
  }
}

function repInfo(n: Node & { k: "rep" }): Info {
  if (n.min === 0) return {};
  const x = info(n.x);
  if (n.min === 1 && n.max === 1) return x;
  const r = x.exact ?? x.req;
  return r === undefined ? {} : { req: r };
}

function altInfo(nodes: readonly Node[]): Info {
  const xs = nodes.map(info);
  if (xs.every((x) => x.exact !== undefined)) {
    const u = [...new Set(xs.flatMap((x) => x.exact ?? []))];
    return u.length <= MAX_SET ? { exact: u } : { req: u };
  }
  if (xs.every((x) => (x.exact ?? x.req) !== undefined)) return { req: [...new Set(xs.flatMap((x) => x.exact ?? x.req ?? []))] };
  return {};
}

function catInfo(nodes: readonly Node[]): Info {
  const candidates: string[][] = [];
  let cur: string[] | undefined = [""];
  let allExact = true;
  for (const node of nodes) {
    // x+ (or x{n,}): the run so far followed by one x is required, then the run ends.
    if (node.k === "rep" && node.min >= 1 && cur !== undefined) {
      const x = info(node.x).exact;
      if (x !== undefined && cur.length * x.length <= MAX_SET) {
        const prev: string[] = cur;
        candidates.push(prev.flatMap((a) => x.map((b) => a + b)));
        allExact = false;
        cur = undefined;
        continue;
      }
    }
    const child = info(node);
    if (child.exact !== undefined && cur !== undefined && cur.length * child.exact.length <= MAX_SET) {
      const prev: string[] = cur;
      cur = prev.flatMap((a) => (child.exact ?? []).map((b) => a + b));
      continue;
    }
    allExact = false;
    if (cur !== undefined) candidates.push(cur);
    if (child.exact !== undefined) cur = child.exact;
    else {
      if (child.req !== undefined) candidates.push(child.req);
      cur = undefined;
    }
  }
  if (allExact && cur !== undefined) return { exact: [...new Set(cur)] };
  if (cur !== undefined) candidates.push(cur);
  const usable = candidates.filter((c) => c.length > 0 && !c.includes(""));
  if (usable.length === 0) return {};
  usable.sort((a, b) => score(b) - score(a) || a.length - b.length);
  return { req: usable[0] as string[] };
}

/** The strings one of which every match of the pattern contains (case-folded), or undefined. */
export function requiredLiterals(pattern: string): string[] | undefined {
  let i: Info;
  try {
    i = info(new Parser(pattern).parse());
  } catch {
    return undefined;
  }
  const set = i.exact ?? i.req;
  if (set === undefined || set.length === 0 || set.includes("")) return undefined;
  return [...new Set(set)];
}

/** Chooses, per pattern, the texts that may match it. */
export class LiteralPrefilter {
  /**
   * Transitions, indexed by (state × classes + class) where a state is stored premultiplied
   * by the number of classes; an accepting next state is stored as -(next) - 1 so the scan's
   * hot loop tests one sign instead of reading a second table.
   */
  private readonly delta: Int32Array;
  /** Per premultiplied state / classes, the patterns whose literal ends there (after failure links). */
  private readonly outputs: (number[] | undefined)[];
  private readonly always: number[] = [];
  /**
   * Each UTF-16 unit's class in this automaton: only the characters its literals use get a
   * class of their own, every other one shares class 0, so the table stays small enough to
   * stay in cache with a thousand rules.
   */
  private readonly classMap: Uint8Array;
  private readonly classes: number;

  constructor(patterns: readonly string[]) {
    const lits: (string[] | undefined)[] = patterns.map((p) => requiredLiterals(p));
    // Compress the alphabet: fold class (0..128) -> dense class (1..k), others 0.
    const dense = new Uint8Array(CLASSES);
    let k = 1;
    for (const set of lits) {
      for (const lit of set ?? []) {
        for (let i = 0; i < lit.length; i++) {
          const c = classOf(lit.charCodeAt(i));
          if (dense[c] === 0) dense[c] = k++;
        }
      }
    }
    this.classes = k;
    // Every unit CLASS_TABLE puts in OTHER shares OTHER's dense class: filled natively, then
    // the units with a class of their own (ASCII, K, ſ) set one by one.
    this.classMap = new Uint8Array(65536).fill(dense[OTHER] as number);
    for (let c = 0; c < 128; c++) this.classMap[c] = dense[CLASS_TABLE[c] as number] as number;
    this.classMap[0x212a] = dense[CLASS_TABLE[0x212a] as number] as number;
    this.classMap[0x17f] = dense[CLASS_TABLE[0x17f] as number] as number;

    const goto: Map<number, number>[] = [new Map<number, number>()];
    const out: number[][] = [[]];
    lits.forEach((set, id) => {
      if (set === undefined) {
        this.always.push(id);
        return;
      }
      for (const lit of set) {
        let s = 0;
        for (let i = 0; i < lit.length; i++) {
          const c = dense[classOf(lit.charCodeAt(i))] as number;
          const row = goto[s] as Map<number, number>;
          let next = row.get(c);
          if (next === undefined) {
            next = goto.length;
            goto.push(new Map<number, number>());
            out.push([]);
            row.set(c, next);
          }
          s = next;
        }
        (out[s] as number[]).push(id);
      }
    });
    // Breadth-first failure links, folded into a full transition table: a state's row is its
    // failure state's row (a shallower state's, so complete: copied natively) with the state's
    // own edges set over it, instead of one lookup per state and class (a few milliseconds at
    // every start of `gavel guard check`, bench/cli-start.ts). Targets are written as the scan
    // reads them (premultiplied, accepting ones negative: `delta`); a state accepts when a
    // literal ends there or its failure state accepts.
    const n = goto.length;
    const delta = new Int32Array(n * k);
    const fail = new Int32Array(n);
    const accepting = new Uint8Array(n);
    const queue: number[] = [];
    const edge = (s: number, c: number, t: number, failure: number): void => {
      fail[t] = failure;
      accepting[t] = (out[t] as number[]).length > 0 || accepting[failure] === 1 ? 1 : 0;
      delta[s * k + c] = accepting[t] === 1 ? -(t * k) - 1 : t * k;
      queue.push(t);
    };
    for (const [c, t] of goto[0] as Map<number, number>) edge(0, c, t, 0);
    for (let qi = 0; qi < queue.length; qi++) {
      const s = queue[qi] as number;
      const f = fail[s] as number;
      (out[s] as number[]).push(...(out[f] as number[]));
      delta.copyWithin(s * k, f * k, f * k + k);
      for (const [c, t] of goto[s] as Map<number, number>) {
        const via = delta[f * k + c] as number;
        edge(s, c, t, (via >= 0 ? via : -via - 1) / k);
      }
    }
    this.outputs = out.map((o) => (o.length === 0 ? undefined : [...new Set(o)]));
    this.delta = delta;
  }

  /** The patterns worth running and, for each, the indices of the texts to run it on; by pattern index. */
  candidates(texts: readonly string[]): readonly [number, number[]][] {
    let hits: Map<number, number[]> | undefined;
    const delta = this.delta;
    const classMap = this.classMap;
    for (let t = 0; t < texts.length; t++) {
      const text = texts[t] as string;
      let s = 0;
      for (let i = 0; i < text.length; i++) {
        s = delta[s + (classMap[text.charCodeAt(i)] as number)] as number;
        if (s >= 0) continue;
        s = -s - 1;
        const o = this.outputs[s / this.classes] as number[];
        hits ??= new Map<number, number[]>();
        for (const id of o) {
          const list = hits.get(id);
          if (list === undefined) hits.set(id, [t]);
          else if (list[list.length - 1] !== t) list.push(t);
        }
      }
    }
    if (this.always.length > 0) {
      hits ??= new Map<number, number[]>();
      const all = texts.map((_, i) => i);
      for (const id of this.always) hits.set(id, all);
    }
    // The common case, nothing to run, allocates nothing more.
    if (hits === undefined) return NO_CANDIDATES;
    return [...hits.entries()].sort((a, b) => a[0] - b[0]);
  }
}
