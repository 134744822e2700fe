// The inner loop on the cluster as a user runs it: gavel installed by its chart (the controller,
// which runs the gate, and the chart's own NATS, both pods), then the manifests of
// examples/guarded-tools and the shipped rule-judge applied with kubectl as the README says.
// The worker pod proposes every tool call over NATS; the guard blocks four, rule-judge child
// Executions approve the judged ones, `kubectl get ex` and `gavel events -o tree` show it all.
// The controller's /metrics count exactly that run's decisions, and fail-closed: a controller
// without NATS never starts a worker that needs the gate. Exclusive (vitest.config.ts): it
// counts metrics and takes NATS away. The reference's tool_validation manifest and guard
// check 2 are in guarded-tools-judges.test.ts.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { applyExample, chartRuns } from "../harness/chart-runs.js";
import { eventually, type Cluster } from "../harness/cluster.js";
import { run } from "../harness/exec.js";
import { callSummary, type Executions } from "../harness/executions.js";
import { type ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { parseSamples, promtoolCheck, scrapeControllers, sumBy } from "../harness/metrics.js";
import { E2E_JAEGER_QUERY_ENV, jaegerQuery, type JaegerSpan } from "../harness/jaeger.js";
import { REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");

describe("the inner loop on the cluster (chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let api: k8s.CustomObjectsApi;
  let core: k8s.CoreV1Api;
  let controller: ChartController;
  let runs: Executions;
  let natsOff = false;
  let dir: string;
  /** The controllers' /metrics before the example ran. */
  let before: string[] = [];

  beforeAll(async () => {
    ({ cluster, controller, runs } = await chartRuns("e2e-guarded", { logTail: 6000 }));
    api = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    dir = await mkdtemp(join(tmpdir(), "gavel-e2e-guarded-"));
  }, 300_000);

  afterAll(async () => {
    if (natsOff) await controller.configure();
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }, 600_000);

  it("examples/guarded-tools: the four guard blocks and the judged calls of local mode, judge children in kubectl get ex, Succeeded", async () => {
    before = await scrapeControllers(cluster, controller);
    // As the README's cluster quick start: the example's files and the shipped judge, verbatim.
    await applyExample(cluster, runs.namespace, "guarded-tools");
    const done = await runs.final("guarded-tools", 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");

    const calls = done.status?.iterations?.[0]?.toolCalls;
    expect(calls).toMatchObject({ proposed: 7, allowed: 3, blockedByGuard: 4, blockedByJudge: 0 });
    expect(calls?.recent?.map(callSummary)).toEqual([
      [1, "cmd.run", "blocked by guard", "destructive_pattern", 0],
      [2, "cmd.run", "blocked by guard", "destructive_pattern", 0],
      [3, "http.post", "blocked by guard", "capability", 0],
      [4, "fs.write", "blocked by guard", "sequence_contract", 0],
      [5, "cmd.run", "allowed", "", 1],
      [6, "fs.read", "allowed", "", 0],
      [7, "fs.write", "allowed", "", 1],
    ]);
    expect(calls?.recent?.[3]?.reason).toContain("read-before-overwrite");
    expect(done.status?.toolCalls).toEqual({ proposed: 7, allowed: 3, blocked: 4 });
    // Names and outcomes only: no argument value reaches the status.
    expect(JSON.stringify(done.status)).not.toMatch(/id_rsa|example\.com|blocked calls: 4/);

    // The judged calls' children: rule-judge runs owned by the Execution, each with its verdict.
    const judged = (calls?.recent ?? []).flatMap((c) => c.judges ?? []).sort();
    const kids = await runs.childrenOf("guarded-tools");
    expect(kids.map((k) => k.metadata.name)).toEqual(judged);
    for (const kid of kids) {
      expect(kid.spec.parent).toMatchObject({ name: "guarded-tools", purpose: "tool_validation" });
      expect(kid.metadata.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "guarded-tools", controller: true });
      expect(kid.status).toMatchObject({ phase: "Succeeded", verdict: { score: 0.8, confidence: 0.9 } });
    }
    const table = await cluster.kubectlOk(["get", "ex", "-n", runs.namespace]);
    for (const name of ["guarded-tools", ...judged]) expect(table).toContain(name);
    console.log(`kubectl get ex:\n${table}`);
    // gavel describe (the README's quick start) shows each call with its check or its judge's verdict
    const described = await run(GAVEL, ["describe", "ex", "guarded-tools", "-n", runs.namespace], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath },
    });
    expect(described.stdout, described.stderr).toContain("Tool calls: 7 proposed, 3 allowed, 4 blocked by the guard, 0 by judges");
    expect(described.stdout).toMatch(/step 4  fs\.write  blocked by guard \(sequence_contract\)/);
    for (const kid of judged)
      expect(described.stdout).toMatch(new RegExp(`rule-judge  ${kid}  Succeeded  score 0\\.80 >= 0\\.60  confidence 0\\.90`));
    expect(described.stdout).not.toMatch(/id_rsa|example\.com/);
    // The worker's result, checked by the regex validator, is on its workspace claim.
    expect(done.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["exit_code", true],
      ["regex", true],
    ]);
  }, 420_000);

  it("the controller's traces in Jaeger (chart value tracing.otlpEndpoint): the run's tree, each tool call under its iteration through the worker pod's traceparent, each judge under its call", async () => {
    const url = process.env[E2E_JAEGER_QUERY_ENV];
    expect(url, "test/e2e/global-setup.ts starts Jaeger").toBeDefined();
    const jaeger = jaegerQuery(url ?? "");
    const tags = { "gavel.execution.name": "guarded-tools", "k8s.namespace.name": runs.namespace };
    const [found] = await eventually(
      async () => {
        const t = await jaeger.traces("gavel-controller", tags);
        return t.length > 0 ? t : undefined;
      },
      60_000,
      "the trace of guarded-tools in Jaeger",
    );
    // root, iteration, 2 validators, 7 tool calls, 2 tool judges
    const spans = (await jaeger.trace(found?.traceID ?? "", 13)).spans;
    const tag = (s: JaegerSpan, key: string): unknown => s.tags.find((t) => t.key === key)?.value;
    const parentOf = (s: JaegerSpan): string | undefined => s.references.find((r) => r.refType === "CHILD_OF")?.spanID;
    const root = spans.find((s) => parentOf(s) === undefined);
    expect(root?.operationName).toBe("invoke_agent guarded-tools");
    expect(tag(root as JaegerSpan, "gavel.execution.phase")).toBe("Succeeded");
    const iteration = spans.find((s) => s.operationName === "iteration");
    expect(parentOf(iteration as JaegerSpan)).toBe(root?.spanID);
    const calls = spans
      .filter((s) => tag(s, "gen_ai.operation.name") === "execute_tool")
      .sort((a, b) => Number(tag(a, "gavel.tool.step")) - Number(tag(b, "gavel.tool.step")));
    expect(
      calls.map((c) => [
        tag(c, "gavel.tool.step"),
        tag(c, "gen_ai.tool.name"),
        tag(c, "gavel.guard.decision"),
        tag(c, "gavel.guard.check"),
        parentOf(c) === iteration?.spanID,
      ]),
    ).toEqual([
      [1, "cmd.run", "blocked", "destructive_pattern", true],
      [2, "cmd.run", "blocked", "destructive_pattern", true],
      [3, "http.post", "blocked", "capability", true],
      [4, "fs.write", "blocked", "sequence_contract", true],
      [5, "cmd.run", "allowed", "none", true],
      [6, "fs.read", "allowed", "none", true],
      [7, "fs.write", "allowed", "none", true],
    ]);
    const judges = spans.filter((s) => s.operationName === "invoke_agent rule-judge");
    expect(judges.map(parentOf).sort()).toEqual([calls[4]?.spanID, calls[6]?.spanID].sort());
    expect(
      spans.filter((s) => s.operationName.startsWith("validate ")).map((s) => [s.operationName, parentOf(s) === iteration?.spanID]),
    ).toEqual(
      expect.arrayContaining([
        ["validate exit_code", true],
        ["validate regex", true],
      ]),
    );
    // Each verdict is a gen_ai.evaluation.result event on what it judged: the validators' on the iteration, each tool judge's on its call.
    const evaluations = (s: JaegerSpan | undefined) =>
      (s?.logs ?? [])
        .filter((l) => l.fields.some((f) => f.key === "event" && f.value === "gen_ai.evaluation.result"))
        .map((l) =>
          Object.fromEntries(
            l.fields
              .filter((f) => ["gen_ai.evaluation.name", "gen_ai.evaluation.score.label"].includes(f.key))
              .map((f) => [f.key, f.value]),
          ),
        );
    expect(evaluations(iteration)).toEqual(
      expect.arrayContaining([
        { "gen_ai.evaluation.name": "exit_code", "gen_ai.evaluation.score.label": "pass" },
        { "gen_ai.evaluation.name": "regex", "gen_ai.evaluation.score.label": "pass" },
      ]),
    );
    for (const judged of [calls[4], calls[6]])
      expect(evaluations(judged)).toEqual([{ "gen_ai.evaluation.name": "rule-judge", "gen_ai.evaluation.score.label": "pass" }]);
    expect(evaluations(calls[0])).toEqual([]);
    expect(JSON.stringify(spans)).not.toMatch(/id_rsa|example\.com|blocked calls: 4/);
  }, 120_000);

  it("the controller's /metrics: the decision counters grew by exactly the decisions in the status; promtool check metrics finds nothing", async () => {
    const done = await runs.get("guarded-tools");
    const recent = done?.status?.iterations?.[0]?.toolCalls?.recent ?? [];
    expect(recent).toHaveLength(7);
    const after = await scrapeControllers(cluster, controller);
    const delta = (name: string, by: string[]) => {
      const b = sumBy(before.flatMap(parseSamples), name, by);
      const grown = new Map<string, number>();
      for (const [k, v] of sumBy(after.flatMap(parseSamples), name, by)) if (v - (b.get(k) ?? 0) !== 0) grown.set(k, v - (b.get(k) ?? 0));
      return Object.fromEntries(grown);
    };
    // What the status says, in the counter's labels: decision, who decided, the guard check that blocked.
    const expected: Record<string, number> = {};
    for (const c of recent) {
      const key = JSON.stringify({
        decision: c.allowed ? "allowed" : "blocked",
        decided_by: c.allowed ? ((c.judges ?? []).length > 0 ? "judge" : "guard") : c.blockedBy,
        check: !c.allowed && c.blockedBy === "guard" ? (c.check ?? "unknown") : "none",
      });
      expected[key] = (expected[key] ?? 0) + 1;
    }
    expect(delta("gavel_tool_calls_total", ["decision", "decided_by", "check"])).toEqual(expected);
    expect(delta("gavel_guard_duration_seconds_count", [])).toEqual({ "{}": 7 });
    expect(delta("gavel_judge_results_total", ["purpose", "result"])).toEqual({
      [JSON.stringify({ purpose: "tool_validation", result: "verdict" })]: 2,
    });
    expect(delta("gavel_iterations_total", ["outcome"])).toEqual({ [JSON.stringify({ outcome: "passed" })]: 1 });
    expect(delta("gavel_executions_total", ["phase"])).toEqual({ [JSON.stringify({ phase: "Succeeded" })]: 1 });
    const reconciles = delta("controller_runtime_reconcile_total", ["controller"])[JSON.stringify({ controller: "execution" })] ?? 0;
    expect(reconciles).toBeGreaterThan(0);
    const samples = after.flatMap(parseSamples);
    expect(sumBy(samples, "leader_election_master_status", ["name"]).get(JSON.stringify({ name: "gavel-execution-controller" }))).toBe(1);
    for (const name of [
      "workqueue_depth",
      "workqueue_adds_total",
      "workqueue_queue_duration_seconds_count",
      "workqueue_work_duration_seconds_count",
      "workqueue_retries_total",
      "controller_runtime_reconcile_errors_total",
      "controller_runtime_reconcile_time_seconds_count",
      "gavel_event_stream_publish_lag_seconds_count",
    ]) {
      expect(
        samples.some((s) => s.name === name),
        name,
      ).toBe(true);
    }
    console.log(
      `controller /metrics after the run: ${after[0]?.length ?? 0} bytes, ${samples.length} samples; execution reconciles during the run: ${reconciles}`,
    );
    for (const text of after) {
      const lint = await promtoolCheck(text);
      expect(lint, lint.findings).toEqual({ code: 0, findings: "" });
    }
  }, 120_000);

  it("gavel events -o tree draws the run as local mode does: blocked calls with their check, judged calls with their child", async () => {
    const secret = await core.readNamespacedSecret({ name: "gavel-nats-credentials", namespace: RELEASE_NAMESPACE });
    const creds = join(dir, "gavel.creds");
    await writeFile(creds, Buffer.from(secret.data?.["nats.creds"] ?? "", "base64"), { mode: 0o600 });
    const nats = await core.readNamespacedPod({ name: "gavel-nats-0", namespace: RELEASE_NAMESPACE });
    const url = `nats://${nats.status?.podIP ?? ""}:4222`;
    // Publishing trails the status write: wait until the tree has its final phase.
    const tree = await eventually(
      async () => {
        const r = await run(GAVEL, ["events", "--nats", url, "--creds", creds, "-n", runs.namespace, "guarded-tools", "-o", "tree"], {
          timeoutMs: 60_000,
        });
        if (r.code !== 0) throw new Error(`gavel events: ${r.stderr}`);
        return r.stdout.includes("Succeeded") ? r.stdout : undefined;
      },
      60_000,
      "the run's tree in the event stream",
    );
    console.log(tree);
    const kids = (await runs.childrenOf("guarded-tools")).map((k) => k.metadata.name);
    for (const line of [
      "tool call 1 cmd.run  blocked by guard (destructive_pattern)",
      "tool call 2 cmd.run  blocked by guard (destructive_pattern)",
      "tool call 3 http.post  blocked by guard (capability)",
      "tool call 4 fs.write  blocked by guard (sequence_contract)",
      "tool call 5 cmd.run  allowed",
      "tool call 6 fs.read  allowed",
      "tool call 7 fs.write  allowed",
      ...kids.map((k) => `judge rule-judge (${k}) score 0.80 confidence 0.90`),
      "validator 1 regex  score 1.00",
    ])
      expect(tree).toContain(line);
    expect(tree).not.toMatch(/id_rsa|example\.com/);
  }, 120_000);

  it("fail closed: on a controller without NATS, an Agent with tool_validation never gets a worker pod, and both say why", async () => {
    natsOff = true;
    await controller.configure(["--set", "nats.enabled=false"]);
    // Its own deadline is long enough to outlast the outage below.
    await runs.apply(
      "apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata:\n  name: unguarded\nspec:\n  timeoutSeconds: 900\n  agentRef:\n    name: guarded-tools\n",
    );
    const pending = await eventually(
      async () => {
        const ex = await runs.get("unguarded");
        return ex?.status?.conditions?.some((c) => c.type === "Guarded") === true ? ex : undefined;
      },
      60_000,
      "the Guarded condition",
    );
    expect(pending.status?.phase).toBe("Pending");
    expect(pending.status?.conditions?.find((c) => c.type === "Guarded")).toMatchObject({ status: "False", reason: "GateUnavailable" });
    expect(pending.status?.message).toMatch(/without NATS/);
    const ready = await eventually(
      async () => {
        const a = (await api.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: runs.namespace,
          plural: "agents",
          name: "guarded-tools",
        })) as Agent;
        const c = a.status?.conditions?.find((x) => x.type === "Ready");
        return c?.reason === "CannotEnforce" ? c : undefined;
      },
      60_000,
      "Agent guarded-tools Ready=False CannotEnforce",
    );
    expect(ready.status).toBe("False");
    // A few more reconciles (resync, the Agent's change): still no pod of that Execution.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(await runs.podsOf("unguarded")).toEqual([]);
    const described = await cluster.kubectlOk([
      "get",
      "ex",
      "unguarded",
      "-n",
      runs.namespace,
      "-o",
      "jsonpath={.status.conditions[?(@.type=='Guarded')].message}",
    ]);
    expect(described).toMatch(/NATS/);

    // NATS back: the same Execution runs, guarded, to the end.
    await controller.configure();
    natsOff = false;
    const done = await runs.final("unguarded", 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    expect(done.status?.toolCalls).toEqual({ proposed: 7, allowed: 3, blocked: 4 });
  }, 600_000);
});
