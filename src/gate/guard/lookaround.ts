// Patterns with lookaround ((?=...), (?!...), (?<=...), (?<!...)), which RE2 refuses, for
// policies written as the reference writes them (Guardian's `/Volumes/(?!MAC_MINI_1TB)`).
// Two parts, ADR 0022: the pattern with its lookarounds removed is an RE2 pattern every match
// of the original also matches (an assertion only narrows a match), so it prefilters in linear
// time; only a text it matches is tried with the JavaScript (backtracking) regex, in a vm
// context under a time limit. A text never exceeds the guard's 4,096-character windows.
import type { Context, Script } from "node:vm";
import type { RE2JS } from "re2js";
import { re2js } from "../../engine/re2.js";
import { messageOf } from "../../errors.js";
import { nodeVm } from "../../lazy-builtins.js";

/** Longest one backtracking match may run; past it the pattern counts as matched (fail closed). */
export const LOOKAROUND_LIMIT_MS = 25;

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

/** Index of the `]` closing the class opened at `start` (a `]` first in the class is literal). */
function classEnd(p: string, start: number): number {
  let i = start + 1;
  if (p[i] === "^") i++;
  if (p[i] === "]") i++;
  for (; i < p.length; i++) {
    if (p[i] === "\\") i++;
    else if (p[i] === "]") return i;
  }
  return -1;
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

/** A lookaround pattern, compiled: the RE2 prefilter and the bounded JavaScript match. */
export class BoundedLookaround {
  private readonly context: Context;
  /** The one script every lookaround runs, made with the first (node:vm loads then: lazy-builtins.ts). */
  private static script: Script | undefined;

  private constructor(
    /** The pattern without lookarounds: RE2, every match of the original matches it. */
    readonly prefilter: RE2JS,
    readonly source: string,
    regex: RegExp,
  ) {
    this.context = nodeVm().createContext({ re: regex, texts: [] });
  }

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
    let regex: RegExp;
    try {
      regex = new RegExp(pattern, "u");
    } catch {
      try {
        regex = new RegExp(pattern);
      } catch (err) {
        return `regex pattern ${JSON.stringify(pattern)} is invalid: ${messageOf(err)}`;
      }
    }
    return new BoundedLookaround(prefilter, pattern, regex);
  }

  /**
   * Whether the pattern matches any of the texts: RE2 on the stripped pattern picks the texts
   * worth trying, then one time-limited run of the JavaScript regex over them (a vm run costs
   * a watchdog thread, so it is made once per call, not once per text). A run that reaches
   * LOOKAROUND_LIMIT_MS counts as a match: a rule that cannot be decided in time denies (or
   * flags), it is never skipped.
   */
  matchesAny(texts: readonly string[]): boolean {
    const worth = texts.filter((t) => this.prefilter.matcher(t).find());
    if (worth.length === 0) return false;
    (this.context as { texts: readonly string[] }).texts = worth;
    try {
      BoundedLookaround.script ??= new (nodeVm().Script)("texts.some((t) => { re.lastIndex = 0; return re.test(t); })");
      return BoundedLookaround.script.runInContext(this.context, { timeout: LOOKAROUND_LIMIT_MS }) === true;
    } catch (err) {
      if ((err as { code?: string }).code !== "ERR_SCRIPT_EXECUTION_TIMEOUT") throw err;
      return true;
    }
  }
}
