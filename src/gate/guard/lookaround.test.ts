// Lookaround patterns: Guardian's own adaptive rule loads and behaves as written; the RE2 form
// without the lookarounds prefilters; a catastrophic pattern is stopped at its time limit.
import { describe, expect, it } from "vitest";
import { agentScope } from "./context.js";
import { runGuard } from "./guard.js";
import { BoundedLookaround, LOOKAROUND_LIMIT_MS, stripLookarounds } from "./lookaround.js";
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
        spec: { adaptive_rules: [{ name: "block_external_drive_writes", match_field: "args", pattern: "/Volumes/(?!MAC_MINI_1TB)", action: "deny", reason: "Writes to non-canonical external drives are blocked" }] },
      },
    ]);
    const scope = agentScope({ spec: { tools: ["fs.write"] } });
    const write = (path: string) => runGuard({ tool: "fs.write", args: { path, content: "x" }, step: 1 }, { policy, scope, history: [] });
    expect(write("/Volumes/USB_STICK/dump.txt")).toMatchObject({ approved: false, check: "adaptive_rule", reason: "adaptive_rule: block_external_drive_writes" });
    expect(write("/Volumes/MAC_MINI_1TB/backup.txt")).toEqual({ approved: true });
    expect(write("/Volumes/")).toMatchObject({ approved: false });
    // As written, unanchored: any "/Volumes/" not followed by MAC_MINI_1TB.
    expect(write("/workspace/Volumes/notes.txt")).toMatchObject({ approved: false });
    expect(write("/workspace/Volumes-notes.txt")).toEqual({ approved: true });
    // Nested in other arguments and in encoded views, as every pattern.
    expect(runGuard({ tool: "fs.write", args: { opts: { targets: ["/tmp/a", "/Volumes/EVIL/x"] } }, step: 1 }, { policy, scope, history: [] }).approved).toBe(false);
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

  it("bounds matching time: a catastrophic pattern counts as matched when it runs out of time", () => {
    const b = BoundedLookaround.compile("^(?=x)?(a+)+b$|^(?!y)(a+)+c$");
    // A quantified lookaround is refused; this one is not quantified in its first alternative only.
    expect(typeof b).toBe("string");
    // The stripped pattern matches everything; the lookahead backtracks exponentially on "aaa...c".
    const bad = BoundedLookaround.compile("(?=(a+)+b)");
    if (typeof bad === "string") throw new Error(bad);
    const started = performance.now();
    expect(bad.matchesAny([`${"a".repeat(40)}c`])).toBe(true);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(LOOKAROUND_LIMIT_MS * 0.8);
    expect(bad.matchesAny(["aaab"])).toBe(true);
    // The prefilter (RE2, linear) rejects what cannot match without running the backtracking regex.
    const guarded = BoundedLookaround.compile("^x(?=(a+)+b)");
    if (typeof guarded === "string") throw new Error(guarded);
    expect(guarded.matchesAny([`${"a".repeat(40)}c`])).toBe(false);
  });

  it("still refuses what is neither RE2 nor lookaround over RE2, naming the rule", () => {
    const compile = (pattern: string) => () => compilePolicy([{ name: "p", spec: { adaptive_rules: [{ name: "r", match_field: "args", pattern, action: "deny", reason: "x" }] } }]);
    expect(compile("(a)\\1")).toThrow(PolicyError);
    expect(compile("(a)\\1")).toThrow(/GuardPolicy p: adaptive_rules\[0\] \(r\): .*not supported by RE2/);
    expect(compile("(?=a)(b)\\1")).toThrow(/adaptive_rules\[0\] \(r\): .*backreference/);
    expect(compile("a(?=b)*")).toThrow(/quantified or unbalanced lookaround/);
  });
});
