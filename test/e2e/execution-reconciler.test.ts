// gavel's controller, installed by the chart as a pod (test/harness/gavel-chart.ts), runs
// Executions on the single-node cluster: worker pods per iteration on dynamically provisioned
// workspaces, validators, judge child Executions owned by their parent, the loop's state in
// the Execution's status. Outcomes are read back from the API server.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { gavel } from "../harness/cli.js";
import { agentYaml, executionYaml, QUICK_WRITER_VALIDATION } from "../harness/example-worker.js";
import { run } from "../harness/exec.js";
import { executionsIn, type Executions } from "../harness/executions.js";
import { ChartController } from "../harness/gavel-chart.js";
import { KUBECTL, REPO_DIR } from "../harness/paths.js";

describe("Execution reconciler on the single-node cluster (the chart's controller pod)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let controller: ChartController;
  let runs: Executions;
  let ns: string;
  const timings: Record<string, number> = {};

  const apply = (yaml: string) => runs.apply(yaml);
  const get = (name: string) => runs.get(name);
  const final = (name: string, timeoutMs?: number) => runs.final(name, timeoutMs);
  const podsOf = (name: string) => runs.podsOf(name);

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    controller = new ChartController(cluster);
    ns = await cluster.createNamespace("e2e-exec");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${await controller.log()}`);
    for (const f of ["judges/rule-judge/agent.yaml", "judges/command-judge/agent.yaml", "examples/kubernetes/agent.yaml"]) {
      const r = await cluster.kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, f)]);
      if (r.code !== 0) throw new Error(`kubectl apply ${f}: ${r.stderr}`);
    }
    await apply(agentYaml("quick-writer", 3, QUICK_WRITER_VALIDATION));
    await apply(
      agentYaml(
        "never-done",
        2,
        `
      - type: exit_code
      - type: semantic
        judge_agent: rule-judge
        criteria: |
          file_exists: never-written.txt
        min_score: 1.0
        timeout_seconds: 60`,
      ),
    );
    await apply(`
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: broken-judge
  labels:
    role: judge
spec:
  runtime:
    image: gavel/no-such-judge:dev
    pull_policy: Never
  execution:
    mode: one-shot
`);
    await apply(
      agentYaml(
        "judged-by-broken",
        1,
        `
      - type: semantic
        judge_agent: broken-judge
        timeout_seconds: 60`,
      ),
    );
  }, 900_000);

  afterAll(async () => {
    console.log(`execution e2e timings (s): ${JSON.stringify(timings)}`);
    const log = controller === undefined ? "" : await controller.log();
    const retried = log.split("\n").filter((l) => l.includes("retrying with backoff"));
    console.log(`controller: ${retried.length} reconciles retried; first: ${retried.slice(0, 3).join("\n")}`);
    if (cluster !== undefined && ns !== undefined) await cluster.deleteNamespace(ns);
  });

  // Runs that need the controller only to be up, in parallel; its crashes are in
  // execution-events.exclusive.test.ts (the exclusive lane: no other e2e file runs meanwhile).
  describe.concurrent("runs", () => {
    it("Given exit_code and a rule-judge semantic validator, the Execution ends Succeeded and its judge child holds the verdict", async () => {
      const t0 = Date.now();
      await apply(executionYaml("quick", "quick-writer", { correct_first_time: true }));
      const ex = await final("quick");
      timings.succeeded = (Date.now() - t0) / 1000;

      // Then the parent succeeded in iteration 1 with both validators passing
      expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
      expect(ex.status?.iteration).toBe(1);
      expect(ex.status?.iterations?.[0]?.exitCode).toBe(0);
      expect(ex.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
        ["exit_code", true],
        ["semantic", true],
      ]);
      expect(ex.status?.children).toEqual([
        { name: "quick-i1-v1-rule-judge", purpose: "validation", iteration: 1, validatorIndex: 1, judge: "rule-judge", phase: "Succeeded" },
      ]);

      // And the judge child is an Execution with spec.parent and a controller ownerReference, its verdict in status
      const child = await get("quick-i1-v1-rule-judge");
      expect(child?.spec.parent).toEqual({
        name: "quick",
        uid: ex.metadata.uid,
        purpose: "validation",
        iteration: 1,
        validatorIndex: 1,
        depth: 1,
      });
      expect(child?.metadata.ownerReferences).toEqual([
        {
          apiVersion: "100monkeys.ai/v1",
          kind: "Execution",
          name: "quick",
          uid: ex.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(child?.status?.phase).toBe("Succeeded");
      expect(child?.status?.verdict?.score).toBe(1);
      expect(child?.status?.verdict?.reasoning).toBeTruthy();
      // The payload the judge got is on the child (criteria and the worker's output)
      expect(JSON.stringify(child?.spec.input)).toContain("file_exists: sum.js");

      // And the loop's history is recorded as Kubernetes Events on the Execution, each transition once
      // (recorded right after the status write that holds them, so they may trail it a little)
      const events = await eventually(
        async () => {
          const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: "involvedObject.name=quick" });
          return list.items.some((e) => e.reason === "ExecutionPhase" && e.message?.includes("Succeeded")) ? list : undefined;
        },
        10_000,
        "the Succeeded event",
      );
      const reasons = events.items.map((e) => e.reason ?? "");
      for (const r of [
        "ExecutionStarted",
        "IterationStarted",
        "WorkerFinished",
        "ValidatorResult",
        "JudgeSpawned",
        "JudgeFinished",
        "IterationFinished",
      ]) {
        expect(reasons.filter((x) => x === r).length, `${r} in ${reasons.join(",")}`).toBe(r === "ValidatorResult" ? 2 : 1);
      }
      expect(events.items.find((e) => e.reason === "ExecutionPhase" && e.message?.includes("Succeeded"))?.type).toBe("Normal");

      // And kubectl shows the tree (PARENT column), and no pod of the run still runs (ended ones are kept for their logs)
      const table = await cluster.kubectl(["get", "ex", "-n", ns]);
      expect(table.stdout).toMatch(/quick-i1-v1-rule-judge\s+rule-judge\s+Succeeded\s+.*quick/);
      await runs.podsEnded("quick");

      // And gavel's own CLI shows the run from the API server: get as a tree (also as the kubectl plugin), describe with the verdict, logs of the worker and of the judge
      const env = { KUBECONFIG: cluster.kubeconfigPath };
      const tree = /^quick\s+quick-writer\s+Succeeded\s+1\s+\S+\s+\S+\n└─ quick-i1-v1-rule-judge\s+rule-judge\s+Succeeded\s+1\.00\s/m;
      expect((await gavel(["get", "ex", "-n", ns], { env })).out).toMatch(tree);
      const plugin = await run(KUBECTL, ["gavel", "get", "ex", "-n", ns], {
        env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, PATH: `${join(REPO_DIR, "bin")}:${process.env.PATH ?? ""}` },
      });
      expect(plugin.stdout, plugin.stderr).toMatch(tree);
      const described = await gavel(["describe", "ex", "quick", "-n", ns], { env });
      expect(described.out).toMatch(/rule-judge\s+quick-i1-v1-rule-judge\s+Succeeded\s+score 1\.00/);
      const workerOut = await gavel(["logs", "quick", "-n", ns], { env });
      expect([workerOut.code, workerOut.out.length > 0], workerOut.err).toEqual([0, true]);
      const judgeOut = await gavel(["logs", "quick", "--judge", "rule-judge", "-n", ns], { env });
      expect([judgeOut.code, judgeOut.out], judgeOut.err).toEqual([0, expect.stringContaining('"score"')]);
      // And shell completion (bash, zsh, kubectl's plugin completion) offers the run's names from the cluster
      expect((await gavel(["__complete", "logs", "-n", ns, "qu"], { env })).out).toMatch(/^quick$/m);
      expect((await gavel(["__complete", "logs", "-n", ns, "quick", "--judge", ""], { env })).out).toMatch(/^rule-judge$/m);
    });

    it("Given the examples/kubernetes worker whose first attempt has a bug, the command judge's feedback makes iteration 2 pass", async () => {
      const t0 = Date.now();
      await apply(executionYaml("refine", "sum-writer", {}));
      // A user following the run from its start: `gavel logs -f` streams each iteration's worker and ends with the run
      const cliEnv = { ...process.env, KUBECONFIG: cluster.kubeconfigPath };
      const following = run(join(REPO_DIR, "bin", "gavel"), ["logs", "refine", "-n", ns, "-f"], { env: cliEnv, timeoutMs: 420_000 });
      const ex = await final("refine");
      const dir = await runs.workspace("refine");
      timings.refineOnce = (Date.now() - t0) / 1000;
      const followed = await following;
      expect(followed.stderr).not.toMatch(/Warning/);
      if (followed.stdout.includes('"iteration":1,')) {
        expect([followed.code, followed.stderr], followed.stdout).toEqual([0, expect.stringContaining("--- iteration 2")]);
        expect(followed.stdout).toMatch(
          /"status":"success","iteration":1,[^\n]*\n(.|\n)*iteration 2: read feedback(.|\n)*"status":"success","iteration":2,/,
        );
      } else {
        // The CLI started after iteration 1 had ended (seen at load 40): like a user joining late,
        // it follows from the current iteration, with no header before the first it shows.
        console.warn("gavel logs -f joined the run in iteration 2");
        expect([followed.code, followed.stderr], followed.stdout).toEqual([0, ""]);
        expect(followed.stdout).toMatch(/iteration 2: read feedback(.|\n)*"status":"success","iteration":2,/);
      }
      // And one iteration's output on its own, and the run in the all-namespaces list
      const first = await gavel(["logs", "refine", "-n", ns, "--iteration", "1"], { env: { KUBECONFIG: cluster.kubeconfigPath } });
      expect([first.code, first.out], first.err).toEqual([0, expect.stringContaining('"iteration":1,')]);
      const all = await gavel(["get", "ex", "-A"], { env: { KUBECONFIG: cluster.kubeconfigPath } });
      expect(all.out).toMatch(
        new RegExp(`^NAMESPACE\\s+NAME\\s+AGENT\\s+PHASE[^\\n]*\\n(.|\\n)*^${ns}\\s+refine\\s+sum-writer\\s+Succeeded\\s+2\\s`, "m"),
      );

      expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
      expect(ex.status?.iterations?.map((i) => i.phase)).toEqual(["Refining", "Passed"]);
      // Iteration 1: exit_code, json_schema (read by a reader pod), regex pass; the command judge fails it
      expect(ex.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
        ["exit_code", true],
        ["json_schema", true],
        ["regex", true],
        ["semantic", false],
      ]);
      expect(ex.status?.iterations?.[1]?.feedback).toMatch(/validator 3 \(semantic\)/);
      expect(ex.status?.children?.map((c) => [c.name, c.phase])).toEqual([
        ["refine-i1-v3-command-judge", "Succeeded"],
        ["refine-i2-v3-command-judge", "Succeeded"],
        ["refine-i2-v4-rule-judge", "Succeeded"],
      ]);
      const failed = await get("refine-i1-v3-command-judge");
      expect(failed?.status?.verdict?.score).toBeLessThan(1);
      // The worker ran exactly once per iteration, on the same workspace
      const runLog = (await readFile(join(dir, "runs.log"), "utf8")).trim().split("\n");
      expect(runLog.map((l) => l.split(" ")[1])).toEqual(["1", "2"]);
      expect(await readFile(join(dir, "sum.js"), "utf8")).toContain("return a + b;");
      // Each validator started once per iteration, also those that waited reconciles long on a reader pod
      const started = await eventually(
        async () => {
          const list = await core.listNamespacedEvent({
            namespace: ns,
            fieldSelector: "involvedObject.name=refine,reason=ValidatorStarted",
          });
          return list.items.length >= 9 ? list.items.map((e) => e.message ?? "") : undefined;
        },
        10_000,
        "refine's ValidatorStarted events",
      );
      // Each message is a sentence: "Iteration 2: validator 4 (semantic) started".
      expect(started.map((m) => /^Iteration (\d+): validator (\d+) \(/.exec(m)?.slice(1, 3).join("/") ?? m).sort()).toEqual([
        "1/0",
        "1/1",
        "1/2",
        "1/3",
        "2/0",
        "2/1",
        "2/2",
        "2/3",
        "2/4",
      ]);
    });

    it("Given a validator that never passes, the Execution ends Failed after max_iterations", async () => {
      const t0 = Date.now();
      await apply(executionYaml("doomed", "never-done", { correct_first_time: true }));
      const ex = await final("doomed");
      timings.failed = (Date.now() - t0) / 1000;

      expect(ex.status?.phase).toBe("Failed");
      expect(ex.status?.iteration).toBe(2);
      expect(ex.status?.iterations?.map((i) => i.phase)).toEqual(["Refining", "Failed"]);
      expect(ex.status?.message).toMatch(/max_iterations 2/);
      expect(ex.status?.score).toBeLessThan(1);
      for (const name of ["doomed-i1-v1-rule-judge", "doomed-i2-v1-rule-judge"]) {
        const child = await get(name);
        expect(child?.status?.phase).toBe("Succeeded");
        expect(child?.status?.verdict?.score).toBeLessThan(1);
      }
      await runs.podsEnded("doomed");
    });

    it("Given a running Execution is deleted, its pods, claims and children are gone", async () => {
      const t0 = Date.now();
      await apply(executionYaml("doomed-run", "quick-writer", { sleep_seconds: 300 }));
      await eventually(
        async () => {
          const pod = await core.readNamespacedPod({ name: "gavel-doomed-run-i1-ex", namespace: ns }).catch(() => undefined);
          return pod?.status?.phase === "Running" ? true : undefined;
        },
        120_000,
        "the worker pod to run",
      );

      const del = await cluster.kubectl(["delete", "ex", "doomed-run", "-n", ns, "--wait=true", "--timeout=60s"]);
      expect(del.code, del.stderr).toBe(0);
      await runs.noPodsOf("doomed-run", 60_000);
      timings.deleteToNoPods = (Date.now() - t0) / 1000;
      expect(await get("doomed-run")).toBeUndefined();
      await eventually(
        async () => {
          const claims = await core.listNamespacedPersistentVolumeClaim({ namespace: ns });
          return claims.items.some((c) => c.metadata?.name === "doomed-run-workspace") ? undefined : true;
        },
        60_000,
        "doomed-run's claim to be collected",
      );
    });
    it("Given the cancel annotation on a running Execution, it ends Cancelled and its worker pod is gone", async () => {
      const t0 = Date.now();
      await apply(executionYaml("stopped", "quick-writer", { sleep_seconds: 300 }));
      await eventually(
        async () => {
          const pod = await core.readNamespacedPod({ name: "gavel-stopped-i1-ex", namespace: ns }).catch(() => undefined);
          return pod?.status?.phase === "Running" ? true : undefined;
        },
        120_000,
        "the worker pod to run",
      );
      const r = await cluster.kubectl(["annotate", "ex", "stopped", "-n", ns, "gavel.dev/cancel=requested-by-test"]);
      expect(r.code, r.stderr).toBe(0);
      const ex = await final("stopped");
      timings.cancel = (Date.now() - t0) / 1000;
      expect(ex.status?.phase).toBe("Cancelled");
      expect(ex.status?.iterations?.[0]?.phase).toBe("Failed");
      await runs.noPodsOf("stopped");
    });

    it("Given spec.timeoutSeconds shorter than the worker, the Execution ends TimedOut and its pod is killed", async () => {
      const t0 = Date.now();
      await apply(executionYaml("late", "quick-writer", { sleep_seconds: 300 }, 8));
      const ex = await final("late", 120_000);
      timings.timedOut = (Date.now() - t0) / 1000;
      expect(ex.status?.phase).toBe("TimedOut");
      expect(ex.status?.message).toMatch(/deadline of 8s/);
      expect(Date.parse(ex.status?.completionTime ?? "") - Date.parse(ex.status?.startTime ?? "")).toBeGreaterThanOrEqual(8000);
      await runs.podsEnded("late");
    });

    it("Given a judge whose image cannot start, the child ends Failed with the reason and the parent fails its validator", async () => {
      const t0 = Date.now();
      await apply(executionYaml("misjudged", "judged-by-broken", { correct_first_time: true }));
      const ex = await final("misjudged");
      timings.brokenJudge = (Date.now() - t0) / 1000;
      expect(ex.status?.phase).toBe("Failed");
      const child = await get("misjudged-i1-v0-broken-judge");
      expect(child?.status).toMatchObject({ phase: "Failed", rejection: "failed" });
      expect(child?.status?.message).toMatch(/ErrImageNeverPull/);
      expect(ex.status?.iterations?.[0]?.validators?.[0]?.reasoning).toMatch(/no verdict \(failed\)/);
    });

    it("Given an Execution whose Agent does not exist, it ends Failed with a condition naming spec.agentRef.name", async () => {
      const t0 = Date.now();
      await apply(executionYaml("orphan", "no-such-agent", {}));
      const ex = await final("orphan", 60_000);
      timings.missingAgent = (Date.now() - t0) / 1000;
      expect(ex.status?.phase).toBe("Failed");
      expect(ex.status?.conditions).toEqual([
        expect.objectContaining({
          type: "Accepted",
          status: "False",
          reason: "AgentNotFound",
          message: expect.stringMatching(/^spec\.agentRef\.name: Agent "no-such-agent" not found/) as unknown,
        }),
      ]);
      expect(await podsOf("orphan")).toEqual([]);
    });
  });

  it("Given everything above ran under the chart's ServiceAccount, no API call of the controller was forbidden", async () => {
    const log = await controller.log();
    expect(log).toMatch(/controllers started/);
    // The controller runs other files' Executions too: a create in the namespace of a file that
    // has ended is refused with a 403 by the namespace's lifecycle, not by RBAC.
    const terminating = /is forbidden: unable to create new content in namespace \S+ because it is being terminated/;
    expect(log.split("\n").filter((l) => /forbidden|\b403\b/i.test(l) && !terminating.test(l))).toEqual([]);
  });
});
