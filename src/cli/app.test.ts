import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { main } from "./app.js";

function io() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d: Buffer) => (out += d.toString()));
  stderr.on("data", (d: Buffer) => (err += d.toString()));
  return { io: { stdout, stderr, stdin: new PassThrough(), env: {}, cwd: "/" }, out: () => out, err: () => err };
}

describe("gavel CLI", () => {
  it("prints the version", async () => {
    const t = io();
    expect(await main(["version"], t.io)).toBe(0);
    expect(t.out()).toMatch(/^gavel \d+\.\d+\.\d+\n$/);
  });
  it("refuses an unknown command with exit 2 and names it", async () => {
    const t = io();
    expect(await main(["frobnicate"], t.io)).toBe(2);
    expect(t.err()).toContain('unknown command "frobnicate"');
  });
});
