// gavel's lint rules on planted files: an import back up docs/layout.md's list, a reach into
// another folder's inside past its entry file, a file past the length limit, and length
// allowlist entries gone stale.
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ESLint, type Linter } from "eslint";
import tseslint from "typescript-eslint";
import { afterAll, describe, expect, it, vi } from "vitest";
import { gavelRules } from "./gavel-plugin.mjs";
import { parseFloors, readFloors } from "./layout-floors.mjs";

const REPO = dirname(dirname(fileURLToPath(import.meta.url)));

// Each case runs eslint a few times: seconds on a loaded two-core machine, not the default 5 s.
vi.setConfig({ testTimeout: 60_000 });

/** eslint with gavel's rules for root, parsing TypeScript without type information (fast). */
function linter(root: string): ESLint {
  const known = linters.get(root);
  if (known !== undefined) return known;
  const config: Linter.Config[] = [
    { files: ["**/*.ts"], languageOptions: { parser: tseslint.parser as Linter.Parser } },
    ...gavelRules(root),
  ];
  const made = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: config });
  linters.set(root, made);
  return made;
}
const linters = new Map<string, ESLint>();

/** The messages of gavel's rules for code planted at path (relative to root). */
async function lint(root: string, path: string, code: string): Promise<string[]> {
  const [result] = await linter(root).lintText(code, { filePath: join(root, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? "fatal"}: ${m.message}`);
}

describe("the floors of docs/layout.md", () => {
  it("are read from the page, top first, sub-folders not floors of their own", () => {
    const floors = readFloors(REPO);
    expect(floors[0]).toBe("src/cli/");
    expect(floors.indexOf("src/engine/")).toBeGreaterThan(floors.indexOf("src/gate/"));
    expect(floors.indexOf("src/api/")).toBeLessThan(floors.indexOf("src/errors.ts"));
    expect(floors).not.toContain("src/runtime/kubernetes/");
    expect(() => parseFloors("# no block here\n", "x.md")).toThrow(/x\.md: no fenced block/);
    expect(() => parseFloors("```\nsrc/a/ one\nsrc/a/ twice\n```\n", "x.md")).toThrow(/"src\/a\/" is listed twice/);
  });

  it("are enforced by the build's own eslint config on every file of src/", async () => {
    const config = (await new ESLint({ cwd: REPO }).calculateConfigForFile(join(REPO, "src/engine/planted.ts"))) as Linter.Config;
    expect(config.rules?.["gavel/floors"]).toEqual([2]);
    expect(config.rules?.["gavel/max-lines"]).toEqual([2]);
  });

  it("fail a planted import that runs back up the list, naming both floors", async () => {
    const messages = await lint(
      REPO,
      "src/engine/planted.ts",
      'import { commands } from "../cli/commands.js";\nexport const n = commands.length;\n',
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(
      /^gavel\/floors: src\/engine\/planted\.ts \(floor src\/engine\/\) imports src\/cli\/commands\.ts \(floor src\/cli\/, above it/,
    );
    // The same through a type import, a re-export and a dynamic import.
    const kinds = await lint(
      REPO,
      "src/api/planted.ts",
      'import type { Verdict } from "../engine/gradient.js";\nexport * from "../gate/gate.js";\nexport const v = (): Promise<unknown> => import("../cli/app.js");\nexport type V = Verdict;\n',
    );
    expect(kinds).toHaveLength(3);
  });

  it("let imports run down the list, within a floor, and to node's and npm's modules", async () => {
    const code =
      'import { join } from "node:path";\nimport pino from "pino";\nimport { GavelError } from "../errors.js";\nimport { gradient } from "../engine/gradient.js";\nimport { x } from "./runtime/health.js";\nexport { join, pino, GavelError, gradient, x };\n';
    expect(await lint(REPO, "src/controller/planted.ts", code)).toEqual([]);
  });

  it("fail a planted reach into another folder's sub-folder, naming its entry file, and src/ importing test/", async () => {
    const inside = await lint(REPO, "src/cli/planted.ts", 'import { runGuard } from "../gate/guard/guard.js";\nexport { runGuard };\n');
    expect(inside).toEqual([
      expect.stringMatching(
        /^gavel\/floors: src\/cli\/planted\.ts reaches into src\/gate\/guard\/guard\.ts, inside src\/gate\/: import what src\/gate\/guard\.ts, the entry file beside src\/gate\/guard\/, exposes/,
      ),
    ]);
    // Deeper inside names the same entry file; a type import counts as much as a value import.
    const deeper = await lint(
      REPO,
      "src/controller/planted.ts",
      'import type { Where } from "../gate/guard/effects/rules.js";\nexport type F = Where;\n',
    );
    expect(deeper).toEqual([
      expect.stringMatching(/reaches into src\/gate\/guard\/effects\/rules\.ts, inside src\/gate\/: import what src\/gate\/guard\.ts/),
    ]);
    // The entry file itself is the face: importing it passes.
    expect(await lint(REPO, "src/cli/planted.ts", 'import { runGuard } from "../gate/guard.js";\nexport { runGuard };\n')).toEqual([]);
    const outside = await lint(REPO, "src/cli/planted.ts", 'import { x } from "../../test/harness/paths.js";\nexport { x };\n');
    expect(outside).toEqual([expect.stringMatching(/imports test\/harness\/paths\.ts, outside src\//)]);
  });

  it("pass today's files as they are (they import other folders' insides through entry files)", async () => {
    for (const path of ["src/cli/guard.ts", "src/cli/controller.ts", "src/controller/execution-pods.ts"]) {
      expect(await lint(REPO, path, readFileSync(join(REPO, path), "utf8"))).toEqual([]);
    }
  });

  it("exempt a test beside the code", async () => {
    expect(
      await lint(REPO, "src/engine/planted.test.ts", 'import { commands } from "../cli/commands.js";\nexport const n = commands.length;\n'),
    ).toEqual([]);
  });
});

describe("the length allowlist", () => {
  const root = mkdtempSync(join(tmpdir(), "gavel-lint-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string): void => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  write("docs/layout.md", "# Where code lives\n\n```\nsrc/a/   top\n  sub/   inside a\nsrc/b/   bottom\n```\n");
  write("src/a/big.ts", "");
  write("lint/max-lines-allowlist.json", JSON.stringify({ "src/a/big.ts": 600 }));
  const lines = (n: number): string => "export const x = 1;\n".repeat(n);

  it("fail a file past 500 lines, a listed file that grew, and a listed file now within the limit", async () => {
    expect(await lint(root, "src/a/new.ts", lines(500))).toEqual([]);
    expect(await lint(root, "src/a/new.ts", lines(501))).toEqual([
      expect.stringMatching(/^gavel\/max-lines: src\/a\/new\.ts has 501 lines, past 500/),
    ]);
    expect(await lint(root, "src/a/big.ts", lines(600))).toEqual([]);
    expect(await lint(root, "src/a/big.ts", lines(601))).toEqual([
      expect.stringMatching(/has 601 lines, past the 600 lint\/max-lines-allowlist\.json lets it keep/),
    ]);
    expect(await lint(root, "src/a/big.ts", lines(480))).toEqual([expect.stringMatching(/has 480 lines, within 500: remove its entry/)]);
  });

  it("refuse an entry naming a file that does not exist", () => {
    write("lint/max-lines-allowlist.json", JSON.stringify({ "src/a/gone.ts": 700 }));
    expect(() => gavelRules(root)).toThrow("lint/max-lines-allowlist.json names src/a/gone.ts, which does not exist");
  });
});
