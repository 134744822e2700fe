// Patterns with lookaround ((?=...), (?!...), (?<=...), (?<!...)), which RE2 refuses, for
// policies written as the reference writes them (Guardian's `/Volumes/(?!MAC_MINI_1TB)`).
// Two parts, ADR 0022: the pattern with its lookarounds removed is an RE2 pattern every match
// of the original also matches (an assertion only narrows a match), so it prefilters in linear
// time; only a text it matches is tried by a backtracking matcher with a step budget
// (backtrack.ts, ADR 0056): the same text always gets the same answer, however loaded the
// machine. A text never exceeds the guard's 4,096-character windows.
import type { RE2JS } from "re2js";
import { re2js } from "../../engine/re2.js";
import { messageOf } from "../../errors.js";
import { StepBoundedRegex, StepBudgetSpent, classEnd } from "./backtrack.js";

/**
 * Most steps one call's backtracking match may take over all its texts; past it the pattern
 * counts as matched (fail closed). A lookaround rule over a 4,096-character text takes a few
 * thousand; 100,000 is about 30 ms of the matcher's work on the project's 2-core machine.
 */
export const LOOKAROUND_STEP_LIMIT = 100_000;

const LOOKAROUND_OPENERS = ["(?=", "(?!", "(?<=", "(?<!"] as const;

/** True when the pattern has a lookaround group (outside character classes and escapes). */
export function hasLookaround(pattern: string): boolean {
  return stripLookarounds(pattern) !== pattern;
}

/**
 * The pattern without its lookaround groups, or undefined when one is quantified (JavaScript
 * allows `(?=a)*`; removing it would change what the quantifier applies to) or unbalanced.
 */
export function stripLookarounds(pattern: string): string | undefined {
  let out = "";
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === "\\") {
      out += pattern.slice(i, i + 2);
      i += 2;
    } else if (c === "[") {
      const end = classEnd(pattern, i);
      if (end < 0) return undefined;
      out += pattern.slice(i, end + 1);
      i = end + 1;
    } else if (LOOKAROUND_OPENERS.some((o) => pattern.startsWith(o, i))) {
      const end = groupEnd(pattern, i);
      if (end < 0) return undefined;
      if (/^[*+?{]/.test(pattern.slice(end + 1))) return undefined;
      i = end + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Index of the `)` closing the group opened at `start`. */
function groupEnd(p: string, start: number): number {
  let depth = 0;
  for (let i = start; i < p.length; i++) {
    const c = p[i];
    if (c === "\\") i++;
    else if (c === "[") {
      i = classEnd(p, i);
      if (i < 0) return -1;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return -1;
}

/** A lookaround pattern, compiled: the RE2 prefilter and the step-bounded match. */
export class BoundedLookaround {
  private constructor(
    /** The pattern without lookarounds: RE2, every match of the original matches it. */
    readonly prefilter: RE2JS,
    readonly source: string,
    private readonly matcher: StepBoundedRegex,
  ) {}

  /** Compiles a lookaround pattern, or returns why it cannot be (the message names the part). */
  static compile(pattern: string): BoundedLookaround | string {
    if (/\\[1-9]|\\k</.test(pattern)) return `regex pattern ${JSON.stringify(pattern)} uses a backreference, which is not supported`;
    const stripped = stripLookarounds(pattern);
    if (stripped === undefined) return `regex pattern ${JSON.stringify(pattern)} has a quantified or unbalanced lookaround group`;
    let prefilter: RE2JS;
    try {
      prefilter = re2js().RE2JS.compile(stripped);
    } catch (err) {
      return `regex pattern ${JSON.stringify(pattern)} is not supported: without its lookarounds (${JSON.stringify(stripped)}) RE2 refuses it (${messageOf(err)}); lookaround is the only non-RE2 syntax accepted`;
    }
    // JavaScript says whether the pattern is valid and whether it needs the u flag; the step-bounded matcher runs it.
    let unicode = true;
    try {
      new RegExp(pattern, "u");
    } catch {
      try {
        new RegExp(pattern);
        unicode = false;
      } catch (err) {
        return `regex pattern ${JSON.stringify(pattern)} is invalid: ${messageOf(err)}`;
      }
    }
    try {
      return new BoundedLookaround(prefilter, pattern, new StepBoundedRegex(pattern, unicode));
    } catch (err) {
      return `regex pattern ${JSON.stringify(pattern)} is not supported with lookaround: ${messageOf(err)}`;
    }
  }

  /**
   * Whether the pattern matches any of the texts: RE2 on the stripped pattern picks the texts
   * worth trying, then the step-bounded match over them. A match that takes more than
   * LOOKAROUND_STEP_LIMIT steps (or more stack than the process has) counts as a match: a rule
   * that cannot be decided denies (or flags), it is never skipped, and the same call always
   * gets the same answer.
   */
  matchesAny(texts: readonly string[]): boolean {
    const worth = texts.filter((t) => this.prefilter.matcher(t).find());
    if (worth.length === 0) return false;
    try {
      return this.matcher.testAny(worth, LOOKAROUND_STEP_LIMIT);
    } catch (err) {
      if (err instanceof StepBudgetSpent || err instanceof RangeError) return true;
      throw err;
    }
  }

  /** Steps the backtracking matcher took the last time a call reached it (RE2 rules most texts out first). */
  get lastSteps(): number {
    return this.matcher.lastSteps;
  }
}
