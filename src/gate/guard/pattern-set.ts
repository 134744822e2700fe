// An ordered set of RE2 patterns compiled once per policy version, searched over many texts.
// A literal prefilter (literal-prefilter.ts) skips the patterns that cannot match a text. A
// pattern with lookaround, which RE2 refuses, runs bounded (lookaround.ts, ADR 0022). A
// built-in pattern of plain literals (`^/etc/(passwd|shadow|sudoers)`) runs as a JavaScript
// RegExp, which finds the same texts (plainLiteralPattern, ADR 0043).
import type { RE2JS } from "re2js";
import { compilePattern } from "../../engine/re2.js";
import { LiteralPrefilter } from "./literal-prefilter.js";
import { BoundedLookaround, hasLookaround, stripLookarounds } from "./lookaround.js";

/** A pattern that cannot be compiled (backreference, bad syntax, ...), naming where it came from. */
export class PolicyError extends Error {
  override readonly name = "PolicyError";
}

/** One pattern to compile, with the label its errors and matches are reported under. */
export interface PatternEntry {
  pattern: string;
  label: string;
  /** Where the pattern was declared, for errors (default: the label). */
  where?: string;
  /** A policy entry that only warns or is recorded (GuardPolicy `enforcementAction`); default deny. */
  enforcement?: "warn" | "dryrun";
  /**
   * A built-in table's entry (builtin-patterns.ts), known to compile (builtin-patterns.test.ts
   * compiles each): its RE2 program is built when the prefilter first selects it, not with the
   * set, so a call that never needs it (`gavel guard check` of a plain path) does not pay for it.
   * A policy's entries are compiled with the set: a pattern RE2 refuses is a PolicyError then.
   */
  builtin?: true;
}

/** ASCII punctuation, which both RE2 and JavaScript read as itself after a backslash. */
const PUNCTUATION = /^[!-/:-@[-`{-~]$/;
/** The characters that stand for themselves, unescaped, in both RE2 and JavaScript. */
const LITERAL = /^[0-9A-Za-z/_\-:=<>@%,'"~!#&; ]$/;

/**
 * Whether a pattern is made only of ASCII literals (a letter, a digit, harmless punctuation, or
 * escaped punctuation), `^`, `$`, plain groups `( )`, `|`, and `?` after a literal or a group
 * (`^/etc/(passwd|shadow|sudoers)`, `^/(var/)?run/docker\.sock$`). A JavaScript RegExp (no
 * flags) finds such a pattern in the same texts as RE2: each literal is the same character in
 * both; `^` and `$` anchor the start and the end of the whole text in both, without (?m) or
 * the m flag; whether a text contains a match does not depend on which match each engine
 * prefers. With no repetition, a JavaScript search backtracks at most the pattern's length at
 * each position. Classes, `.`, `\s`, `\b`, repetition, `(?...)` and every other escape are
 * refused: there the engines can differ (`\s`, `.` and case folding do).
 */
export function plainLiteralPattern(pattern: string): boolean {
  let depth = 0;
  let afterAtom = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\") {
      if (!PUNCTUATION.test(pattern[++i] ?? "")) return false;
      afterAtom = true;
    } else if (LITERAL.test(c)) afterAtom = true;
    else if (c === "(") {
      if (pattern[i + 1] === "?") return false;
      depth++;
      afterAtom = false;
    } else if (c === ")") {
      if (--depth < 0) return false;
      afterAtom = true;
    } else if (c === "|" || c === "^" || c === "$") afterAtom = false;
    else if (c === "?" && afterAtom) afterAtom = false;
    else return false;
  }
  return depth === 0;
}

/** Per pattern index (ascending), the indices of the texts worth running it on. */
export type Candidates = readonly (readonly [number, readonly number[]])[];

/** Compiled patterns in declaration order; `firstMatch` honours that order. */
export class PatternSet {
  /**
   * Per pattern, its RE2 program, or for a built-in entry of plain literals its JavaScript
   * RegExp (plainLiteralPattern); undefined for a built-in entry not searched yet.
   */
  private readonly regexes: (RE2JS | RegExp | undefined)[];
  /** Per pattern, its bounded lookaround match when it has lookarounds (RE2 ran its stripped form). */
  private readonly lookarounds: (BoundedLookaround | undefined)[];
  /**
   * Built at the first search without candidates given: the sets the guard searches over the
   * argument views get theirs from the policy's JointScan, so theirs is never built.
   */
  private ownPrefilter: LiteralPrefilter | undefined;
  /** The RE2 form of each pattern (lookarounds removed), which the literal prefilters read. */
  readonly searchPatterns: readonly string[];

  private constructor(
    readonly entries: readonly PatternEntry[],
    compiled: { regex?: RE2JS; lookaround?: BoundedLookaround; search: string }[],
  ) {
    this.regexes = compiled.map((c) => c.regex);
    this.lookarounds = compiled.map((c) => c.lookaround);
    this.searchPatterns = compiled.map((c) => c.search);
  }

  private get prefilter(): LiteralPrefilter {
    this.ownPrefilter ??= new LiteralPrefilter(this.searchPatterns);
    return this.ownPrefilter;
  }

  /**
   * Compiles every entry with RE2; one with lookaround (and otherwise RE2 syntax) compiles
   * bounded instead. The first that cannot compile throws a PolicyError naming its label.
   */
  static compile(entries: readonly PatternEntry[]): PatternSet {
    const compiled = entries.map((e) => {
      if (e.builtin === true && !hasLookaround(e.pattern)) return { search: e.pattern };
      const c = compilePattern(e.pattern);
      if (c.ok) return { regex: c.regex, search: e.pattern };
      if (!hasLookaround(e.pattern)) throw new PolicyError(`${e.where ?? e.label}: ${c.error}`);
      const b = BoundedLookaround.compile(e.pattern);
      if (typeof b === "string") throw new PolicyError(`${e.where ?? e.label}: ${b}`);
      return { regex: b.prefilter, lookaround: b, search: stripLookarounds(e.pattern) ?? "" };
    });
    return new PatternSet(entries, compiled);
  }

  /** Whether pattern i matches any of the texts at `textIdx` (RE2, or the bounded lookaround match). */
  private test(i: number, texts: readonly string[], textIdx: readonly number[]): boolean {
    const la = this.lookarounds[i];
    if (la !== undefined) return la.matchesAny(textIdx.map((t) => texts[t] as string));
    const re = this.regexes[i] ?? this.compileBuiltin(i);
    if (re instanceof RegExp) return textIdx.some((t) => re.test(texts[t] as string));
    for (const t of textIdx) if (re.matcher(texts[t] as string).find()) return true;
    return false;
  }

  /**
   * A built-in entry's program, made at its first search: a JavaScript RegExp for plain
   * literals (a read of /etc/passwd loads no RE2 then), else its RE2 program.
   */
  private compileBuiltin(i: number): RE2JS | RegExp {
    const entry = this.entries[i] as PatternEntry;
    if (plainLiteralPattern(entry.pattern)) {
      const re = new RegExp(entry.pattern);
      this.regexes[i] = re;
      return re;
    }
    const c = compilePattern(entry.pattern);
    if (!c.ok) throw new PolicyError(`${entry.where ?? entry.label}: ${c.error}`);
    this.regexes[i] = c.regex;
    return c.regex;
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * Index of the first pattern (in declaration order) matching any of the texts, or -1.
   * `candidates` may come from a JointScan over the same texts (one pass for several sets).
   */
  firstMatch(texts: readonly string[], candidates?: Candidates): number {
    if (this.regexes.length === 0) return -1;
    for (const [i, textIdx] of candidates ?? this.prefilter.candidates(texts)) if (this.test(i, texts, textIdx)) return i;
    return -1;
  }

  /** Indices of every pattern matching at least one of the texts, in declaration order. */
  allMatches(texts: readonly string[], candidates?: Candidates): number[] {
    const out: number[] = [];
    if (this.regexes.length === 0) return out;
    for (const [i, textIdx] of candidates ?? this.prefilter.candidates(texts)) if (this.test(i, texts, textIdx)) out.push(i);
    return out;
  }
}

/**
 * One prefilter pass for several pattern sets searched over the same texts (the destructive
 * patterns and the `args` adaptive rules both read the argument views): the texts are
 * scanned once instead of once per set.
 */
export class JointScan {
  private readonly prefilter: LiteralPrefilter;
  /** Index of each set's first pattern in the joint automaton, plus the total. */
  private readonly offsets: number[];

  constructor(sets: readonly PatternSet[]) {
    this.offsets = [0];
    const patterns: string[] = [];
    for (const set of sets) {
      for (const p of set.searchPatterns) patterns.push(p);
      this.offsets.push(patterns.length);
    }
    this.prefilter = new LiteralPrefilter(patterns);
    this.none = Object.freeze(this.offsets.slice(1).map(() => Object.freeze([]) as Candidates));
  }

  private readonly none: readonly Candidates[];

  /** Each set's candidates over the texts, in the order the sets were given. */
  candidates(texts: readonly string[]): readonly Candidates[] {
    const all = this.prefilter.candidates(texts);
    // The common case, no literal anywhere: one shared answer, nothing allocated.
    if (all.length === 0) return this.none;
    const per: [number, number[]][][] = [];
    for (let s = 1; s < this.offsets.length; s++) per.push([]);
    let set = 0;
    for (const [i, textIdx] of all) {
      while (i >= (this.offsets[set + 1] as number)) set++;
      (per[set] as [number, number[]][]).push([i - (this.offsets[set] as number), textIdx]);
    }
    return per;
  }
}
