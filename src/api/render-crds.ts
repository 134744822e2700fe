// Writes crds/*.yaml from the CRDs src/api/crds.ts lists, or with --check fails when they differ (make verify).
// Also writes the Agent admission policy to manifests/ (beside CRDS_DIR), which the harness and
// operators apply after the CRDs.
// Usage: node dist/src/api/render-crds.js [--check] [CRDS_DIR] | --policy (print the Agent admission policy)
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { stringify } from "yaml";
import { agentAdmissionPolicy, type PolicyDocument } from "./admission-policy.js";
import { crds, type CrdDocument } from "./crds.js";

/** The YAML text of one CRD as stored under crds/ (symbol-keyed TypeScript twins are dropped). */
export function renderCrd(crd: CrdDocument): string {
  const plain = JSON.parse(JSON.stringify(crd)) as unknown;
  const header =
    `# ${crd.spec.names.kind} (${crd.metadata.name}). GENERATED from src/api/crds.ts by src/api/render-crds.ts:\n` +
    "# edit the TypeScript source and run `node dist/src/api/render-crds.js`; make verify fails on drift.\n";
  return header + stringify(plain, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** The YAML text of the admission policy documents. */
export function renderPolicy(docs: PolicyDocument[]): string {
  const header =
    "# ValidatingAdmissionPolicy for Agents: the rules on fields that have no structural type (execution.validation, tools entries).\n" +
    "# GENERATED from src/api/crds.ts by src/api/render-crds.ts; apply after crds/: kubectl apply --server-side -f manifests/\n";
  return header + docs.map((d) => stringify(d, { lineWidth: 0 })).join("---\n");
}

/**
 * Every generated file: path under crds/ and content. The admission policy is not among them:
 * anything under crds/ is waited on for condition=established (test/harness/control-plane.sh).
 */
export function renderedFiles(): { file: string; text: string }[] {
  return crds.map(({ file, crd }) => ({ file, text: renderCrd(crd) }));
}

/** Where the admission policy is written, relative to the parent of the CRD directory. */
export const POLICY_FILE = join("manifests", "agents-admission-policy.yaml");

/** Every generated file with its path: the CRDs under crdsDir and the policy under manifests/. */
function generated(crdsDir: string): { path: string; text: string }[] {
  return [
    ...renderedFiles().map(({ file, text }) => ({ path: join(crdsDir, file), text })),
    { path: join(dirname(crdsDir), POLICY_FILE), text: renderPolicy(agentAdmissionPolicy()) },
  ];
}

/** Generated files whose content differs from the rendering (or is missing). */
export async function driftedCrds(dir: string): Promise<string[]> {
  const drifted: string[] = [];
  for (const { path, text } of generated(dir)) {
    const current = await readFile(path, "utf8").catch(() => "");
    if (current !== text) drifted.push(path);
  }
  return drifted;
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--policy")) {
    process.stdout.write(renderPolicy(agentAdmissionPolicy()));
    return 0;
  }
  const check = argv.includes("--check");
  const dir = argv.find((a) => !a.startsWith("--")) ?? "crds";
  if (check) {
    const drifted = await driftedCrds(dir);
    for (const f of drifted) process.stderr.write(`${f} differs from src/api/crds.ts; run node dist/src/api/render-crds.js\n`);
    return drifted.length === 0 ? 0 : 1;
  }
  for (const { path, text } of generated(dir)) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  }
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
