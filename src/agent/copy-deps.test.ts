// copy-deps.mjs, the agent and controller images' dependency copier: which packages an entry
// point's compiled imports reach.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const COPY_DEPS = join(import.meta.dirname, "copy-deps.mjs");
let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("copy-deps.mjs", () => {
  it("copies the packages an entry imports and does not read prose in a string as an export", () => {
    dir = mkdtempSync(join(tmpdir(), "copy-deps-"));
    const lock = { packages: { "": {}, "node_modules/yaml": { version: "2.0.0" }, "node_modules/unused": { version: "1.0.0" } } };
    writeFileSync(join(dir, "package-lock.json"), JSON.stringify(lock));
    for (const p of ["yaml", "unused"]) {
      mkdirSync(join(dir, "node_modules", p), { recursive: true });
      writeFileSync(join(dir, "node_modules", p, "package.json"), `{"name":"${p}"}`);
    }
    // As tsc compiles src/cli/audit.ts: a message that says "export" before a quote.
    writeFileSync(
      join(dir, "main.js"),
      'import { parse } from "yaml";\nthrow new Error(sub === undefined ? "missing subcommand: export" : `unknown subcommand "${sub}"`);\n',
    );
    const out = execFileSync(process.execPath, [COPY_DEPS, dir, join(dir, "out"), join(dir, "main.js")], { encoding: "utf8" });
    expect(out).toMatch(/^imports yaml; 1 packages: yaml/);
    expect(existsSync(join(dir, "out", "node_modules", "yaml", "package.json"))).toBe(true);
    expect(existsSync(join(dir, "out", "node_modules", "unused"))).toBe(false);
  });
});
