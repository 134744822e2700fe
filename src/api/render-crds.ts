// Writes crds/*.yaml from src/api/crds.ts, or with --check fails when they differ (make verify).
// Usage: node dist/src/api/render-crds.js [--check] [CRDS_DIR]
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { stringify } from "yaml";
import { crds, type CrdDocument } from "./crds.js";

/** The YAML text of one CRD as stored under crds/ (symbol-keyed TypeScript twins are dropped). */
export function renderCrd(crd: CrdDocument): string {
  const plain = JSON.parse(JSON.stringify(crd)) as unknown;
  const header =
    `# ${crd.spec.names.kind} (${crd.metadata.name}). GENERATED from src/api/crds.ts by src/api/render-crds.ts:\n` +
    "# edit the TypeScript source and run `node dist/src/api/render-crds.js`; make verify fails on drift.\n";
  return header + stringify(plain, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Files under dir whose content differs from the rendering (or is missing). */
export async function driftedCrds(dir: string): Promise<string[]> {
  const drifted: string[] = [];
  for (const { file, crd } of crds) {
    const current = await readFile(join(dir, file), "utf8").catch(() => "");
    if (current !== renderCrd(crd)) drifted.push(file);
  }
  return drifted;
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes("--check");
  const dir = argv.find((a) => !a.startsWith("--")) ?? "crds";
  if (check) {
    const drifted = await driftedCrds(dir);
    for (const f of drifted) process.stderr.write(`${join(dir, f)} differs from src/api/crds.ts; run node dist/src/api/render-crds.js\n`);
    return drifted.length === 0 ? 0 : 1;
  }
  for (const { file, crd } of crds) await writeFile(join(dir, file), renderCrd(crd));
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
