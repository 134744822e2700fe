// cmd.run without a shell: word splitting, refused shell syntax, allowlist prefixes, and
// real runs with a timeout and an output cap.
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS, runBuiltin } from "./builtin-tools.js";
import { allowedBy, CommandRefused, parseAllowedCommand, splitCommand } from "./command-line.js";
import { Confinement } from "./confinement.js";

describe("splitCommand", () => {
  it.each([
    ["ls -la /workspace", ["ls", "-la", "/workspace"]],
    ["  echo   'a b'  \"c d\" e\\ f ", ["echo", "a b", "c d", "e f"]],
    ["echo ''", ["echo", ""]],
    ['echo "say \\"hi\\""', ["echo", 'say "hi"']],
  ])("splits %j", (line, argv) => {
    expect(splitCommand(line)).toEqual(argv);
  });

  it.each([
    "ls; rm -rf /",
    "ls | sh",
    "ls && rm x",
    "cat < /etc/passwd",
    "echo $(id)",
    "echo `id`",
    'echo "$HOME"',
    "ls\nrm -rf /",
    "echo 'open",
  ])("refuses %j", (line) => {
    expect(() => splitCommand(line)).toThrow(CommandRefused);
  });

  it("keeps metacharacters inside single quotes as text", () => {
    expect(splitCommand("echo 'a;b|c'")).toEqual(["echo", "a;b|c"]);
  });
});

describe("allowlist", () => {
  it("matches whole leading words", () => {
    expect(allowedBy(["npm", "test", "--", "-x"], ["pytest", "npm test"])).toBe(true);
    expect(allowedBy(["npm", "install"], ["npm test"])).toBe(false);
    expect(allowedBy(["npm", "testx"], ["npm test"])).toBe(false);
    expect(allowedBy(["npm"], ["npm test"])).toBe(false);
    expect(allowedBy(["/bin/pytest"], ["pytest"])).toBe(false);
    expect(allowedBy(["anything"], undefined)).toBe(true);
    expect(allowedBy(["ls"], [])).toBe(false);
  });

  it("names the allowlist when refusing", () => {
    expect(() => parseAllowedCommand("rm -rf /", ["ls", "cat"])).toThrow(/"rm -rf \/" is not on the cmd.run allowlist \("ls", "cat"\)/);
    expect(() => parseAllowedCommand("   ", undefined)).toThrow(/empty/);
  });
});

describe("cmd.run", () => {
  let ws: string;
  let c: Confinement;
  beforeAll(async () => {
    ws = await realpath(await mkdtemp(join(tmpdir(), "gavel-cmd-")));
    c = await Confinement.of([{ path: ws, readOnly: false }]);
  });
  afterAll(async () => {
    await rm(ws, { recursive: true, force: true });
  });
  const ctx = (allowlist?: string[], limits = DEFAULT_LIMITS) => ({
    entry: { name: "cmd.run", ...(allowlist ? { allowlist } : {}) },
    confinement: c,
    limits,
    env: { PATH: process.env.PATH },
  });

  it("runs an allowed command in the first mount and reports its output", async () => {
    const r = JSON.parse(await runBuiltin("cmd.run", { command: "pwd" }, ctx(["pwd"]))) as { exit_code: number; stdout: string };
    expect(r).toMatchObject({ exit_code: 0, stdout: `${ws}\n` });
    const f = JSON.parse(await runBuiltin("cmd.run", { command: "sh -c 'exit 3'" }, ctx())) as { exit_code: number };
    expect(f.exit_code).toBe(3);
  });

  it("refuses a command off the allowlist without running it", async () => {
    await expect(runBuiltin("cmd.run", { command: "touch x" }, ctx(["ls"]))).rejects.toThrow(/not on the cmd.run allowlist/);
    const r = JSON.parse(await runBuiltin("cmd.run", { command: "ls" }, ctx(["ls"]))) as { stdout: string };
    expect(r.stdout).not.toContain("x");
  });

  it("kills a command past its timeout, with its children", async () => {
    const started = Date.now();
    const r = JSON.parse(await runBuiltin("cmd.run", { command: "sh -c 'sleep 30 & sleep 30'", timeout_seconds: 0.5 }, ctx())) as {
      timed_out: boolean;
    };
    expect(r.timed_out).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("caps output", async () => {
    const r = JSON.parse(
      await runBuiltin("cmd.run", { command: "head -c 10000 /dev/zero" }, ctx(undefined, { ...DEFAULT_LIMITS, outputCapBytes: 1000 })),
    ) as { stdout: string; truncated: boolean };
    expect(r.truncated).toBe(true);
    expect(r.stdout.length).toBeLessThan(1100);
  });

  it("reports a missing program, and refuses a cwd outside the mounts", async () => {
    const r = JSON.parse(await runBuiltin("cmd.run", { command: "no-such-program-xyz" }, ctx())) as { exit_code: number; stderr: string };
    expect(r.exit_code).toBe(127);
    expect(r.stderr).toMatch(/cannot run "no-such-program-xyz"/);
    await expect(runBuiltin("cmd.run", { command: "ls", cwd: "/etc" }, ctx())).rejects.toThrow(/outside the mounted volumes/);
  });

  it("does not hand the worker's secrets to commands", async () => {
    const { commandEnvironment } = await import("./config.js");
    const env = commandEnvironment({
      PATH: process.env.PATH,
      GAVEL_NATS_CREDS: "SECRET-CREDS",
      GAVEL_LLM_API_KEY: "sk-1",
      OPENAI_API_KEY: "sk-2",
      HOME: "/root",
    });
    const r = JSON.parse(await runBuiltin("cmd.run", { command: "env" }, { ...ctx(), env })) as { stdout: string };
    expect(r.stdout).toContain("HOME=/root");
    expect(r.stdout).not.toMatch(/SECRET-CREDS|sk-1|sk-2/);
  });
});
