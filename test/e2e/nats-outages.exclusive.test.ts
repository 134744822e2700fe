// The chart's NATS pod going away under running Executions (issue 28), on the single-node
// cluster as `helm install` runs it: deleted three times while worker pods start and while
// their tool calls wait, every run ends as an undisturbed run of the same set does; scaled to
// zero for longer than an iteration's deadline, the run ends saying the gate could not be
// reached, and no tool call ran, while the controller pod turns NotReady (its /readyz naming
// nats) without being restarted (the livenessProbe asks /healthz only), Ready again once NATS is
// back; a worker whose MCP server image (ADR 0066) it listed before NATS went away sends that
// server nothing after (fail closed). In the exclusive lane: every other file's runs lose NATS too.
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { isTerminal } from "../../src/engine/phases.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { executionYaml, sleepingJudgeYaml } from "../harness/example-worker.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { natsPodReady } from "../harness/decision-records.js";
import { NatsServers } from "../harness/nats-servers.js";
import { EVERYTHING_CONTAINER, everythingPosts, killAll, running } from "../harness/mcp-everything.js";
import { MAIN_CONTAINER } from "../../src/runtime/kubernetes/pod-spec.js";

const NATS_POD = "gavel-nats-0";

/** gavel's worker runtime, started `delay` seconds after its container (so that it starts while NATS is gone). */
const delayedAgent = (delay: number) => `["sh", "-c", "sleep ${delay} && exec node /opt/gavel/dist/src/agent/main.js"]`;

// A judge that takes a few seconds (gavel's runtime in judge mode, a scripted `sleep`): calls wait on it.
const judgeYaml = sleepingJudgeYaml("nap-judge", 4);

// Four calls: one the guard blocks, two judged by nap-judge, one that skips judges.
const workerYaml = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: nats-worker
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    command: ${delayedAgent(2)}
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: cmd.run, args: { command: "rm -rf /" } }]
          - tool_calls: [{ tool: cmd.run, args: { command: "ls /workspace" }, intent: see what the workspace holds }]
          - tool_calls: [{ tool: fs.list, args: { path: /workspace } }]
          - tool_calls: [{ tool: cmd.run, args: { command: "ls -a /workspace" }, intent: see hidden files too }]
          - final: "done"
  task:
    instruction: List the workspace.
  tools:
    - fs.list
    - name: cmd.run
      allowlist: ["ls"]
  security:
    network:
      mode: allow
    resources:
      timeout: "120s"
  volumes:
    - name: workspace
      mount_path: /workspace
      size: 16Mi
  execution:
    mode: one-shot
    tool_validation:
      - type: semantic
        judge_agent: nap-judge
        min_score: 0.5
        min_confidence: 0.5
    validation:
      - type: exit_code
        expected: 0
`;

// A worker with a 20 s iteration whose runtime starts 6 s in (NATS is gone by then); its one call writes a file.
const shortWorkerYaml = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: short-worker
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    command: ${delayedAgent(6)}
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: fs.write, args: { path: /workspace/ran.txt, content: "ran" } }]
          - final: "wrote it"
  task:
    instruction: Write a file.
  tools:
    - fs.write
  security:
    network:
      mode: allow
    resources:
      timeout: "20s"
  volumes:
    - name: workspace
      mount_path: /workspace
      size: 16Mi
  execution:
    mode: one-shot
    validation:
      - type: exit_code
        expected: 0
`;

// A worker with an MCP server image (examples/mcp-container's server-everything beside it in
// its pod, ADR 0066): its first call (cmd.run sleep) holds it until the test has taken NATS
// away and ends the sleep; its next call, to the server, must then never reach the server.
// Its run ends by its deadline, which is most of the scaled-to-zero case's time: 40 s (was 60;
// the test ends the sleep within about 20 s of the worker's start, 2026-12-07).
const mcpWorkerYaml = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: mcp-worker
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: cmd.run, args: { command: "sleep 300" } }]
          - tool_calls: [{ tool: everything.echo, args: { message: hello } }]
          - final: "echoed"
  task:
    instruction: Wait, then echo a greeting through the everything server.
  tools:
    - name: cmd.run
      allowlist: ["sleep"]
  mcp_servers:
    - name: everything
      image: gavel/mcp-everything:dev
      port: 3001
      args: [streamableHttp]
      tools: [echo]
  security:
    network:
      mode: allow
    resources:
      timeout: "40s"
  execution:
    mode: one-shot
`;

const SET = 3;

describe("Executions while the chart's NATS goes away (chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let controller: ChartController;
  let runs: Executions;
  let scaledDown = false;
  const timings: Record<string, number> = {};

  const natsReady = () => natsPodReady(core);
  const deleteNats = async (): Promise<number> => {
    const t0 = Date.now();
    await new NatsServers(cluster).restart(NATS_POD);
    return Date.now() - t0;
  };
  const ready = (pod: k8s.V1Pod) => pod.status?.conditions?.find((c) => c.type === "Ready")?.status;
  /** The pod's /readyz?verbose through the API server's pod proxy, whatever its status code. */
  const readyz = async (pod: k8s.V1Pod): Promise<string> => {
    const port = pod.spec?.containers[0]?.ports?.find((p) => p.name === "health")?.containerPort;
    const r = await cluster.kubectl([
      "get",
      "--raw",
      `/api/v1/namespaces/${RELEASE_NAMESPACE}/pods/${pod.metadata?.name ?? ""}:${port ?? 0}/proxy/readyz?verbose`,
    ]);
    // kubectl prints a 500's body in its error.
    return r.stdout + r.stderr;
  };
  const workerPods = async (execution: string): Promise<k8s.V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: runs.namespace, labelSelector: `gavel.dev/execution=${execution},gavel.dev/role=worker` }))
      .items;
  const toolJudges = async (execution: string): Promise<Execution[]> =>
    (await runs.childrenOf(execution)).filter((c) => c.spec.parent?.purpose === "tool_validation");

  /** What an Execution ended as, without names: phase, its iteration's calls and decisions, its judge children. */
  const outcome = async (name: string) => {
    const ex = await runs.final(name, 300_000);
    const it = ex.status?.iterations?.at(-1);
    const calls = it?.toolCalls;
    return {
      phase: ex.status?.phase,
      iterations: ex.status?.iterations?.length,
      exitCode: it?.exitCode,
      calls:
        calls === undefined
          ? undefined
          : {
              proposed: calls.proposed,
              allowed: calls.allowed,
              blockedByGuard: calls.blockedByGuard,
              blockedByJudge: calls.blockedByJudge,
            },
      decisions: (calls?.recent ?? []).map(callSummary),
      judgeChildren: (await toolJudges(name)).map((c) => c.status?.phase),
    };
  };

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    controller = new ChartController(cluster);
    await Promise.all([controller.ready(), natsReady()]);
    runs = executionsIn(
      cluster,
      await cluster.createNamespace("e2e-nats-outages"),
      async () => `controller log:\n${(await controller.log()).slice(-6000)}`,
    );
    await runs.apply(`${judgeYaml}---${workerYaml}---${shortWorkerYaml}---${mcpWorkerYaml}`);
    for (const agent of ["nats-worker", "short-worker", "mcp-worker"]) {
      await eventually(
        async () => {
          const r = await cluster.kubectl([
            "get",
            "agent",
            agent,
            "-n",
            runs.namespace,
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
          ]);
          return r.stdout === "True" ? true : undefined;
        },
        60_000,
        `Agent ${agent} Ready`,
      );
    }
  }, 300_000);

  afterAll(async () => {
    console.log(`nats outage e2e timings (s): ${JSON.stringify(timings)}`);
    if (scaledDown) await cluster.kubectl(["scale", "statefulset", "-n", RELEASE_NAMESPACE, "gavel-nats", "--replicas=1"]);
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  it("the controller pod is Ready by its readinessProbe: /readyz passes every check", async () => {
    const [pod] = await controller.ready();
    if (pod === undefined) throw new Error("no controller pod");
    const c = pod.spec?.containers[0];
    expect(c?.readinessProbe?.httpGet).toMatchObject({ path: "/readyz", port: "health" });
    expect(c?.livenessProbe?.httpGet).toMatchObject({ path: "/healthz", port: "health" });
    expect(await readyz(pod)).toBe("[+]shutdown ok\n[+]informers ok\n[+]apiserver ok\n[+]nats ok\nreadyz check passed\n");
  }, 180_000);

  it("NATS deleted while worker pods start and while calls wait, three times in one run set: every run ends as the undisturbed set's do, each call decided once", async () => {
    // Given the set run undisturbed
    let t0 = Date.now();
    await runs.apply(Array.from({ length: SET }, (_, i) => executionYaml(`calm-${i}`, "nats-worker")).join("---"));
    const calm = await Promise.all(Array.from({ length: SET }, (_, i) => outcome(`calm-${i}`)));
    timings.undisturbedSet = (Date.now() - t0) / 1000;
    expect(calm[0]?.phase).toBe("Succeeded");
    expect(calm[0]?.judgeChildren).toEqual(["Succeeded", "Succeeded"]);
    expect(calm.slice(1)).toEqual(calm.slice(0, SET - 1));

    // When the same set runs while NATS is deleted three times
    t0 = Date.now();
    const names = Array.from({ length: SET }, (_, i) => `stormy-${i}`);
    await runs.apply(names.map((n) => executionYaml(n, "nats-worker")).join("---"));
    // 1: while the worker pods start (their runtime starts 2 s into the container).
    await eventually(
      async () =>
        (await Promise.all(names.map(workerPods))).every((ps) => ps.some((p) => p.status?.phase === "Running")) ? true : undefined,
      120_000,
      "every worker pod running",
    );
    const restarts = [await deleteNats()];
    // 2: while a judged call waits on its judge.
    await eventually(
      async () =>
        (await Promise.all(names.map(toolJudges))).some((cs) => cs.some((c) => !isTerminal(c.status?.phase))) ? true : undefined,
      120_000,
      "a tool-judge child judging",
    );
    restarts.push(await deleteNats());
    // 3: at once again, while the calls of the first restart are re-sent and the second judged calls wait.
    const waiting = (await Promise.all(names.map((n) => runs.get(n)))).filter((e) => !isTerminal(e?.status?.phase)).length;
    expect(waiting, "runs still going at the third deletion").toBeGreaterThan(0);
    restarts.push(await deleteNats());
    const stormy = await Promise.all(names.map(outcome));
    timings.disturbedSet = (Date.now() - t0) / 1000;
    timings.natsRestarts = restarts.reduce((a, b) => a + b, 0) / 1000;
    console.log(
      `NATS pod deleted and Ready again in ${restarts.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s; ${waiting} of ${SET} runs still going at the third deletion`,
    );

    // Then each ends as an undisturbed run does: same phase, calls, decisions, judge children (one per judged call)
    for (const o of stormy) expect(o).toEqual(calm[0]);
    await controller.ready();
  }, 600_000);

  it("NATS scaled to zero for longer than an iteration's deadline: the run ends saying the gate could not be reached, and no tool call ran; the controller pod turns NotReady naming nats, is not restarted, and is Ready again once NATS is back; an MCP server image gets no call", async () => {
    const [before] = await controller.ready();
    if (before === undefined) throw new Error("no controller pod");
    const restartCount = before.status?.containerStatuses?.[0]?.restartCount ?? 0;
    // The MCP worker first: its server listed, its sleep (a call the gate allowed) running.
    await runs.apply(executionYaml("no-nats-mcp", "mcp-worker"));
    const mcpPod = await eventually(
      async () => (await workerPods("no-nats-mcp")).find((p) => p.status?.phase === "Running")?.metadata?.name,
      120_000,
      "the MCP worker pod running",
    );
    const inMcpWorker = (script: string) =>
      cluster.kubectl(["exec", "-n", runs.namespace, mcpPod, "-c", MAIN_CONTAINER, "--", "sh", "-c", script]);
    await eventually(async () => ((await inMcpWorker(running("sleep"))).code === 0 ? true : undefined), 60_000, "the MCP worker's sleep");
    const t0 = Date.now();
    await runs.apply(executionYaml("no-nats", "short-worker"));
    await eventually(
      async () => ((await workerPods("no-nats")).some((p) => p.status?.phase === "Running") ? true : undefined),
      120_000,
      "the worker pod running",
    );
    scaledDown = true;
    const scale = await cluster.kubectl(["scale", "statefulset", "-n", RELEASE_NAMESPACE, "gavel-nats", "--replicas=0"]);
    expect(scale.code, scale.stderr).toBe(0);
    const tScaled = Date.now();
    const notReady = await eventually(
      async () => {
        const [p] = await controller.pods();
        return p !== undefined && ready(p) === "False" ? p : undefined;
      },
      120_000,
      "the controller pod NotReady without NATS",
    );
    timings.controllerNotReady = (Date.now() - tScaled) / 1000;
    const body = await readyz(notReady);
    expect(body).toMatch(/\[-\]nats failed: the tool-call gate (lost NATS|cannot reach NATS) at nats:\/\/gavel-nats/);
    expect(body).toContain("[+]informers ok");
    expect(body).toContain("[+]apiserver ok");
    // NATS is gone: the MCP worker's sleep ends, and its call to the server finds no gate.
    const ended = await inMcpWorker(killAll("sleep"));
    expect(ended.code, ended.stderr).toBe(0);
    const done = await runs.final("no-nats", 120_000);
    timings.scaledToZero = (Date.now() - t0) / 1000;

    const it = done.status?.iterations?.[0];
    expect(done.status?.phase, done.status?.message).toBe("Failed");
    expect(done.status?.message).toMatch(
      /^no iteration passed within max_iterations 1; last the tool-call gate could not be reached for \d+ s \(NATS at nats:\/\/[^:]+:4222: .*\)/,
    );
    expect(it?.exitCode).toBe(75);
    // Not judged as the agent's failure: no validator ran on it.
    expect(it?.validators ?? []).toEqual([]);
    expect(it?.toolCalls?.proposed ?? 0).toBe(0);
    expect(existsSync(join(await runs.workspace("no-nats"), "ran.txt"))).toBe(false);
    const events = await core.listNamespacedEvent({
      namespace: runs.namespace,
      fieldSelector: "involvedObject.name=no-nats,reason=WorkerGateUnreachable",
    });
    expect(events.items.map((e) => e.type)).toEqual(["Warning"]);
    expect(events.items[0]?.message).toContain("the tool-call gate could not be reached for");

    // Fail closed: the MCP worker's run ends by its deadline, its call to the server undecided and
    // never sent; the server had initialize, notifications/initialized and tools/list, no tools/call.
    const mcpDone = await runs.final("no-nats-mcp", 120_000);
    timings.mcpScaledToZero = (Date.now() - t0) / 1000;
    expect(mcpDone.status?.phase, mcpDone.status?.message).toBe("Failed");
    expect(mcpDone.status?.message).toMatch(/last the tool-call gate could not be reached for \d+ s/);
    expect(mcpDone.status?.iterations?.[0]?.exitCode).toBe(75);
    expect((mcpDone.status?.iterations?.[0]?.toolCalls?.recent ?? []).map(callSummary)).toEqual([[1, "cmd.run", "allowed", "", 0]]);
    const serverLog = await cluster.kubectlOk(["logs", "-n", runs.namespace, mcpPod, "-c", EVERYTHING_CONTAINER]);
    expect(everythingPosts(serverLog)).toBe(3);

    const back = await cluster.kubectl(["scale", "statefulset", "-n", RELEASE_NAMESPACE, "gavel-nats", "--replicas=1"]);
    expect(back.code, back.stderr).toBe(0);
    const tBack = Date.now();
    await natsReady();
    scaledDown = false;
    const [after] = await controller.ready(1, 180_000);
    timings.controllerReadyAgain = (Date.now() - tBack) / 1000;
    // The same container throughout: readiness follows NATS, liveness never fired.
    expect(after?.metadata?.name).toBe(before.metadata?.name);
    expect(after?.status?.containerStatuses?.[0]?.restartCount ?? 0).toBe(restartCount);
  }, 420_000);
});
