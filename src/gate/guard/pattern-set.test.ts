// A built-in pattern of plain literals runs as a JavaScript RegExp (ADR 0043): it must find
// exactly the texts RE2 finds, and every other pattern must stay with RE2.
import fc from "fast-check";
import { RE2JS } from "re2js";
import { describe, expect, it } from "vitest";
import { DESTRUCTIVE_PATTERNS, FORBIDDEN_PATHS } from "./builtin-patterns.js";
import { PatternSet, plainLiteralPattern } from "./pattern-set.js";

const BUILTINS = [...DESTRUCTIVE_PATTERNS, ...FORBIDDEN_PATHS].map((p) => p.pattern);

describe("plain literal patterns", () => {
  it("takes literals, escaped punctuation, anchors, groups, | and ? after an atom", () => {
    for (const p of [
      "abc",
      String.raw`169\.254\.169\.254`,
      "--no-preserve-root",
      "^/etc/(passwd|shadow)",
      "^/x(/|$)",
      String.raw`^/(var/)?run/docker\.sock$`,
      "a?b",
      "()",
      "(a|)",
      String.raw`\(\)\[\]\{\}\*\+\?\.\\\|\^\$`,
    ])
      expect(plainLiteralPattern(p), p).toBe(true);
  });

  it("refuses whatever RE2 and JavaScript may read differently", () => {
    for (const p of [
      "a.b",
      String.raw`a\sb`,
      String.raw`\bword`,
      String.raw`\d`,
      String.raw`\x41`,
      String.raw`\n`,
      "[ab]",
      "a*",
      "a+",
      "a{2}",
      "(?i)a",
      "(?:a)",
      "(?=a)",
      "a??",
      "?a",
      "|?",
      "(a",
      "a)",
      "é",
      "a]",
      "a}",
      "\\",
    ])
      expect(plainLiteralPattern(p), p).toBe(false);
  });

  it("names the built-in patterns it takes", () => {
    expect(BUILTINS.filter(plainLiteralPattern)).toEqual([
      String.raw`169\.254\.169\.254`,
      "--no-preserve-root",
      "^/etc/(passwd|shadow|sudoers)",
      "^/etc/ssh(/|$)",
      "^/root(/|$)",
      "^/boot(/|$)",
      "^/sys(/|$)",
      "^/dev/(sd|nvme|mmcblk|loop)",
      String.raw`\.aws/credentials`,
      String.raw`\.gnupg(/|$)`,
      "^/proc/(self|thread-self)/(environ|mem|root|cwd|fd)",
      "^/(var/)?run/secrets(/|$)",
      String.raw`^/(var/)?run/docker\.sock$`,
      String.raw`\.kube/config$`,
    ]);
  });

  const piece = fc.constantFrom(
    "a",
    "b",
    "/",
    "-",
    "ab",
    String.raw`\.`,
    String.raw`\(`,
    String.raw`\$`,
    "^",
    "$",
    "(a|b)",
    "(ab)?",
    "a?",
    "(|/)",
    "(/|$)",
    "(^|/)",
  );
  const pattern = fc
    .array(piece, { minLength: 1, maxLength: 5 })
    .chain((ps) => fc.constantFrom(ps.join(""), ps.join("|"), `(${ps.join("")})?x`));
  const text = fc
    .array(fc.constantFrom("a", "b", "A", "/", "-", ".", "(", "$", "\n", "\r", "\u2028", "x", "é", "\ud83d\ude00"), { maxLength: 10 })
    .map((cs) => cs.join(""));

  it("finds a plain pattern in exactly the texts RE2 finds it in", () => {
    fc.assert(
      fc.property(pattern, fc.array(text, { minLength: 1, maxLength: 6 }), (p, texts) => {
        if (!plainLiteralPattern(p)) return;
        const re2 = RE2JS.compile(p);
        const js = new RegExp(p);
        for (const t of texts) expect(js.test(t), `${p} on ${JSON.stringify(t)}`).toBe(re2.matcher(t).find());
      }),
      { numRuns: 1000 },
    );
  });

  it("gives the built-in set the decisions RE2 gives, text by text", () => {
    const samples = [
      "/etc/passwd",
      "/etc/passwd\n",
      "x/etc/passwd",
      "/etc/shadow-",
      "/etc/ssh",
      "/etc/ssh/",
      "/etc/sshd",
      "/root",
      "/root/",
      "/rooted",
      "/boot/x",
      "/sys",
      "/sys\n",
      "/dev/sda",
      "/dev/loop0",
      "/dev/null",
      "~/.aws/credentials",
      "/h/.gnupg",
      "/h/.gnupgx",
      "/proc/self/environ",
      "/proc/thread-self/fd/1",
      "/proc/1/environ",
      "/run/secrets/t",
      "/var/run/secrets",
      "/var/run/secretsx",
      "/run/docker.sock",
      "/var/run/docker.sock\n",
      "/var/run/dockerXsock",
      "/h/.kube/config",
      "/h/.kube/config.bak",
      "169.254.169.254",
      "169x254.169.254",
      "rm --no-preserve-root /",
      "plain",
    ];
    const viaRe2 = PatternSet.compile(BUILTINS.map((p) => ({ pattern: p, label: p })));
    const builtin = PatternSet.compile(BUILTINS.map((p) => ({ pattern: p, label: p, builtin: true as const })));
    for (const t of samples) expect(builtin.allMatches([t]), t).toEqual(viaRe2.allMatches([t]));
    expect(builtin.allMatches(samples)).toEqual(viaRe2.allMatches(samples));
    expect(builtin.allMatches(["/etc/passwd"]).map((i) => BUILTINS[i])).toEqual(["^/etc/(passwd|shadow|sudoers)"]);
  });
});
