// `gavel guard check` against the policy fixtures: exit 0 allowed, 1 denied, 2 bad input.
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { main } from "./app.js";

const fixtures = fileURLToPath(new URL("../../test/fixtures/policies/", import.meta.url));

async function check(...argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d: Buffer) => (out += d.toString()));
  stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await main(["guard", "check", ...argv], { stdout, stderr, stdin: new PassThrough(), env: {}, cwd: fixtures });
  return { code, out: out === "" ? undefined : (JSON.parse(out) as Record<string, unknown>), err };
}
const base = ["--agent", "agent.yaml", "--policy", "team-a.yaml", "--policy", "default.yaml"];

describe("gavel guard check", () => {
  it("allows a harmless call (exit 0) and reports flags", async () => {
    expect(await check(...base, "--tool", "fs.list", "--args", '{"path":"/workspace"}')).toEqual({
      code: 0,
      out: { approved: true, blocked_by: "none", check: null, reason: null, flags: [] },
      err: "",
    });
    const flagged = await check(...base, "--tool", "cmd.run", "--args", '{"command":"npm install left-pad"}');
    expect(flagged.code).toBe(0);
    expect(flagged.out).toMatchObject({ approved: true, check: "adaptive_rule", flags: ["flag_package_installs"] });
  });

  it("denies with the check and reason (exit 1)", async () => {
    expect(await check(...base, "--tool", "fs.read", "--args", '{"path":"~/.ssh/id_rsa"}')).toMatchObject({
      code: 1,
      out: { approved: false, blocked_by: "guard", check: "destructive_pattern", reason: String.raw`destructive_pattern: (^|/)\.ssh(/|$)` },
    });
    expect((await check(...base, "--tool", "legacy.exec", "--args", "{}")).out).toMatchObject({ check: "revocation", reason: "tool_revoked: replaced by cmd.run" });
    expect((await check(...base, "--tool", "net.fetch", "--args", "{}")).out).toMatchObject({ reason: "capability_boundary: missing tool:net.fetch" });
    expect((await check(...base, "--tool", "fs.read", "--args", '{"path":"/data/prod/x"}')).out).toMatchObject({ reason: "destructive_pattern: ^/data/prod(/|$)" });
    expect((await check(...base, "--tool", "fs.list", "--args", '{"path":"/Volumes/USB/x"}')).out).toMatchObject({ reason: "adaptive_rule: block_external_drive_writes" });
    expect((await check(...base, "--tool", "fs.list", "--args", '{"path":"/Volumes/MAC_MINI_1TB/x"}')).code).toBe(0);
  });

  it("evaluates sequence contracts against --history", async () => {
    expect((await check(...base, "--tool", "fs.delete", "--args", '{"path":"/workspace/a"}')).out).toMatchObject({ reason: "sequence_contract: read_before_delete" });
    expect((await check(...base, "--tool", "fs.delete", "--args", '{"path":"/workspace/a"}', "--history", '["fs.read","fs.list"]')).code).toBe(0);
    expect((await check(...base, "--tool", "fs.delete", "--args", "{}", "--history", '[{"tool":"fs.read","step":1}]', "--step", "9")).code).toBe(1);
  });

  it("without --agent, declares the tool and uses --capabilities as the scope", async () => {
    expect((await check("--policy", "default.yaml", "--tool", "cmd.run", "--args", '{"command":"ls"}')).out).toMatchObject({ reason: "capability_boundary: missing shell:safe|shell:full" });
    expect((await check("--policy", "default.yaml", "--tool", "cmd.run", "--args", '{"command":"ls"}', "--capabilities", "shell:full")).code).toBe(0);
  });

  it("exits 2 naming the flag, file or field on bad input", async () => {
    const cases: [string[], RegExp][] = [
      [["--args", "{}"], /--tool NAME is required/],
      [["--tool", "x", "--args", "{nope"], /--args is not valid JSON/],
      [["--tool", "x", "--args", "[1]"], /--args must be a JSON object/],
      [["--tool", "x", "--history", '[{"x":1}]'], /--history\[0\]/],
      [["--tool", "x", "--policy", "missing.yaml"], /cannot read missing.yaml/],
      [["--tool", "x", "--policy", "agent.yaml"], /--policy agent.yaml \(document 1\): kind must be GuardPolicy/],
      [["--tool", "x", "--policy", "guardian-lookahead.yaml"], /block_external_drive_writes/],
      [["--tool", "x", "--agent", "default.yaml"], /no document of kind Agent/],
    ];
    for (const [argv, message] of cases) {
      const r = await check(...argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.out).toBeUndefined();
    }
  });
});
