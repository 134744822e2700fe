// An ordered set of RE2 patterns compiled once per policy version, searched over many texts.
// A literal prefilter (literal-prefilter.ts) skips the patterns that cannot match a text.
import type { RE2JS } from "re2js";
import { compilePattern } from "../../engine/validators/regex.js";
import { LiteralPrefilter } from "./literal-prefilter.js";

/** A pattern RE2 refuses (lookaround, backreference, bad syntax), naming where it came from. */
export class PolicyError extends Error {
  override readonly name = "PolicyError";
}

/** One pattern to compile, with the label its errors and matches are reported under. */
export interface PatternEntry {
  pattern: string;
  label: string;
  /** Where the pattern was declared, for errors (default: the label). */
  where?: string;
}

/** Compiled patterns in declaration order; `firstMatch` honours that order. */
export class PatternSet {
  private readonly regexes: RE2JS[];
  private readonly prefilter: LiteralPrefilter;

  private constructor(readonly entries: readonly PatternEntry[], regexes: RE2JS[]) {
    this.regexes = regexes;
    this.prefilter = new LiteralPrefilter(entries.map((e) => e.pattern));
  }

  /** Compiles every entry; the first one RE2 refuses throws a PolicyError naming its label. */
  static compile(entries: readonly PatternEntry[]): PatternSet {
    const regexes = entries.map((e) => {
      const c = compilePattern(e.pattern);
      if (!c.ok) throw new PolicyError(`${e.where ?? e.label}: ${c.error}`);
      return c.regex;
    });
    return new PatternSet(entries, regexes);
  }

  get size(): number {
    return this.entries.length;
  }

  /** Index of the first pattern (in declaration order) matching any of the texts, or -1. */
  firstMatch(texts: readonly string[]): number {
    if (this.regexes.length === 0) return -1;
    for (const [i, textIdx] of this.prefilter.candidates(texts)) {
      const re = this.regexes[i] as RE2JS;
      for (const t of textIdx) if (re.matcher(texts[t] as string).find()) return i;
    }
    return -1;
  }

  /** Indices of every pattern matching at least one of the texts, in declaration order. */
  allMatches(texts: readonly string[]): number[] {
    const out: number[] = [];
    if (this.regexes.length === 0) return out;
    for (const [i, textIdx] of this.prefilter.candidates(texts)) {
      const re = this.regexes[i] as RE2JS;
      for (const t of textIdx) {
        if (re.matcher(texts[t] as string).find()) {
          out.push(i);
          break;
        }
      }
    }
    return out;
  }
}
