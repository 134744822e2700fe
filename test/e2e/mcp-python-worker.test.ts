// Issue 23 item 2 on the cluster, as a user runs it: a worker gavel did not write (Python on
// the official `mcp` client from PyPI, gavel/example-mcp-python:dev) calls its tools through the
// MCP endpoint gavel runs in its pod (spec.mcp_endpoint, ADR 0061): the built-in fs tools and a
// Python MCP server, mcp-server-git from PyPI, which the endpoint runs over stdio in its own
// image (gavel/example-mcp-python-endpoint:dev; make images builds both). Given the
// chart-installed controller, when the example's Agent, GuardPolicy, the rule-judge and the
// Execution are applied with kubectl in a namespace enforcing Pod Security restricted, then the
// pod carries the endpoint as a native sidecar; the secret read is denied by the guard under the
// same threat class as through the MCP filesystem server (an isError result with the decision);
// the writes (fs.write, git.git_add) are judged by rule-judge children; the policy's read-only git
// tools skip the judges and git_commit is denied for the capability the policy requires; the
// allowed results reach the worker. Shared lane.
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyExample, chartRuns } from "../harness/chart-runs.js";
import { eventually, type Cluster } from "../harness/cluster.js";
import { run } from "../harness/exec.js";
import { callSummary, type Executions } from "../harness/executions.js";
import { REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const NAME = "mcp-python-worker";
const SECRET_READ = "secrets: reads files: a secret file";

describe("a Python worker on the MCP client, guarded through the in-pod endpoint with a Python MCP server (chart-installed controller)", () => {
  let cluster: Cluster;
  let runs: Executions;

  beforeAll(async () => {
    // The README's quick starts run in a namespace that enforces Pod Security restricted: so does this one.
    ({ cluster, runs } = await chartRuns("e2e-mcp-python", { logTail: 6000, restricted: true }));
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  it("denies the secret read and the git commit, judges fs.write and git.git_add by rule-judge children, returns the allowed results to the Python worker", async () => {
    await applyExample(cluster, runs.namespace, "mcp-python-worker");
    // The worker's pod, while it exists: the endpoint as a native sidecar in its own image, admitted under Pod Security restricted.
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const pod = await eventually(
      async () => {
        const pods = await core.listNamespacedPod({
          namespace: runs.namespace,
          labelSelector: `gavel.dev/execution=${NAME},gavel.dev/role=worker`,
        });
        return pods.items[0];
      },
      120_000,
      "the worker's pod",
    );
    const sidecar = pod.spec?.initContainers?.find((c) => c.name === "gavel-mcp-endpoint");
    expect(sidecar).toMatchObject({ restartPolicy: "Always", image: "gavel/example-mcp-python-endpoint:dev" });
    expect(pod.spec?.containers[0]?.env).toContainEqual({ name: "GAVEL_MCP_URL", value: "http://127.0.0.1:8931/mcp" });
    const done = await runs.final(NAME, 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");

    const calls = done.status?.iterations?.[0]?.toolCalls;
    expect(calls).toMatchObject({ proposed: 7, allowed: 5, blockedByGuard: 2, blockedByJudge: 0 });
    expect(calls?.recent?.map(callSummary)).toEqual([
      // The policy's read-only git tools skip the judges; the guard still ran.
      [1, "git.git_log", "allowed", "", 0],
      [2, "fs.write", "allowed", "", 1],
      [3, "git.git_add", "allowed", "", 1],
      [4, "git.git_status", "allowed", "", 0],
      [5, "git.git_commit", "blocked by guard", "capability", 0],
      [6, "fs.read", "blocked by guard", "destructive_pattern", 0],
      [7, "fs.read", "allowed", "", 0],
    ]);
    expect(calls?.recent?.map((c) => c.server ?? "built-in")).toEqual(["git", "built-in", "git", "git", "git", "built-in", "built-in"]);
    expect(calls?.recent?.[4]?.reason).toContain("capability_boundary: missing vcs-commit");
    expect(calls?.recent?.[5]?.reason).toContain(SECRET_READ);
    // The regex validator read the worker's stdout: the allowed read's result reached it.
    expect(done.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["exit_code", true],
      ["regex", true],
    ]);
    expect(JSON.stringify(done.status)).not.toContain("not-a-real-one");

    // The judged writes' children: rule-judge runs owned by the Execution; the git write's payload carries the server's descriptor.
    const judged = (calls?.recent ?? []).flatMap((c) => c.judges ?? []).sort();
    const kids = await runs.childrenOf(NAME);
    expect(kids.map((k) => k.metadata.name).sort()).toEqual(judged);
    expect(kids.map((k) => [k.spec.parent?.purpose, k.status?.phase])).toEqual([
      ["tool_validation", "Succeeded"],
      ["tool_validation", "Succeeded"],
    ]);
    const gitJudge = kids.find((k) => k.metadata.name === calls?.recent?.[2]?.judges?.[0]);
    const payload = gitJudge?.spec.input as
      { proposed_tool_call?: { tool?: string; mcp?: { server?: string; tool?: string; pinned?: boolean } } } | undefined;
    expect(payload?.proposed_tool_call).toMatchObject({ tool: "git.git_add", mcp: { server: "git", tool: "git_add", pinned: true } });

    // What the worker printed: each result as the official client read it, the denials as isError results carrying the decision.
    const env = { ...process.env, KUBECONFIG: cluster.kubeconfigPath };
    const logs = (await run(GAVEL, ["logs", NAME, "-n", runs.namespace], { env })).stdout;
    console.log(logs);
    expect(logs).toContain("tools: fs.read, fs.write, git.git_add, git.git_commit, git.git_diff_staged, git.git_log, git.git_status");
    expect(logs).toMatch(/git log: Commit history: \| Commit: [0-9a-f]{40} \| Author: Python worker \| .*Message: initial/);
    expect(logs).toContain("git add: Files staged successfully");
    expect(logs).toMatch(/git status: .*Changes to be committed:.*new file: +notes\.md/);
    expect(logs).toContain(
      'git commit: denied {"blocked_by": "guard", "check": "capability", "reason": "capability_boundary: missing vcs-commit"}',
    );
    expect(logs).toMatch(
      /secret read: denied \{"blocked_by": "guard", "check": "destructive_pattern", "reason": "secrets: reads files: a secret file \[path\]"\}/,
    );
    expect(logs).toContain("read back: status: done");
    expect(logs).not.toContain("not-a-real-one");

    const described = await run(GAVEL, ["describe", "ex", NAME, "-n", runs.namespace], { env });
    expect(described.code, described.stderr).toBe(0);
    console.log(described.stdout);
    expect(described.stdout).toContain("Tool calls: 7 proposed, 5 allowed, 2 blocked by the guard, 0 by judges");
    expect(described.stdout).toMatch(
      /step 5  git\.git_commit  blocked by guard \(capability\)  \S+\n\s+Why:\s+capability_boundary: missing vcs-commit\n\s+MCP server:\s+git\n\s+MCP tool:\s+git_commit\n\s+Decided by:\s+guard: capability\n/,
    );
  }, 420_000);
});
