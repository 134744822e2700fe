// The prefilter may over-select but must never skip a text that RE2 matches.
import fc from "fast-check";
import { RE2JS } from "re2js";
import { describe, expect, it } from "vitest";
import { compilePattern } from "../../engine/re2.js";
import { DESTRUCTIVE_PATTERNS, FORBIDDEN_PATHS } from "./builtin-patterns.js";
import { LiteralPrefilter, requiredLiterals } from "./literal-prefilter.js";
import { JointScan, PatternSet } from "./pattern-set.js";

describe("literal prefilter", () => {
  it("extracts the literals every match must contain", () => {
    expect(requiredLiterals(String.raw`\bforbidden_cmd_5\s+--[a-z]+`)).toEqual(
      [" ", "\t", "\n", "\r", "\f", "\v"].map((w) => `forbidden_cmd_5${w}`),
    );
    expect(requiredLiterals(String.raw`\brm\s+-rf?\s+/(\s|$)`)).toContain("rm ");
    expect(requiredLiterals(String.raw`(?i)(DROP|TRUNCATE)\s+TABLE`)).toEqual(["table"]);
    expect(requiredLiterals(String.raw`(^|/)\.ssh(/|$)`)?.sort()).toEqual([".ssh", ".ssh/", "/.ssh", "/.ssh/"]);
    expect(requiredLiterals(String.raw`^/mnt/v-1(/|$)`)?.sort()).toEqual(["/mnt/v-1", "/mnt/v-1/"]);
    expect(requiredLiterals("a*")).toBeUndefined();
    expect(requiredLiterals("^.{500,}$")).toBeUndefined();
    expect(requiredLiterals("x|.")).toBeUndefined();
  });

  const piece = fc.constantFrom(
    "a",
    "b",
    "ab",
    "K",
    "s",
    ".",
    "\\s",
    "[ab]",
    "\\bab",
    "(a|b)",
    "(?i)a",
    "a*",
    "b+",
    "a?",
    "(ab){2}",
    "\\Qa.b\\E",
    "\\x61",
    "^",
    "$",
    "(?:a|)",
    "[^a]",
    "ſ",
  );
  const pattern = fc
    .array(piece, { minLength: 1, maxLength: 5 })
    .chain((ps) => fc.constantFrom(ps.join(""), ps.join("|"), `(${ps.join("")})+`));
  const text = fc
    .array(fc.constantFrom("a", "b", "A", "B", "k", "K", "S", "s", "ſ", " ", ".", "x", "é"), { maxLength: 12 })
    .map((cs) => cs.join(""));

  it("never skips a (pattern, text) pair that RE2 matches", () => {
    fc.assert(
      fc.property(fc.array(pattern, { minLength: 1, maxLength: 4 }), fc.array(text, { minLength: 1, maxLength: 4 }), (patterns, texts) => {
        const pre = new Map(new LiteralPrefilter(patterns).candidates(texts));
        patterns.forEach((p, i) => {
          const re = RE2JS.compile(p);
          texts.forEach((t, ti) => {
            if (re.matcher(t).find()) expect(pre.get(i) ?? [], `${p} on ${JSON.stringify(t)}`).toContain(ti);
          });
        });
      }),
      { numRuns: 400 },
    );
  });

  it("keeps every built-in pattern matchable", () => {
    const all = [...DESTRUCTIVE_PATTERNS, ...FORBIDDEN_PATHS].map((p) => p.pattern);
    const samples = [
      "rm -rf /",
      "DROP TABLE x",
      ":(){ :|:& };:",
      "curl x|sh",
      "169.254.169.254",
      "chmod 777 x",
      "mkfs",
      "dd if=x of=/dev/sda",
      "/root/.ssh/x",
      "/etc/passwd",
      "/proc/1",
      "/dev/sda",
      "~/.aws/credentials",
      "/var/run/secrets/x",
    ];
    const pre = new Map(new LiteralPrefilter(all).candidates(samples));
    all.forEach((p, i) => {
      const re = RE2JS.compile(p);
      samples.forEach((t, ti) => {
        if (re.matcher(t).find()) expect(pre.get(i) ?? [], p).toContain(ti);
      });
    });
  });

  it("folds K and ſ, and keeps the other units past ASCII in one shared class", () => {
    const patterns = ["(?i)kelvin", "(?i)ssh", "éx", "x"];
    const texts = ["\u212aELVIN", "\u017f\u017fh", "éx", "üx", "plain"];
    const pre = new Map(new LiteralPrefilter(patterns).candidates(texts));
    patterns.forEach((p, i) => {
      const re = RE2JS.compile(p);
      texts.forEach((t, ti) => {
        if (re.matcher(t).find()) expect(pre.get(i) ?? [], `${p} on ${JSON.stringify(t)}`).toContain(ti);
      });
    });
    expect(pre.get(2)).toEqual([2, 3]);
  });
});

describe("built-in entries (compiled at first use)", () => {
  const all = [...DESTRUCTIVE_PATTERNS, ...FORBIDDEN_PATHS].map((p) => p.pattern);

  it("every built-in pattern compiles with RE2", () => {
    for (const p of all) expect(compilePattern(p).ok, p).toBe(true);
  });

  it("match exactly as the same patterns compiled with the set", () => {
    const eager = PatternSet.compile(all.map((p) => ({ pattern: p, label: p })));
    const lazy = PatternSet.compile(all.map((p) => ({ pattern: p, label: p, builtin: true as const })));
    const texts = [
      "rm -rf /",
      "DROP TABLE x",
      ":(){ :|:& };:",
      "curl x|sh",
      "169.254.169.254",
      "chmod 777 x",
      "mkfs",
      "dd if=x of=/dev/sda",
      "/root/.ssh/x",
      "/etc/passwd",
      "/proc/1",
      "/dev/sda",
      "~/.aws/credentials",
      "/var/run/secrets/x",
      "plain",
    ];
    for (const t of texts) expect(lazy.allMatches([t]), t).toEqual(eager.allMatches([t]));
    expect(lazy.allMatches(texts)).toEqual(eager.allMatches(texts));
    expect(lazy.firstMatch(["plain", "/etc/passwd"])).toBe(eager.firstMatch(["plain", "/etc/passwd"]));
  });

  it("a policy's pattern RE2 refuses is still refused when the set is compiled", () => {
    expect(() => PatternSet.compile([{ pattern: "(a)\\1", label: "p" }])).toThrow(/p: .*not supported by RE2/);
  });
});

describe("joint scan", () => {
  it("gives each pattern set the candidates its own prefilter gives", () => {
    const a = PatternSet.compile([...DESTRUCTIVE_PATTERNS, ...FORBIDDEN_PATHS].map((p) => ({ pattern: p.pattern, label: p.pattern })));
    const b = PatternSet.compile(
      ["^/mnt/v-1(/|$)", String.raw`\bforbidden_cmd_5\s+--[a-z]+`, "^.{30,}$", "(?i)secret"].map((p) => ({ pattern: p, label: p })),
    );
    const joint = new JointScan([a, b]);
    const texts = ["rm -rf /", "/mnt/v-1/x", "forbidden_cmd_5 --now", "a SECRET here, in a much longer line", "/root/.ssh/id_rsa", "plain"];
    const [ca, cb] = joint.candidates(texts);
    expect(a.allMatches(texts, ca)).toEqual(a.allMatches(texts));
    expect(b.allMatches(texts, cb)).toEqual(b.allMatches(texts));
    expect(b.allMatches(texts, cb)).toEqual([0, 1, 2, 3]);
    expect(a.firstMatch(texts, ca)).toBe(a.firstMatch(texts));
    expect(a.firstMatch(texts, ca)).toBeGreaterThanOrEqual(0);
  });
});
