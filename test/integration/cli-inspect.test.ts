// `gavel get`, `describe`, `logs` against the real kube-apiserver,
// with a viewer's credentials only (a ServiceAccount allowed get, list and watch): a judged
// run's tree is written as the controller writes it (Execution status, a judge child, the
// worker's stored result, an Event), then read back through the CLI. Pods are the e2e tier's business (test/e2e/inspect.test.ts).
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution, ExecutionStatus } from "../../src/api/types.js";
import { gavel as runGavel } from "../harness/cli.js";
import { eventually } from "../harness/cluster.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { runWriter, type RunWriter } from "../harness/judged-run.js";
import { REPO_DIR } from "../harness/paths.js";
import { viewerKubeconfig } from "../harness/viewer.js";

const SECRET = "sk-never-shown-4242";
const GAVEL = join(REPO_DIR, "bin", "gavel");

const AGENTS = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: {name: writer}
spec:
  runtime: {image: "example/writer:1"}
  execution:
    mode: iterative
    max_iterations: 2
    validation:
      - {type: exit_code}
      - {type: semantic, judge_agent: checker, min_score: 0.8}
---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: {name: checker, labels: {role: judge}}
spec:
  runtime: {image: "example/checker:1"}
  execution: {mode: one-shot}
---
apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata: {name: team-rules}
spec:
  revoked_tools: [{tool: shell.exec, reason: "no shells"}]
`;

const gavel = (args: string[], env: NodeJS.ProcessEnv) => runGavel(args, { env });

describe("gavel get / describe / logs (real kube-apiserver, viewer credentials)", () => {
  let cp: ControlPlane;
  let ns: string;
  let runs: RunWriter;
  let core: k8s.CoreV1Api;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let viewerConfig: string;

  const runStatus: ExecutionStatus = {
    phase: "Refining",
    iteration: 1,
    startTime: new Date(Date.now() - 60_000).toISOString(),
    iterations: [
      {
        number: 1,
        phase: "Refining",
        exitCode: 0,
        validators: [
          { index: 0, type: "exit_code", passed: true, score: 1, confidence: 1, reasoning: "exit code 0 as expected" },
          {
            index: 1,
            type: "semantic",
            passed: false,
            score: 0.5,
            confidence: 0.9,
            reasoning: "judge checker: sum subtracts",
            children: ["run-i1-v1-checker"],
          },
        ],
      },
    ],
    children: [{ name: "run-i1-v1-checker", purpose: "validation", iteration: 1, validatorIndex: 1, judge: "checker", phase: "Succeeded" }],
  };

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace("cli-inspect");
    core = cp.kc.makeApiClient(k8s.CoreV1Api);
    const applied = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: AGENTS });
    expect(applied.code, applied.stderr).toBe(0);

    // The run, its judge child (as the reconciler makes them) and the worker's stored result.
    runs = runWriter(cp.kc, ns);
    const run = await runs.createRun("run", "writer", { token: SECRET });
    await runs.putStatus("run", runStatus);
    await runs.createJudgeChild(run, { judge: "checker", iteration: 1, validatorIndex: 1, input: { proposed: SECRET } });
    await runs.putStatus("run-i1-v1-checker", {
      phase: "Succeeded",
      startTime: new Date().toISOString(),
      completionTime: new Date().toISOString(),
      score: 0.5,
      verdict: { score: 0.5, confidence: 0.9, reasoning: "sum subtracts" },
      message: "verdict parsed from the judge's output",
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: "run-i1-result" },
        data: {
          iteration: "1",
          exitCode: "0",
          timedOut: "false",
          cancelled: "false",
          stdout: 'wrote sum.js\n{"status":"success"}\n',
          stderr: "",
        },
      },
    });
    await core.createNamespacedEvent({
      namespace: ns,
      body: {
        metadata: { name: "run.1" },
        involvedObject: { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "run", namespace: ns, uid: run.metadata.uid ?? "" },
        reason: "ValidatorResult",
        type: "Warning",
        message: '{"iteration":1,"index":1,"passed":false}',
        source: { component: "gavel-controller" },
        firstTimestamp: new Date(),
        lastTimestamp: new Date(),
        count: 1,
      },
    });

    // A viewer: get, list and watch only. Every command below runs with its token.
    dir = await mkdtemp(join(tmpdir(), "gavel-cli-inspect-"));
    viewerConfig = await viewerKubeconfig(cp, ns, dir);
    env = { KUBECONFIG: viewerConfig };
  }, 180_000);

  afterAll(async () => {
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("Given a judged run, `gavel get ex` lists the tree (the judge child under its run), as kubectl would print it", async () => {
    const r = await gavel(["get", "ex"], env);
    expect(r.code, r.err).toBe(0);
    const lines = r.out.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+AGENT\s+PHASE\s+ITERATION\s+SCORE\s+AGE$/);
    expect(lines[1]).toMatch(/^run\s+writer\s+Refining\s+1\s+\d/);
    expect(lines[2]).toMatch(/^└─ run-i1-v1-checker\s+checker\s+Succeeded\s+0\.50\s+\d/);
    const wide = await gavel(["get", "executions", "-o", "wide"], env);
    expect(wide.out).toMatch(/run-i1-v1-checker\s+checker\s+Succeeded\s+0\.50\s+\S+\s+validation:i1\/v1\s+0\.50\/0\.90\s+run/);
    const json = JSON.parse((await gavel(["get", "ex", "-o", "json"], env)).out) as { kind: string; items: Execution[] };
    expect(json.kind).toBe("List");
    expect(json.items.map((e) => e.metadata.name).sort()).toEqual(["run", "run-i1-v1-checker"]);
    expect((await gavel(["get", "ex", "-l", "gavel.dev/role=judge", "-o", "name"], env)).out).toBe(
      "executions.100monkeys.ai/run-i1-v1-checker\n",
    );
    expect((await gavel(["get", "ex", "run", "-o", "yaml"], env)).out).toMatch(/^kind: Execution$/m);
    expect((await gavel(["get", "ag"], env)).out).toMatch(/^checker\s+judge\s+one-shot\s+<none>/m);
    expect((await gavel(["get", "gp", "-o", "wide"], env)).out).toMatch(/^team-rules\s+.*shell\.exec$/m);
  });

  it("Given an unknown name or resource, get, describe and logs exit non-zero naming it", async () => {
    const get = await gavel(["get", "ex", "nope"], env);
    expect([get.code, get.err]).toEqual([1, expect.stringContaining('executions "nope" not found')]);
    const describeIt = await gavel(["describe", "ex", "nope"], env);
    expect([describeIt.code, describeIt.err]).toEqual([1, expect.stringContaining('"nope" not found')]);
    const logs = await gavel(["logs", "nope"], env);
    expect([logs.code, logs.err]).toEqual([1, expect.stringContaining('"nope" not found')]);
    const kind = await gavel(["get", "widgets"], env);
    expect([kind.code, kind.err]).toEqual([2, expect.stringContaining('"widgets"')]);
    const judge = await gavel(["logs", "run", "--judge", "nobody"], env);
    expect([judge.code, judge.err]).toEqual([1, expect.stringContaining('no judge "nobody"')]);
    const iteration = await gavel(["logs", "run", "--iteration", "7"], env);
    expect([iteration.code, iteration.err]).toEqual([1, expect.stringContaining("no iteration 7")]);
  });

  it("`gavel describe ex` shows the validators against their thresholds, the judge's verdict, and the Events", async () => {
    const r = await gavel(["describe", "execution", "run"], env);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^Iteration:\s+1 of at most 2$/m);
    expect(r.out).toContain("1  semantic  failed  score 0.50 <  0.80  confidence 0.90");
    expect(r.out).toContain("checker  run-i1-v1-checker  Succeeded  score 0.50 <  0.80  confidence 0.90");
    expect(r.out).toMatch(/Reasoning:\s+sum subtracts/);
    expect(r.out).toMatch(/Warning\s+ValidatorResult/);
    expect(r.out).not.toContain(SECRET);
    const child = await gavel(["describe", "ex", "run-i1-v1-checker"], env);
    expect(child.out).toMatch(/^Parent:\s+run \(validation, iteration 1, validator 1\)$/m);
    expect(child.out).not.toContain(SECRET);
  });

  it("`gavel logs` prints the worker's stored output; a judge whose output was not kept says what is known", async () => {
    const r = await gavel(["logs", "run"], env);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe('wrote sum.js\n{"status":"success"}\n');
    const judge = await gavel(["logs", "run", "--judge", "checker"], env);
    expect(judge.code).toBe(1);
    expect(judge.err).toContain('judge child "run-i1-v1-checker" has no output to show');
    expect(judge.err).toContain("score 0.50");
  });

  it("`gavel get ex -w` prints the list, then a row for each change", async () => {
    const proc = spawn(GAVEL, ["get", "ex", "-w", "--kubeconfig", viewerConfig], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await eventually(() => Promise.resolve(/^run\s/m.test(out) ? true : undefined), 30_000, "the first list");
      await runs.putStatus("run", { ...runStatus, phase: "Failed", completionTime: new Date().toISOString(), score: 0.5 });
      await eventually(() => Promise.resolve(/^run\s+writer\s+Failed/m.test(out) ? true : undefined), 30_000, "the watched change");
    } finally {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGINT");
      expect(await exited).toBe(0);
      await runs.putStatus("run", runStatus);
    }
  });
});
