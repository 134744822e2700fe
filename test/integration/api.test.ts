// The API against the real kube-apiserver: every reference manifest applies verbatim and reads back
// with the defaults gavel computes offline; every bad manifest is refused by the server AND by
// `gavel validate`, both naming the field; printer columns and `kubectl explain` work.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { agentAdmissionPolicy } from "../../src/api/admission-policy.js";
import { declaredVersion } from "../../src/api/declared-version.js";
import { withDefaults } from "../../src/api/defaults.js";
import { renderPolicy } from "../../src/api/render-crds.js";
import type { Agent } from "../../src/api/types.js";
import { validateManifest, withSchemaDefaults } from "../../src/api/validate.js";
import { main } from "../../src/cli/app.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { REPO_DIR } from "../harness/paths.js";

const refDir = join(REPO_DIR, "test", "fixtures", "reference");
const badDir = join(REPO_DIR, "test", "fixtures", "bad");
const refs = readdirSync(refDir).filter((f) => f.endsWith(".yaml"));
const bad = readdirSync(badDir).filter((f) => f.endsWith(".yaml"));

function docsOf(file: string): Agent[] {
  return parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS() as Agent);
}

async function gavelValidate(file: string): Promise<{ code: number; out: string }> {
  const stdout = new PassThrough();
  let out = "";
  stdout.on("data", (d: Buffer) => (out += d.toString()));
  const code = await main(["validate", "-f", file], { stdout, stderr: stdout, stdin: new PassThrough(), env: {}, cwd: REPO_DIR });
  return { code, out };
}

describe("API: CRDs and admission policy on the real kube-apiserver", () => {
  let cp: ControlPlane;
  let ns: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    // The rules on fields without a structural type live in a ValidatingAdmissionPolicy (ADR 0003).
    const policy = await cp.kubectl(["apply", "--server-side", "-f", "-"], { stdin: renderPolicy(agentAdmissionPolicy()) });
    expect(policy.stderr).toBe("");
    ns = await cp.createNamespace("api");
    // A policy is enforced once the server has compiled it: wait until a bad Agent is refused.
    const probe = "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: probe}\nspec: {execution: {validation: [{type: nope}]}}\n";
    for (let i = 0; i < 100; i++) {
      const r = await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], { stdin: probe });
      if (r.code !== 0) break;
      await cp.kubectl(["delete", "agent", "probe", "-n", ns]);
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("applies every reference manifest verbatim with `kubectl apply --validate=warn` and reads it back with the offline defaults", async () => {
    const applied = await cp.kubectl(["apply", "--validate=warn", "-n", ns, "-f", refDir]);
    expect(applied.code, applied.stderr).toBe(0);
    // The judges' metadata.version is reported and dropped, not refused.
    expect(applied.stderr).toContain('unknown field "metadata.version"');
    for (const file of refs) {
      for (const doc of docsOf(join(refDir, file))) {
        const got = await cp.kubectl(["get", "agent", doc.metadata.name, "-n", ns, "-o", "json"]);
        expect(got.code, got.stderr).toBe(0);
        const stored = JSON.parse(got.stdout) as Agent;
        // The server filled exactly the structural defaults validate.ts computes.
        expect(stored.spec, file).toEqual(withSchemaDefaults("Agent", doc).spec);
        expect(withDefaults(stored).spec).toEqual(withDefaults(doc).spec);
        expect((stored.metadata as unknown as Record<string, unknown>).version).toBeUndefined();
        expect(declaredVersion(stored.metadata)).toBe((doc.metadata as unknown as Record<string, unknown>).version);
      }
    }
    const tv = JSON.parse((await cp.kubectl(["get", "agent", "ref-tool-call-judging", "-n", ns, "-o", "json"])).stdout) as Agent;
    expect(tv.spec.execution?.tool_validation?.[0]).toMatchObject({ min_score: 0.85, min_confidence: 0, timeout_seconds: 300 });
    const judge = JSON.parse((await cp.kubectl(["get", "agent", "code-quality-judge", "-n", ns, "-o", "json"])).stdout) as Agent;
    expect(judge.spec.execution).toMatchObject({
      mode: "one-shot",
      validation: { system: { must_succeed: true }, output: { format: "json" } },
    });
  });

  it("server-side apply refuses metadata.version whatever --validate says (why docs/api.md names client-side apply)", async () => {
    for (const validate of ["--validate=strict", "--validate=warn", "--validate=false"]) {
      const r = await cp.kubectl(["apply", "--server-side", validate, "-n", ns, "-f", join(refDir, "av-08-code-quality-judge.yaml")]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(".metadata.version: field not declared in schema");
    }
    const others = refs.filter((f) => !f.includes("judge.yaml"));
    for (const f of others) {
      const r = await cp.kubectl(["apply", "--server-side", "--force-conflicts", "-n", ns, "-f", join(refDir, f)]);
      expect(r.code, `${f}: ${r.stderr}`).toBe(0);
    }
  });

  it("stores a GuardPolicy with the reference's checks and fills its defaults as the offline validator does", async () => {
    // guardian-checks.txt: the destructive pattern table, a sequence contract and the adaptive rule example.
    const policy = {
      apiVersion: "100monkeys.ai/v1",
      kind: "GuardPolicy",
      metadata: { name: "default" },
      spec: {
        revoked_tools: [{ tool: "evil_tool", reason: "malicious" }],
        destructive_patterns: [
          { pattern: "rm\\s+-rf\\s+/", reason: "Recursive root delete" },
          { pattern: "(DROP|TRUNCATE)\\s+TABLE", reason: "Destructive SQL" },
          { pattern: ":(){:|:&};:", reason: "Fork bomb" },
          { pattern: "curl.+(\\|sh|\\|bash)", reason: "Pipe-to-shell" },
          { pattern: "169\\.254\\.169\\.254", reason: "Cloud metadata service IP" },
          { pattern: "chmod\\s+777", reason: "World-writable permission" },
        ],
        sequence_contracts: [{ name: "read_before_delete", requires_prior: "read_file", triggers_for: "delete_file" }],
        adaptive_rules: [
          {
            name: "block_external_drive_writes",
            pattern: "/Volumes/(?!MAC_MINI_1TB)",
            match_field: "args",
            action: "deny",
            reason: "Writes to non-canonical external drives are blocked",
          },
        ],
        required_capabilities: { shell_exec: "shell:safe", db_write: "db:write" },
      },
    };
    expect(validateManifest(policy)).toEqual([]);
    const r = await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], { stdin: JSON.stringify(policy) });
    expect(r.code, r.stderr).toBe(0);
    const stored = JSON.parse((await cp.kubectl(["get", "guardpolicy", "default", "-n", ns, "-o", "json"])).stdout) as { spec: unknown };
    expect(stored.spec).toEqual(withSchemaDefaults("GuardPolicy", policy).spec);
    expect(stored.spec).toMatchObject({ sequence_contracts: [{ within_steps: 5 }], adaptive_rules: [{ enabled: true }] });
  });

  it("shows the printer columns and explains tool_validation field by field", async () => {
    expect((await cp.kubectl(["apply", "--validate=false", "-n", ns, "-f", refDir])).code).toBe(0);
    const ex = `apiVersion: 100monkeys.ai/v1
kind: Execution
metadata: {name: judge-run}
spec:
  agentRef: {name: code-quality-judge}
  parent: {name: worker-run, uid: "0000", purpose: validation, iteration: 1, validatorIndex: 2}
`;
    expect((await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], { stdin: ex })).code).toBe(0);
    // agentRef and parent are immutable (CEL transition rules).
    const changed = await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], {
      stdin: ex.replace("name: code-quality-judge", "name: other-judge"),
    });
    expect(changed.code).not.toBe(0);
    expect(changed.stderr).toContain("spec.agentRef is immutable");
    const got = await cp.kubectl(["get", "agents,executions", "-n", ns]);
    expect(got.stdout).toMatch(/NAME\s+ROLE\s+MODE\s+JUDGES\s+READY\s+AGE/);
    expect(got.stdout).toMatch(/agent\.100monkeys\.ai\/code-quality-judge\s+judge\s+one-shot/);
    expect(got.stdout).toMatch(/agent\.100monkeys\.ai\/ref-semantic\s+iterative\s+code-quality-judge\s/);
    expect(got.stdout).toMatch(
      /agent\.100monkeys\.ai\/ref-multi-judge\s+iterative\s+\["code-quality-judge","security-reviewer-judge","test-coverage-judge"\]/,
    );
    expect(got.stdout).toMatch(/NAME\s+AGENT\s+PHASE\s+ITERATION\s+SCORE\s+CALLS\s+BLOCKED\s+PARENT\s+AGE/);
    expect(got.stdout).toMatch(/execution\.100monkeys\.ai\/judge-run\s+code-quality-judge\s+worker-run\s/);
    const explain = await cp.kubectl(["explain", "agent.spec.execution.tool_validation"]);
    for (const field of ["criteria", "judge_agent", "min_confidence", "min_score", "timeout_seconds", "type"]) {
      expect(explain.stdout).toMatch(new RegExp(`\\n  ${field}\\t<\\w+>.*\\n    \\S`));
    }
    expect(explain.stdout).toContain("Default 0.7");
  });

  for (const f of bad) {
    it(`refuses ${f} in the API server and in gavel validate, both naming the field`, async () => {
      const file = join(badDir, f);
      const expected = /^# expect: (.+)$/m.exec(readFileSync(file, "utf8"))?.[1]?.trim() ?? "";
      expect(expected).not.toBe("");
      const offline = await gavelValidate(file);
      expect(offline.code).toBe(1);
      if (expected.startsWith("yaml line ")) {
        expect(offline.out).toContain(`YAML syntax error at line ${expected.slice("yaml line ".length)}`);
        return;
      }
      expect(offline.out).toMatch(new RegExp(`:doc#\\d+: ${expected.replace(/[.[\]*]/g, "\\$&")}`));
      const server = await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", file]);
      if (server.stdout !== "") await cp.kubectl(["delete", "-n", ns, "-f", file, "--ignore-not-found"]);
      expect(server.code, server.stdout).not.toBe(0);
      expect(server.stderr).toContain(expected);
    });
  }
});
