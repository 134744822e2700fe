// Tool confinement on a real filesystem: `..` and symlinks cannot leave the mounts, and
// read-only mounts refuse writes.
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS, runBuiltin } from "./builtin-tools.js";
import { Confinement, ConfinementError } from "./confinement.js";

describe("Confinement", () => {
  let root: string;
  let ws: string;
  let ro: string;
  let outside: string;
  let c: Confinement;

  beforeAll(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), "gavel-confine-")));
    ws = join(root, "workspace");
    ro = join(root, "data");
    outside = join(root, "outside");
    for (const d of [ws, ro, outside, join(ws, "sub")]) await mkdir(d, { recursive: true });
    await writeFile(join(outside, "secret.txt"), "top secret");
    await writeFile(join(ws, "a.txt"), "hello");
    await writeFile(join(ro, "r.txt"), "read me");
    await symlink(join(outside, "secret.txt"), join(ws, "link-to-secret"));
    await symlink(outside, join(ws, "link-to-outside"));
    await symlink(join(ws, "a.txt"), join(ws, "link-inside"));
    c = await Confinement.of([
      { path: ws, readOnly: false },
      { path: ro, readOnly: true },
    ]);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("reads inside the mounts, relative paths from the first mount", async () => {
    expect(await c.forRead(join(ws, "a.txt"))).toBe(join(ws, "a.txt"));
    expect(await c.forRead("a.txt")).toBe(join(ws, "a.txt"));
    expect(await c.forRead(join(ws, "sub", "..", "a.txt"))).toBe(join(ws, "a.txt"));
    expect(await c.forRead(join(ro, "r.txt"))).toBe(join(ro, "r.txt"));
    expect(await c.forRead(join(ws, "link-inside"))).toBe(join(ws, "a.txt"));
  });

  it.each([
    ["an absolute path outside", () => join(root, "outside", "secret.txt")],
    ["a .. escape", () => join(ws, "..", "outside", "secret.txt")],
    ["a relative .. escape", () => "../outside/secret.txt"],
    ["/etc/../etc/passwd", () => "/etc/../etc/passwd"],
    ["a symlink to a file outside", () => join(ws, "link-to-secret")],
    ["a path through a symlinked directory", () => join(ws, "link-to-outside", "secret.txt")],
  ])("refuses to read %s", async (_what, path) => {
    await expect(c.forRead(path())).rejects.toBeInstanceOf(ConfinementError);
  });

  it("refuses writes through symlinks, .., and into read-only mounts", async () => {
    await expect(c.forWrite(join(ws, "link-to-outside", "new.txt"))).rejects.toThrow(/outside the mounted volumes/);
    await expect(c.forWrite(join(ws, "link-to-secret"))).rejects.toThrow(/outside the mounted volumes/);
    await expect(c.forWrite(join(ws, "link-to-outside", "deep", "er", "x.txt"))).rejects.toThrow(/outside/);
    await expect(c.forWrite(join(ws, "..", "outside", "x.txt"))).rejects.toThrow(/outside/);
    await expect(c.forWrite(join(ro, "r.txt"))).rejects.toThrow(/read-only/);
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("top secret");
  });

  it("writes new files and creates parents inside a writable mount", async () => {
    const target = await c.forWrite(join(ws, "new", "deep", "f.txt"));
    expect(target).toBe(join(ws, "new", "deep", "f.txt"));
    const ctx = { entry: "fs.write", confinement: c, limits: DEFAULT_LIMITS, env: {} };
    await runBuiltin("fs.write", { path: "made/by/tool.txt", content: "x" }, ctx);
    expect(await readFile(join(ws, "made", "by", "tool.txt"), "utf8")).toBe("x");
  });

  it("built-in fs tools go through the same checks", async () => {
    const ctx = { entry: "fs.read", confinement: c, limits: DEFAULT_LIMITS, env: {} };
    expect(await runBuiltin("fs.read", { path: join(ws, "a.txt") }, ctx)).toBe("hello");
    await expect(runBuiltin("fs.read", { path: join(ws, "link-to-secret") }, ctx)).rejects.toBeInstanceOf(ConfinementError);
    await expect(runBuiltin("fs.list", { path: join(ws, "link-to-outside") }, ctx)).rejects.toBeInstanceOf(ConfinementError);
    const listing = JSON.parse(await runBuiltin("fs.list", { path: ws }, ctx)) as { entries: { name: string; type: string }[] };
    expect(listing.entries).toContainEqual({ name: "link-to-secret", type: "symlink" });
    expect(listing.entries.find((e) => e.name === "a.txt")).toMatchObject({ type: "file", size: 5 });
    await expect(runBuiltin("fs.read", { path: 42 }, ctx)).rejects.toThrow(/"path" must be a string/);
  });

  it("caps what fs.read returns", async () => {
    await writeFile(join(ws, "big.txt"), "y".repeat(5000));
    const ctx = { entry: "fs.read", confinement: c, limits: { ...DEFAULT_LIMITS, outputCapBytes: 100 }, env: {} };
    const text = await runBuiltin("fs.read", { path: "big.txt" }, ctx);
    expect(text).toMatch(/^y{100}\n\[truncated at 100 bytes\]$/);
  });

  it("refuses a mount that does not exist, and file tools without mounts", async () => {
    await expect(Confinement.of([{ path: join(root, "nope"), readOnly: false }])).rejects.toThrow(/does not exist/);
    const none = await Confinement.of([]);
    await expect(none.forRead("/tmp")).rejects.toThrow(/no volumes are mounted/);
  });
});
