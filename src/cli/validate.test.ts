// `gavel validate` over the fixture corpus: every bad manifest is refused naming its field (or its
// YAML line), the reference manifests pass, and usage errors exit 2.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gavel } from "../../test/harness/cli.js";

const repo = join(import.meta.dirname, "..", "..");
const badDir = "test/fixtures/bad";

const validate = (...argv: string[]) => gavel(argv, { cwd: repo });
const validateWithStdin = (input: string, ...argv: string[]) => gavel(argv, { cwd: repo, stdin: input });

/** The `# expect: PATH` header of a bad fixture. */
export function expectedPath(file: string): string {
  const m = /^# expect: (.+)$/m.exec(readFileSync(join(repo, file), "utf8"));
  if (m?.[1] === undefined) throw new Error(`${file} has no "# expect:" line`);
  return m[1].trim();
}

describe("gavel validate", () => {
  const bad = readdirSync(join(repo, badDir)).filter((f) => f.endsWith(".yaml"));

  it("has a corpus of at least 40 bad manifests", () => {
    expect(bad.length).toBeGreaterThanOrEqual(40);
  });

  for (const f of bad) {
    it(`refuses ${f}`, async () => {
      const file = `${badDir}/${f}`;
      const expected = expectedPath(file);
      const r = await validate("validate", "-f", file);
      expect(r.code).toBe(1);
      const yamlLine = /^yaml line (\d+)$/.exec(expected);
      if (yamlLine) {
        expect(r.out).toContain(`${file}:${yamlLine[1]}:doc#1: YAML syntax error at line ${yamlLine[1]}`);
      } else {
        const lines = r.out.split("\n").filter((l) => l.startsWith(`${file}:doc#`) && !l.includes(": warning: "));
        expect(lines.length).toBeGreaterThan(0);
        // Each error line is file:doc#N: path: message, and one names the expected field.
        expect(lines.some((l) => l.replace(/^[^:]+:doc#\d+: /, "").startsWith(expected))).toBe(true);
      }
    });
  }

  it("reports the document index in multi-document files", async () => {
    const r = await validate("validate", "-f", `${badDir}/multi-doc-second-bad.yaml`);
    expect(r.out).toMatch(
      /multi-doc-second-bad\.yaml:doc#2: spec\.execution\.validation\[0\]\.judge_agent: a semantic validator needs judge_agent/,
    );
    expect(r.out).not.toMatch(/doc#1: (?!warning)/);
  });

  it("accepts every reference manifest, with warnings only (metadata.version, judges deployed elsewhere)", async () => {
    const r = await validate("validate", "-f", "test/fixtures/reference");
    expect(r.out).toMatch(/valid\n$/);
    expect(r.code).toBe(0);
    expect(r.out).toContain("av-08-code-quality-judge.yaml:doc#1: warning: metadata.version:");
    // code-quality-judge is among the given manifests: the semantic fragment naming it gets no warning.
    expect(r.out).not.toContain('judge Agent "code-quality-judge"');
    expect(r.out).toContain('judge Agent "security-judge" does not exist among the given manifests');
  });

  it("cross-validates the documents given together", async () => {
    const r = await validate("validate", "-f", "test/fixtures/bad/cross-object/judges.yaml");
    expect(r.code).toBe(1);
    expect(r.out).toContain('doc#1: spec.execution.validation[0].judge_agent: Agent "worker" is not a judge');
    expect(r.out).toContain('doc#1: spec.execution.tool_validation[0].judge_agent: judge "slow-judge" has execution.mode iterative');
    expect(r.out).toContain('doc#3: spec.input_schema.properties.secret_sauce: gavel cannot fill judge input "secret_sauce"');
    expect(r.out).toContain('doc#4: spec.input.output: required by Agent "picky-judge" spec.input_schema');
    expect(r.out).toContain('doc#4: spec.input.secret_sauce: must be string, per Agent "picky-judge" spec.input_schema');
    expect(r.out).toContain('doc#5: warning: spec.agentRef.name: Agent "deployed-elsewhere" does not exist among the given manifests');
  });

  it("reads manifests from stdin with -f -", async () => {
    const r = await validateWithStdin(
      "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec: {execution: {mode: twice}}\n",
      "validate",
      "-f",
      "-",
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain("<stdin>:doc#1: spec.execution.mode: must be one of: one-shot, iterative");
  });

  it("warns about regex patterns RE2 cannot run, without failing", async () => {
    const r = await validateWithStdin(
      "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec: {execution: {validation: [{type: regex, pattern: 'a(?!b)'}]}}\n",
      "validate",
      "-f",
      "-",
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /<stdin>:doc#1: warning: spec\.execution\.validation\[0\]\.pattern: regex pattern "a\(\?!b\)" is not supported by RE2/,
    );
  });

  it("warns when a regex reads stdout of an image whose program gavel does not know (merged with stderr on Kubernetes); not for a declared command, gavel's images or a file target", async () => {
    const agent = (runtime: string, validation = "[{type: regex, pattern: '^ok$'}]") =>
      `apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec: {runtime: ${runtime}, execution: {validation: ${validation}}}\n`;
    const r = await validateWithStdin(agent("{image: 'python:3.12-slim'}"), "validate", "-f", "-");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /<stdin>:doc#1: warning: spec\.execution\.validation\[0\]: reads stdout, but gavel does not know the program of image python:3\.12-slim .*declare spec\.runtime\.command/,
    );
    for (const quiet of [
      agent("{image: 'python:3.12-slim', command: [python, main.py]}"),
      agent("{image: 'gavel/agent:0.1.0'}"),
      agent("{image: 'python:3.12-slim'}", "[{type: regex, pattern: '^ok$', target: /workspace/out.txt}]"),
    ]) {
      expect((await validateWithStdin(quiet, "validate", "-f", "-")).out).not.toMatch(/reads stdout/);
    }
  });

  it("exits 2 on usage errors", async () => {
    expect((await validate("validate")).code).toBe(2);
    expect((await validate("validate", "-f", "no/such/file.yaml")).code).toBe(2);
    expect((await validate("validate", "--bogus")).code).toBe(2);
  });
});
