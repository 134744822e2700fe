import { describe, expect, it } from "vitest";
import { gavel } from "../../test/harness/cli.js";
import { commands } from "./commands.js";

describe("gavel CLI", () => {
  it("prints the version, as `version` and as `--version`", async () => {
    for (const arg of ["version", "--version"]) {
      const t = await gavel([arg]);
      expect(t.code).toBe(0);
      expect(t.out).toMatch(/^gavel \d+\.\d+\.\d+\n$/);
    }
  });
  it("refuses an unknown command with exit 2 and names it", async () => {
    const t = await gavel(["frobnicate"]);
    expect(t.code).toBe(2);
    expect(t.err).toContain('unknown command "frobnicate"');
  });
  it("lists every command but the hidden ones in the help, and shows one command's usage", async () => {
    const t = await gavel(["--help"]);
    expect(t.code).toBe(0);
    for (const c of commands) expect(t.out.includes(`  ${c.name} `)).toBe(c.hidden !== true);
    const u = await gavel(["help", "logs"]);
    expect(u.code).toBe(0);
    expect(u.out).toContain("usage: gavel logs EXECUTION [--iteration N] [--judge NAME] [-f]");
  }, 60_000);
  it("answers --help of every command and subcommand with its usage, never running it", async () => {
    for (const argv of [
      ["guard", "check", "--help"],
      ["guard", "tool-hash", "-h"],
      ["nats", "bootstrap", "--help"],
      ["run", "-f", "missing.yaml", "--help"],
    ]) {
      const t = await gavel(argv);
      expect(t.code, `${argv.join(" ")}: ${t.err}`).toBe(0);
      expect(t.out).toContain(`usage: gavel ${argv[0] ?? ""}`);
      expect(t.err).toBe("");
    }
  }, 60_000);
  it("lists each command with its module's own name and summary (the help loads no module)", async () => {
    for (const entry of commands) {
      const command = await entry.load();
      expect([command.name, command.summary]).toEqual([entry.name, entry.summary]);
    }
    // Importing every command (the Kubernetes client, NATS, Docker) takes seconds on a loaded machine.
  }, 60_000);
  it("Given an unknown resource type, get and describe exit 2 naming it, before reaching any cluster", async () => {
    for (const cmd of ["get", "describe"]) {
      const t = await gavel([cmd, "pods", "x"]);
      expect(t.code).toBe(2);
      expect(t.err).toContain('unknown resource type "pods"');
    }
  });
});
