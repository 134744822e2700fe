// Manifest files the offline commands read (`gavel guard check`, `gavel replay`): Agents and
// GuardPolicies as a user would kubectl apply them, refused as the API server would refuse
// them, naming the file, the document and the field.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Agent, GuardPolicySpec } from "../api/types.js";
import type { validateManifest as ValidateManifest } from "../api/validate.js";
import { DEFAULT_GUARD_POLICY } from "../api/types.js";
import { compilePolicy, type NamedPolicy, PolicyError } from "../gate/guard.js";
import { UsageError } from "./command.js";
import { messageOf } from "../errors.js";

/** The --policy files merged (`default` first) and compiled; a policy that cannot compile is a UsageError. */
export async function checkPolicy(files: string[], cwd: string): Promise<ReturnType<typeof compilePolicy>> {
  const policies: NamedPolicy[] = [];
  for (const file of files) policies.push(...(await readPolicies(resolve(cwd, file), file)));
  const ordered = [...policies.filter((p) => p.name === DEFAULT_GUARD_POLICY), ...policies.filter((p) => p.name !== DEFAULT_GUARD_POLICY)];
  try {
    return compilePolicy(ordered);
  } catch (err) {
    if (err instanceof PolicyError) throw new UsageError(err.message);
    throw err;
  }
}

async function readDocs(path: string, shown: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new UsageError(`cannot read ${shown}: ${messageOf(err)}`);
  }
  // Imported here, not at the top: a check without manifest files starts without the YAML
  // parser and the schema validator (bench/cli-start.ts).
  const { parseAllDocuments } = await import("yaml");
  const docs = parseAllDocuments(text);
  const list = Array.isArray(docs) ? docs : [docs];
  return list
    .map((d, i) => {
      if (d.errors.length > 0) throw new UsageError(`${shown}: document ${i + 1} is not valid YAML: ${d.errors[0]?.message ?? ""}`);
      return d.toJS() as unknown;
    })
    .filter((d) => d !== null && d !== undefined);
}

/** The Agent of a manifest file (its first document of kind Agent), valid as the API server would admit it. */
export async function readAgent(path: string): Promise<Agent> {
  const docs = await readDocs(path, path);
  const agent = docs.find((d) => (d as { kind?: unknown }).kind === "Agent") as Agent | undefined;
  if (agent === undefined) throw new UsageError(`--agent ${path}: no document of kind Agent`);
  const { validateManifest } = await import("../api/validate.js");
  refuseProblems(validateManifest, `--agent ${path}`, agent);
  return agent;
}

/** The GuardPolicies of a manifest file, each valid as the API server would admit it. */
export async function readPolicies(path: string, shown: string): Promise<NamedPolicy[]> {
  const docs = await readDocs(path, shown);
  const { validateManifest } = await import("../api/validate.js");
  return docs.map((d, i) => {
    const o = d as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown }; spec?: unknown };
    const where = `--policy ${shown} (document ${i + 1})`;
    if (o.kind !== "GuardPolicy") throw new UsageError(`${where}: kind must be GuardPolicy, not ${JSON.stringify(o.kind ?? null)}`);
    refuseProblems(validateManifest, where, d);
    if (typeof o.metadata?.name !== "string") throw new UsageError(`${where}: metadata.name is required`);
    return {
      name: o.metadata.name,
      ...(typeof o.metadata.namespace === "string" ? { namespace: o.metadata.namespace } : {}),
      spec: (o.spec ?? {}) as GuardPolicySpec,
    };
  });
}

/** Refuses a manifest the API server would refuse, naming the first bad field. */
function refuseProblems(validateManifest: typeof ValidateManifest, where: string, doc: unknown): void {
  const errors = validateManifest(doc).filter((p) => p.severity === "error");
  const first = errors[0];
  if (first !== undefined)
    throw new UsageError(
      `${where}: ${first.path === "" ? "" : `${first.path}: `}${first.message}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ""}`,
    );
}
