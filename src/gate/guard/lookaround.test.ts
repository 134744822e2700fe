// Lookaround patterns: Guardian's own adaptive rule loads and behaves as written; the RE2 form
// without the lookarounds prefilters; a catastrophic pattern is stopped by its step budget, the
// same way every time; the step-bounded matcher agrees with JavaScript's regex.
import { describe, expect, it } from "vitest";
import { agentScope } from "./context.js";
import { runGuard } from "./guard.js";
import { StepBoundedRegex } from "./backtrack.js";
import { BoundedLookaround, LOOKAROUND_STEP_LIMIT, stripLookarounds } from "./lookaround.js";
import { PatternSet, PolicyError } from "./pattern-set.js";
import { compilePolicy } from "./policy.js";

describe("lookaround patterns", () => {
  it("strips lookaround groups outside classes and escapes, and refuses quantified or unbalanced ones", () => {
    expect(stripLookarounds("/Volumes/(?!MAC_MINI_1TB)")).toBe("/Volumes/");
    expect(stripLookarounds("(?<=a)b(?<!c)d(?=(e|f))g")).toBe("bdg");
    expect(stripLookarounds("[(?=]x\\(?!y)")).toBe("[(?=]x\\(?!y)");
    expect(stripLookarounds("(?<name>a)(?=[)])b")).toBe("(?<name>a)b");
    expect(stripLookarounds("a(?=b)*")).toBeUndefined();
    expect(stripLookarounds("a(?=b")).toBeUndefined();
  });

  it("Guardian's adaptive rule loads and behaves as written", () => {
    const policy = compilePolicy([
      {
        name: "external-drives",
        spec: {
          adaptive_rules: [
            {
              name: "block_external_drive_writes",
              match_field: "args",
              pattern: "/Volumes/(?!MAC_MINI_1TB)",
              action: "deny",
              reason: "Writes to non-canonical external drives are blocked",
            },
          ],
        },
      },
    ]);
    const scope = agentScope({ spec: { tools: ["fs.write"] } });
    const write = (path: string) => runGuard({ tool: "fs.write", args: { path, content: "x" }, step: 1 }, { policy, scope, history: [] });
    expect(write("/Volumes/USB_STICK/dump.txt")).toMatchObject({
      approved: false,
      check: "adaptive_rule",
      reason: "adaptive_rule: block_external_drive_writes",
    });
    expect(write("/Volumes/MAC_MINI_1TB/backup.txt")).toEqual({ approved: true });
    expect(write("/Volumes/")).toMatchObject({ approved: false });
    // As written, unanchored: any "/Volumes/" not followed by MAC_MINI_1TB.
    expect(write("/workspace/Volumes/notes.txt")).toMatchObject({ approved: false });
    expect(write("/workspace/Volumes-notes.txt")).toEqual({ approved: true });
    // Nested in other arguments and in encoded views, as every pattern.
    expect(
      runGuard({ tool: "fs.write", args: { opts: { targets: ["/tmp/a", "/Volumes/EVIL/x"] } }, step: 1 }, { policy, scope, history: [] })
        .approved,
    ).toBe(false);
  });

  it("a lookbehind and a positive lookahead in destructive patterns; first-match order holds", () => {
    const set = PatternSet.compile([
      { pattern: "(?<!safe-)rm -rf", label: "unsafe rm" },
      { pattern: "token(?=\\s*=)", label: "token assignment" },
    ]);
    expect(set.firstMatch(["run safe-rm -rf x"])).toBe(-1);
    expect(set.firstMatch(["rm -rf x"])).toBe(0);
    expect(set.allMatches(["token = 3", "a token"])).toEqual([1]);
    expect(set.allMatches(["rm -rf x; token=1"])).toEqual([0, 1]);
  });

  it("bounds matching by steps, not time: a catastrophic pattern counts as matched, and always after the same number of steps", () => {
    const b = BoundedLookaround.compile("^(?=x)?(a+)+b$|^(?!y)(a+)+c$");
    // A quantified lookaround is refused.
    expect(typeof b).toBe("string");
    // The stripped pattern matches everything; the lookahead backtracks exponentially on "aaa...c".
    const bad = BoundedLookaround.compile("(?=(a+)+b)");
    if (typeof bad === "string") throw new Error(bad);
    const text = `${"a".repeat(40)}c`;
    expect(bad.matchesAny([text])).toBe(true);
    const spent = bad.lastSteps;
    expect(spent).toBeGreaterThan(LOOKAROUND_STEP_LIMIT);
    expect(bad.matchesAny([text])).toBe(true);
    expect(bad.lastSteps).toBe(spent);
    expect(bad.matchesAny(["aaab"])).toBe(true);
    expect(bad.lastSteps).toBeLessThan(100);
    // The prefilter (RE2, linear) rejects what cannot match without running the backtracking matcher.
    const guarded = BoundedLookaround.compile("^x(?=(a+)+b)");
    if (typeof guarded === "string") throw new Error(guarded);
    expect(guarded.matchesAny([text])).toBe(false);
  });

  it("Guardian's rule over a 4,096-character text takes a few thousand steps, far under the budget", () => {
    const rule = BoundedLookaround.compile("/Volumes/(?!MAC_MINI_1TB)");
    if (typeof rule === "string") throw new Error(rule);
    const long = `${"/Volumes/MAC_MINI_1TB/x ".repeat(170)}`.slice(0, 4096);
    expect(rule.matchesAny([long])).toBe(false);
    expect(rule.lastSteps).toBeLessThan(20_000);
  });

  it("agrees with JavaScript's regex on the syntax policies write", () => {
    const cases: [string, string[]][] = [
      ["/Volumes/(?!MAC_MINI_1TB)", ["/Volumes/MAC_MINI_1TB/a", "/Volumes/USB/a", "x/Volumes/", "/Volumes/MAC_MINI_1T"]],
      ["(?<!safe-)rm -rf", ["safe-rm -rf x", "rm -rf x", "unsafe rm -rf"]],
      ["token(?=\\s*=)", ["token = 3", "a token", "token\t=1", "tokens="]],
      [
        "^(?!.*--dry-run).*kubectl\\s+delete\\b",
        ["kubectl delete pod x", "kubectl delete pod x --dry-run", "kubectl deleted", "echo kubectl  delete"],
      ],
      ["(?<=\\bsecret_)[A-Z]{3,5}(?![a-z])", ["secret_ABCD", "secret_ABCDx", "xsecret_ABC", "secret_AB", "secret_ABCDEF"]],
      ["(?:a|ab)(?=c)|d+?e", ["abc", "ac", "ddde", "de", "dd"]],
      ["[^/]+\\.(?!pub$)[a-z]+$", ["id_rsa.pub", "id_rsa.key", "a.pubx", "x.pub"]],
      ["(?<![\\w.])\\.env(?!\\.(example|sample))\\b", [".env", "a.env", "x .env.example", "cat .env.local", "y.env"]],
      ["\\u00e9(?=t)|\\x41{2}(?<=AA)|\\p{Lu}(?=\\d)", ["\u00e9t\u00e9", "AAA", "B7", "b7", "\u00e9"]],
      ["^$|^(?=\\s)", ["", " a", "a"]],
      ["(a*)*(?=b)", ["aaab", "aaa", "b"]],
      ["(?<name>x)(?=y)|[\\]\\-]{2}", ["xy", "x", "]-", "a"]],
    ];
    for (const [pattern, texts] of cases) {
      let unicode = true;
      try {
        new RegExp(pattern, "u");
      } catch {
        unicode = false;
      }
      const js = new RegExp(pattern, unicode ? "u" : "");
      const ours = new StepBoundedRegex(pattern, unicode);
      for (const t of texts)
        expect({ pattern, t, matched: ours.testAny([t], LOOKAROUND_STEP_LIMIT) }).toEqual({ pattern, t, matched: js.test(t) });
    }
  });

  it("still refuses what is neither RE2 nor lookaround over RE2, naming the rule", () => {
    const compile = (pattern: string) => () =>
      compilePolicy([{ name: "p", spec: { adaptive_rules: [{ name: "r", match_field: "args", pattern, action: "deny", reason: "x" }] } }]);
    expect(compile("(a)\\1")).toThrow(PolicyError);
    expect(compile("(a)\\1")).toThrow(/GuardPolicy p: adaptive_rules\[0\] \(r\): .*not supported by RE2/);
    expect(compile("(?=a)(b)\\1")).toThrow(/adaptive_rules\[0\] \(r\): .*backreference/);
    expect(compile("a(?=b)*")).toThrow(/quantified or unbalanced lookaround/);
  });
});
