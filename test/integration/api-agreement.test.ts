// Same verdict from kube-apiserver and the offline validator on many mutated reference
// manifests: each mutation sets one field (anywhere in spec) to a value of another type or range;
// both must accept it or both refuse it. Server-side dry-run, so nothing is stored.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { agentAdmissionPolicy } from "../../src/api/admission-policy.js";
import { renderPolicy } from "../../src/api/render-crds.js";
import { isMap } from "../../src/api/schema-dsl.js";
import { validateManifest } from "../../src/api/validate.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { REPO_DIR } from "../harness/paths.js";

const refDir = join(REPO_DIR, "test", "fixtures", "reference");
const VALUES: unknown[] = [
  -1,
  0,
  1,
  0.5,
  1.5,
  300,
  "",
  "x",
  "stdout",
  "/abs",
  "one-shot",
  "semantic",
  true,
  [],
  ["a"],
  {},
  { type: "semantic" },
];
const MUTATIONS = 200;

// Non-Agent bases, so the Execution and GuardPolicy schemas are exercised too.
const OTHER_BASES = [
  {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: { name: "judge-run" },
    spec: {
      agentRef: { name: "code-quality-judge" },
      input: { output: "print(1)", criteria: "correct?" },
      parent: { name: "worker-run", uid: "u-1", purpose: "tool_validation", iteration: 2, validatorIndex: 0, toolCallId: "c-7", depth: 1 },
      timeoutSeconds: 60,
    },
  },
  {
    apiVersion: "100monkeys.ai/v1",
    kind: "GuardPolicy",
    metadata: { name: "default" },
    spec: {
      revoked_tools: [{ tool: "evil_tool", reason: "malicious" }],
      tool_registry: [{ tool: "fs.read", sha256: "a".repeat(64), signature: "c2ln" }],
      required_capabilities: { shell_exec: "shell:safe" },
      destructive_patterns: [{ pattern: "rm\\s+-rf\\s+/", reason: "Recursive root delete" }],
      forbidden_paths: [{ pattern: "^/etc/" }],
      sequence_contracts: [{ name: "read_before_delete", requires_prior: "read_file", triggers_for: "delete_file", within_steps: 5 }],
      adaptive_rules: [{ name: "r", match_field: "args", pattern: "x", action: "flag", reason: "measure", enabled: true }],
      trusted_keys: [{ name: "k", public_key: "AAAA" }],
    },
  },
];

/** Every path under spec (object keys and list indices), with the reference document it came from. */
function paths(v: unknown, at: (string | number)[]): (string | number)[][] {
  const here = [at];
  if (Array.isArray(v)) return [...here, ...v.flatMap((x, i) => paths(x, [...at, i]))];
  if (isMap(v)) return [...here, ...Object.entries(v).flatMap(([k, x]) => paths(x, [...at, k]))];
  return here;
}

function setAt(doc: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let cur: Record<string | number, unknown> = copy;
  for (const step of path.slice(0, -1)) cur = cur[step] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (last !== undefined) cur[last] = value;
  return copy;
}

/** A small deterministic PRNG (mulberry32) so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("API: offline validator and kube-apiserver agree", () => {
  let cp: ControlPlane;
  let ns: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    expect((await cp.kubectl(["apply", "--server-side", "-f", "-"], { stdin: renderPolicy(agentAdmissionPolicy()) })).code).toBe(0);
    ns = await cp.createNamespace("agree");
    const probe = "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: probe}\nspec: {execution: {validation: [{type: nope}]}}\n";
    for (let i = 0; i < 100; i++) {
      if ((await cp.kubectl(["apply", "--server-side", "--dry-run=server", "-n", ns, "-f", "-"], { stdin: probe })).code !== 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it(`gives the same verdict on ${MUTATIONS} one-field mutations of the reference manifests`, async () => {
    const docs = readdirSync(refDir)
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => {
        const doc = parse(readFileSync(join(refDir, f), "utf8")) as { metadata: Record<string, unknown>; spec: unknown };
        delete doc.metadata.version; // dropped by the server, a warning offline: not what this test is about
        return doc;
      })
      .concat(OTHER_BASES as never[]);
    const random = rng(Number(process.env.GAVEL_SEED ?? 3));
    const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const disagreements: string[] = [];
    let refused = 0;
    for (let i = 0; i < MUTATIONS; i++) {
      const doc = pick(docs);
      const path = pick(paths(doc.spec, ["spec"]));
      const value = pick(VALUES);
      const mutated = setAt(doc, path, value);
      const offline = validateManifest(mutated).filter((p) => p.severity === "error");
      const server = await cp.kubectl(["apply", "--server-side", "--dry-run=server", "-n", ns, "-f", "-"], { stdin: stringify(mutated) });
      if (server.code !== 0) refused++;
      if ((server.code !== 0) !== offline.length > 0) {
        disagreements.push(
          `${path.join(".")} = ${JSON.stringify(value)}: server ${server.code === 0 ? "accepts" : `refuses (${server.stderr.trim()})`}, ` +
            `gavel ${offline.length === 0 ? "accepts" : `refuses (${offline.map((p) => `${p.path}: ${p.message}`).join("; ")})`}`,
        );
      }
    }
    expect(disagreements).toEqual([]);
    // The mutations must exercise both verdicts, or the test proves little.
    expect(refused).toBeGreaterThan(MUTATIONS / 5);
    expect(refused).toBeLessThan(MUTATIONS);
  });
});
