// Local mode on Docker runs the reference's judge manifests verbatim (runtime.language python,
// version "3.11", no image): the runtime table picks gavel's Python 3.11 runtime image, the
// agent runtime runs there as a judge with the manifest's task.instruction, and its verdict
// decides the iteration. The cluster runs the same manifests (test/e2e/judge-runtimes.test.ts).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withDefaults } from "../../src/api/defaults.js";
import type { Agent, Execution } from "../../src/api/types.js";
import { runtimeTable } from "../../src/children/runtime-table.js";
import { runLocal } from "../../src/local/local-run.js";
import { DockerWorkloads } from "../../src/runtime/docker/docker-workloads.js";
import { runOk } from "../harness/exec.js";
import { BASE_IMAGE } from "../harness/paths.js";
import { parse } from "yaml";
import {
  GARBAGE,
  GARBAGE_JUDGE,
  garbageNodeRuntime,
  REFERENCE_JUDGES,
  referenceJudge,
  SCRIPTED_VERDICT,
  scriptedPythonRuntime,
  WORKER_OUTPUT,
} from "../harness/reference-judges.js";

const WORKER_IMAGE = "gavel/test-python-writer:dev";

describe("reference judge manifests in local mode", () => {
  let judges: Agent[];

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-img-"));
    try {
      await writeFile(
        join(dir, "Dockerfile"),
        `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nENTRYPOINT ["node", "-e", ${JSON.stringify(`process.stdout.write(${JSON.stringify(WORKER_OUTPUT)})`)}]\n`,
      );
      await runOk("docker", ["build", "-q", "--build-arg", `BASE_IMAGE=${BASE_IMAGE}`, "-t", WORKER_IMAGE, dir]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    judges = await Promise.all(REFERENCE_JUDGES.map(async (f) => withDefaults((await referenceJudge(f)).agent)));
  });

  afterAll(async () => {
    await runOk("docker", ["image", "rm", "-f", WORKER_IMAGE]).catch(() => undefined);
  });

  it("each reference judge runs in the Python 3.11 runtime as a semantic judge and its verdict passes the iteration", async () => {
    const worker = withDefaults({
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "py-writer" },
      spec: {
        runtime: { image: WORKER_IMAGE, pull_policy: "Never" },
        task: { instruction: "Write add(a, b) in Python." },
        security: { network: { mode: "none" } },
        execution: {
          mode: "one-shot",
          validation: judges.map((j) => ({
            type: "semantic" as const,
            judge_agent: j.metadata.name,
            criteria: "Is it correct?",
            min_score: 0.75,
            min_confidence: 0.7,
          })),
        },
      },
    } as Agent);
    const execution: Execution = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name: `ref-judges-${process.pid}` },
      spec: { agentRef: { name: "py-writer" } },
    };
    const workloads = new DockerWorkloads();
    try {
      const result = await runLocal({
        execution,
        agent: worker,
        judges: new Map(judges.map((j) => [j.metadata.name, j])),
        workloads,
        runtimes: runtimeTable([scriptedPythonRuntime("dev")]),
      });
      expect(result.execution.status?.phase, JSON.stringify(result.execution.status)).toBe("Succeeded");
      expect(result.children.map((c) => c.spec.agentRef.name).sort()).toEqual(["code-quality-judge", "manifest-quality-judge"]);
      for (const child of result.children) {
        expect(child.status?.phase, JSON.stringify(child.status)).toBe("Succeeded");
        expect(child.status?.verdict).toMatchObject({ score: SCRIPTED_VERDICT.score, confidence: SCRIPTED_VERDICT.confidence });
      }
      // The manifest-quality judge's input_schema maps the worker's output and task onto its names.
      const manifestJudge = result.children.find((c) => c.spec.agentRef.name === "manifest-quality-judge");
      expect(manifestJudge?.spec.input).toMatchObject({ generated_manifest: WORKER_OUTPUT, user_objective: "Write add(a, b) in Python." });
    } finally {
      await workloads.removeAll();
    }
  });

  it("a judge printing garbage is rejected as malformed_output and its raw output is kept in the child's status", async () => {
    const garbage = withDefaults(parse(GARBAGE_JUDGE) as Agent);
    const worker = withDefaults({
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "py-writer" },
      spec: {
        runtime: { image: WORKER_IMAGE, pull_policy: "Never" },
        security: { network: { mode: "none" } },
        execution: { mode: "one-shot", validation: [{ type: "semantic", judge_agent: "garbage-judge" }] },
      },
    } as Agent);
    const workloads = new DockerWorkloads();
    try {
      const execution: Execution = {
        apiVersion: "100monkeys.ai/v1",
        kind: "Execution",
        metadata: { name: `ref-garbage-${process.pid}` },
        spec: { agentRef: { name: "py-writer" } },
      };
      const result = await runLocal({
        execution,
        agent: worker,
        judges: new Map([["garbage-judge", garbage]]),
        workloads,
        runtimes: runtimeTable([garbageNodeRuntime("dev")]),
      });
      const child = result.children[0];
      expect(child?.status?.rejection, JSON.stringify(child?.status)).toBe("malformed_output");
      expect(child?.status?.rawOutput?.stdout).toContain(GARBAGE);
      expect(child?.status?.rawOutput?.exitCode).toBe(0);
      // Local mode keeps stderr apart: the agent runtime's log lines, never in stdout.
      expect(child?.status?.rawOutput?.stderr).toContain("gavel-agent");
      expect(child?.status?.rawOutput?.stdout).not.toContain("gavel-agent");
    } finally {
      await workloads.removeAll();
    }
  });

  it("a version the runtime table does not know is refused before any container starts, naming the field", async () => {
    const [first] = judges;
    if (first === undefined) throw new Error("no judge");
    const py312 = { ...first, spec: { ...first.spec, runtime: { language: "python", version: "3.12" } } } as Agent;
    const worker = withDefaults({
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "py-writer" },
      spec: {
        runtime: { image: WORKER_IMAGE, pull_policy: "Never" },
        task: { instruction: "Write add(a, b) in Python." },
        security: { network: { mode: "none" } },
        execution: { mode: "one-shot", validation: [{ type: "semantic", judge_agent: first.metadata.name, criteria: "ok?" }] },
      },
    } as Agent);
    const workloads = new DockerWorkloads();
    try {
      const execution: Execution = {
        apiVersion: "100monkeys.ai/v1",
        kind: "Execution",
        metadata: { name: `ref-judges-bad-${process.pid}` },
        spec: { agentRef: { name: "py-writer" } },
      };
      const result = await runLocal({ execution, agent: worker, judges: new Map([[first.metadata.name, py312]]), workloads });
      expect(result.execution.status?.phase).toBe("Failed");
      expect(result.children[0]?.status?.message ?? "").toMatch(/spec\.runtime\.version: no runtime for python 3\.12/);
    } finally {
      await workloads.removeAll();
    }
  });
});
