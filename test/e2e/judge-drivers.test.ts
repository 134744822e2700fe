// One engine, two drivers (issue 11): the same judged run, from the same manifests, in local
// mode (DockerWorkloads, the worker's workspace a host directory) and on the single-node cluster
// (the chart's controller, a claim from local-path). The worker writes sum.js and report.json;
// its command judge reads the report from the workspace it mounts and tries to write there.
// Both drivers must end the same way: the run Succeeded, the judge child Succeeded with score
// 1 (the report read, the write refused with EROFS), the same payload, the judge's raw output
// kept with exit code 0 and its stderr apart.
import { parseAllDocuments } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { withDefaults } from "../../src/api/defaults.js";
import type { Agent, Execution } from "../../src/api/types.js";
import { runLocal } from "../../src/local/local-run.js";
import { DockerWorkloads } from "../../src/runtime/docker/docker-workloads.js";
import { useCluster } from "../harness/cluster.js";
import { commandJudgeYaml, executionYaml, oneShotWorkerYaml, semanticValidation } from "../harness/example-worker.js";
import { executionsIn, type Executions } from "../harness/executions.js";
import { ChartController } from "../harness/gavel-chart.js";

// Exit 0 only when the worker's report is readable and a write to the workspace is refused with EROFS; a line on stderr too.
const CHECK = `const fs=require('fs');const r=JSON.parse(fs.readFileSync('/workspace/report.json','utf8'));let w='written';try{fs.writeFileSync('/workspace/judge-was-here','x')}catch(e){w=e.code}console.error('judge noise');console.log(r.status,w);process.exit(r.status==='success'&&w==='EROFS'?0:1)`;

const MANIFESTS = [
  commandJudgeYaml("drivers-judge"),
  oneShotWorkerYaml(
    "drivers-writer",
    `
      - type: exit_code
        expected: 0${semanticValidation("drivers-judge", `node -e "${CHECK}"`)}`,
  ),
  executionYaml("drivers-run", "drivers-writer", { correct_first_time: true }),
].join("---");

/** What a driver leaves of a judged run: the Execution and its judge children. */
interface Ran {
  execution: Execution;
  children: Execution[];
}

/** What must be the same on both drivers. */
function outcome(r: Ran) {
  return {
    phase: r.execution.status?.phase,
    iterations: (r.execution.status?.iterations ?? []).map((i) => [i.number, i.phase, i.exitCode]),
    children: r.children.map((c) => ({
      judge: c.spec.agentRef.name,
      purpose: c.spec.parent?.purpose,
      phase: c.status?.phase,
      score: c.status?.verdict?.score,
      input: c.spec.input,
      exitCode: c.status?.rawOutput?.exitCode,
      stderr: c.status?.rawOutput?.stderr,
    })),
  };
}

/** Local mode: the manifests parsed and run by runLocal on Docker. */
async function runLocally(): Promise<Ran> {
  const docs = parseAllDocuments(MANIFESTS).map((d) => d.toJS() as Agent | Execution);
  const agents = docs.filter((d): d is Agent => d.kind === "Agent").map((a) => withDefaults(a));
  const execution = docs.find((d): d is Execution => d.kind === "Execution");
  const agent = agents.find((a) => a.metadata.name === execution?.spec.agentRef.name);
  if (execution === undefined || agent === undefined) throw new Error("MANIFESTS hold no Execution of a known Agent");
  const workloads = new DockerWorkloads();
  try {
    return await runLocal({ execution, agent, judges: new Map(agents.map((a) => [a.metadata.name, a])), workloads });
  } finally {
    await workloads.removeAll();
  }
}

describe("one engine, two drivers: the same judged run locally (Docker) and on the cluster", () => {
  let runs: Executions;

  beforeAll(async () => {
    const cluster = await useCluster();
    const controller = new ChartController(cluster);
    runs = executionsIn(
      cluster,
      await cluster.createNamespace("e2e-judge-drivers"),
      async () => `controller log:\n${await controller.log()}`,
    );
  });

  it("ends the same way on both: Succeeded, the judge's verdict 1 from a read-only workspace, the same payload, its raw output kept", async () => {
    const [local, cluster] = await Promise.all([
      runLocally(),
      (async (): Promise<Ran> => {
        await runs.apply(MANIFESTS);
        return { execution: await runs.final("drivers-run", 180_000), children: await runs.childrenOf("drivers-run") };
      })(),
    ]);
    const expected = outcome(local);
    expect(expected).toMatchObject({
      phase: "Succeeded",
      iterations: [[1, "Passed", 0]],
      children: [{ judge: "drivers-judge", purpose: "validation", phase: "Succeeded", score: 1, exitCode: 0 }],
    });
    expect(expected.children[0]?.input).toMatchObject({
      worker_mounts: ["/workspace"],
      criteria: expect.stringContaining("run: node -e") as unknown,
    });
    expect(outcome(cluster)).toEqual(expected);
  }, 240_000);
});
