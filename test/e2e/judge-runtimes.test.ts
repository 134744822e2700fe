// The reference's judge manifests (runtime.language python, version "3.11", no image) applied
// verbatim on the single-node cluster run as semantic judges of an Execution: the chart's
// `runtimes:` value is the operator's entry (gavel's Python 3.11 image with a scripted model),
// the controller picks the image from it, and the judges' verdicts pass the iteration. Local
// mode runs the same manifests (test/integration/reference-judges.test.ts).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useCluster, type Cluster } from "../harness/cluster.js";
import { eventually } from "../harness/eventually.js";
import { executionYaml, oneShotWorkerYaml, semanticValidation } from "../harness/example-worker.js";
import { executionsIn, type Executions } from "../harness/executions.js";
import { ChartController } from "../harness/gavel-chart.js";
import { REPO_DIR } from "../harness/paths.js";
import {
  GARBAGE,
  GARBAGE_JUDGE,
  garbageNodeRuntime,
  REFERENCE_JUDGES,
  referenceJudge,
  REFERENCE_VALIDATION,
  SCRIPTED_VERDICT,
  scriptedPythonRuntime,
} from "../harness/reference-judges.js";

describe("reference judge manifests on the cluster", () => {
  let cluster: Cluster;
  let ns: string;
  let controller: ChartController;
  let runs: Executions;

  beforeAll(async () => {
    cluster = await useCluster();
    controller = new ChartController(cluster);
    const version = (JSON.parse(await readFile(join(REPO_DIR, "package.json"), "utf8")) as { version: string }).version;
    await controller.configure(["--set-json", `runtimes=${JSON.stringify([scriptedPythonRuntime(version), garbageNodeRuntime(version)])}`]);
    ns = await cluster.createNamespace("e2e-judge-runtimes");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${await controller.log()}`);
    for (const f of REFERENCE_JUDGES) await runs.apply((await referenceJudge(f)).text, { validate: "warn" });
    await runs.apply(GARBAGE_JUDGE);
  });

  afterAll(async () => {
    // Back to the fixture's values for the files after this one.
    await controller?.configure();
  });

  it("each reference judge (Python 3.11 runtime) returns its verdict to the Execution", async () => {
    await runs.apply(
      `${oneShotWorkerYaml("py-writer", REFERENCE_VALIDATION, { task: "Write add(a, b) in Python." })}---${executionYaml("ref-judges", "py-writer", {})}`,
    );
    const ex = await runs.final("ref-judges");
    expect(ex.status?.phase, JSON.stringify(ex.status)).toBe("Succeeded");
    const children = ex.status?.children ?? [];
    expect(children.map((c) => c.judge).sort()).toEqual(["code-quality-judge", "manifest-quality-judge"]);
    for (const ref of children) {
      const child = await runs.get(ref.name);
      expect(child?.status?.phase, JSON.stringify(child?.status)).toBe("Succeeded");
      expect(child?.status?.verdict).toMatchObject({ score: SCRIPTED_VERDICT.score, confidence: SCRIPTED_VERDICT.confidence });
    }
  });

  it("a judge printing garbage is rejected and its raw output is kept in the child's status", async () => {
    await runs.apply(
      `${oneShotWorkerYaml("garbage-writer", semanticValidation("garbage-judge"))}---${executionYaml("ref-garbage", "garbage-writer", {})}`,
    );
    const ex = await runs.final("ref-garbage");
    expect(ex.status?.phase).toBe("Failed");
    const child = await runs.get(ex.status?.children?.[0]?.name ?? "");
    expect(child?.status?.rejection, JSON.stringify(child?.status)).toBe("malformed_output");
    expect(child?.status?.rawOutput?.stdout).toContain(GARBAGE);
  });

  it("a runtime version the table does not know fails the judge child before any pod starts, naming the field", async () => {
    await runs.apply(`
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: py312-judge
  labels:
    role: judge
spec:
  runtime:
    language: python
    version: "3.12"
  execution:
    mode: one-shot
---${oneShotWorkerYaml("py312-writer", semanticValidation("py312-judge"))}---${executionYaml("ref-py312", "py312-writer", {})}`);
    const ex = await runs.final("ref-py312");
    expect(ex.status?.phase).toBe("Failed");
    const ref = ex.status?.children?.[0];
    const child = ref === undefined ? undefined : await runs.get(ref.name);
    expect(child?.status?.message ?? "").toMatch(/spec\.runtime\.version: no runtime for python 3\.12/);
    expect(await runs.podsOf(ref?.name ?? "")).toEqual([]);
    // The judge Agent says so itself, before any Execution names it.
    const ready = await eventually(
      async () => {
        const r = await cluster.kubectl([
          "get",
          "agent",
          "py312-judge",
          "-n",
          ns,
          "-o",
          'jsonpath={.status.conditions[?(@.type=="Ready")]}',
        ]);
        const c = r.stdout === "" ? undefined : (JSON.parse(r.stdout) as { status: string; reason: string; message: string });
        if (c?.reason !== "UnknownRuntime") throw new Error(`Ready: ${r.stdout}`);
        return c;
      },
      30_000,
      "py312-judge Ready=False/UnknownRuntime",
    );
    expect(ready.status).toBe("False");
    expect(ready.message).toMatch(/^spec\.runtime\.version: no runtime for python 3\.12 in the runtime table \(known: python 3\.11/);
  });
});
