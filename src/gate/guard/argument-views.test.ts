// The normalisations the guard's patterns see: shell words, paths, home, decodings, nesting.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { argumentViews } from "./argument-views.js";
import { deobfuscate } from "./decode.js";
import { expandHome, normalisePath, pathTokens } from "./paths.js";
import { shellNormalise } from "./shell-normalise.js";

describe("argument views", () => {
  it("reads rm's flags and operands canonically", () => {
    expect(shellNormalise("rm -r -f //")).toBe("rm -rf /");
    expect(shellNormalise("sudo /bin/rm --force --recursive -v /tmp/..")).toBe("sudo rm -rfv /");
    expect(shellNormalise(`"r"'m' -fr /`)).toBe("rm -rf /");
    expect(shellNormalise("ls|sh")).toBe("ls | sh");
  });

  it("normalises paths and expands the home directory", () => {
    expect(normalisePath("/etc/../etc//passwd", "/workspace")).toBe("/etc/passwd");
    expect(normalisePath("../../etc/passwd", "/workspace")).toBe("/etc/passwd");
    expect(normalisePath("file:///etc/shadow", "/workspace")).toBe("/etc/shadow");
    expect(expandHome("cat ~/.ssh/x $HOME/y ${HOME}/z ~bob/w", "/root")).toBe("cat /root/.ssh/x /root/y /root/z /home/bob/w");
    expect(expandHome("a~b", "/root")).toBe("a~b");
  });

  it("decodes percent, escapes, entities and lookalikes", () => {
    expect(deobfuscate("%252Fetc")).toBe("/etc");
    expect(deobfuscate("\\x72\\x6d")).toBe("rm");
    expect(deobfuscate("&#47;etc")).toBe("/etc");
    expect(deobfuscate("ｒ\u200bｍ")).toBe("rm");
  });

  it("includes every nested value and key, joined argv arrays, and decoded base64", () => {
    const views = argumentViews({
      a: { "k/e/y": [1, "x", { deep: "~/.ssh" }] },
      argv: ["rm", "-rf", "/"],
      b: Buffer.from("cat /etc/passwd").toString("base64"),
    });
    expect(views).toEqual(expect.arrayContaining(["k/e/y", "1", "x", "deep", "/root/.ssh", "rm -rf /", "cat /etc/passwd", "/etc/passwd"]));
  });

  it("leaves plain text alone", () => {
    expect(argumentViews({ msg: "hello world" })).toEqual(["msg", "hello world"]);
  });

  it("splits path tokens exactly as the separator regex does", () => {
    const text = fc
      .array(fc.constantFrom("/", "a", ".", " ", "\t", "\u00a0", "\u2028", "[", "]", "{", "'", "=", ":", "|", "-", "é"), { maxLength: 24 })
      .map((cs) => cs.join(""));
    fc.assert(
      fc.property(text, (t) => {
        expect(pathTokens(t)).toEqual(t.split(/[\s'"`=,:;|&<>(){}[\]]+/).filter((w) => w.includes("/")));
      }),
      { numRuns: 500 },
    );
  });
});
