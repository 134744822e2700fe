// Which (pattern, text) pairs are worth running RE2 on. Placeholder: every pair.
/** Chooses, per pattern, the texts that may match it. */
export class LiteralPrefilter {
  constructor(private readonly patterns: readonly string[]) {}

  /** For each pattern, the indices of the texts RE2 must search. */
  candidates(texts: readonly string[]): number[][] {
    const all = texts.map((_, i) => i);
    return this.patterns.map(() => all);
  }
}
