// stdout apart from stderr on the single-node cluster (Kubernetes 1.31 merges them in pods/log):
// gavel's worker and judge pods run their program under gavel-launch, mounted from a
// ConfigMap the controller keeps in the namespace, so an anchored regex on a worker's stdout and a judge's verdict never see stderr,
// and both streams are kept (the worker's stored result, the judge's rawOutput). The programs
// are plain `sh` on gavel's base image, declared with the Agent's runtime.command: any image
// whose program is declared works the same way. An image whose program gavel does not know
// keeps the merged log, and says so where a reader of stdout would be misled (ADR 0041).
import * as k8s from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { type Cluster } from "../harness/cluster.js";
import { chartRuns } from "../harness/chart-runs.js";
import { type Executions } from "../harness/executions.js";

// The judge prints a verdict on stdout and a rejecting one on stderr: merged, the parse would
// see two verdicts (or the wrong last one).
const YAML = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: streams-judge
  labels:
    role: judge
spec:
  runtime:
    image: gavel/base:bookworm-node20
    pull_policy: Never
    command: ["sh", "-c", "echo '{\\"score\\": 0, \\"confidence\\": 1, \\"reasoning\\": \\"stderr noise\\"}' >&2; echo '{\\"score\\": 1, \\"confidence\\": 1, \\"reasoning\\": \\"from stdout\\"}'; echo 'judge: done' >&2"]
  security:
    network:
      mode: none
    resources:
      timeout: "60s"
  execution:
    mode: one-shot
---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: streams-worker
spec:
  runtime:
    image: gavel/base:bookworm-node20
    pull_policy: Never
    command: ["sh", "-c", "echo 'warning: stderr noise before' >&2; echo RESULT=ok; echo 'warning: stderr noise after' >&2"]
  security:
    network:
      mode: none
  execution:
    mode: one-shot
    validation:
      - type: regex
        pattern: "^RESULT=ok$"
      - type: semantic
        judge_agent: streams-judge
        min_score: 1.0
---
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: streams
spec:
  agentRef:
    name: streams-worker
`;

describe("stdout apart from stderr on the cluster", () => {
  let cluster: Cluster;
  let runs: Executions;
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-judge-streams"));
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  });

  it("a worker writing to both streams passes an anchored regex on stdout; the judge's verdict is parsed from stdout; both keep stderr", async () => {
    await runs.apply(YAML);
    const ex = await runs.final("streams");
    const ref = ex.status?.children?.[0];
    const child = ref === undefined ? undefined : await runs.get(ref.name);
    expect(ex.status?.phase, JSON.stringify({ parent: ex.status, child: child?.status })).toBe("Succeeded");
    expect(ex.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["regex", true],
      ["semantic", true],
    ]);
    expect(child?.status?.verdict).toMatchObject({ score: 1, reasoning: "from stdout" });
    expect(child?.status?.rawOutput?.stdout.trim()).toBe('{"score": 1, "confidence": 1, "reasoning": "from stdout"}');
    expect(child?.status?.rawOutput?.stderr).toBe('{"score": 0, "confidence": 1, "reasoning": "stderr noise"}\njudge: done\n');
    // The worker's stored result keeps both streams apart.
    const result = await core.readNamespacedConfigMap({ name: "streams-i1-result", namespace: runs.namespace });
    expect(result.data?.stdout).toBe("RESULT=ok\n");
    expect(result.data?.stderr).toBe("warning: stderr noise before\nwarning: stderr noise after\n");
    // The kept pod ran its program under the launcher, mounted from the namespace's ConfigMap;
    // `kubectl logs` reads like the program's output.
    const pod = await core.readNamespacedPod({ name: "gavel-streams-i1-ex", namespace: runs.namespace });
    expect(pod.spec?.initContainers).toBeUndefined();
    expect(pod.spec?.containers[0]?.command?.[0]).toBe("/gavel-launch/gavel-launch");
    const launcher = pod.spec?.volumes?.find((v) => v.name === "gavel-launch")?.configMap?.name ?? "";
    expect(launcher).toMatch(/^gavel-launch-[0-9a-f]{10}$/);
    expect((await core.readNamespacedConfigMap({ name: launcher, namespace: runs.namespace })).immutable).toBe(true);
    const log = await core.readNamespacedPodLog({ name: "gavel-streams-i1-ex", namespace: runs.namespace, container: "main" });
    expect(log).toContain("RESULT=ok\n");
  }, 180_000);

  it("a worker image whose program gavel does not know keeps the merged log: a failing anchored regex and the worker's Event say why", async () => {
    // example-k8s-worker's program is its image's CMD, declared nowhere gavel reads; with no
    // workspace volume it fails writing /workspace/runs.log, its stack trace on stderr.
    await runs.apply(`
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: streams-unknown }
spec:
  runtime: { image: "gavel/example-k8s-worker:dev", pull_policy: Never }
  security: { network: { mode: none } }
  execution: { mode: one-shot, max_iterations: 1, validation: [{ type: regex, pattern: '^\\{"status".*\\}$' }] }
---
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata: { name: streams-unknown }
spec: { agentRef: { name: streams-unknown } }
`);
    const ex = await runs.final("streams-unknown");
    const regex = ex.status?.iterations?.[0]?.validators?.[0];
    expect(ex.status?.phase).toBe("Failed");
    expect(regex?.reasoning).toMatch(
      /^stdout does not match .* \(stderr is merged into stdout: gavel does not know the program of image gavel\/example-k8s-worker:dev .*declare spec\.runtime\.command/,
    );
    const result = await core.readNamespacedConfigMap({ name: "streams-unknown-i1-result", namespace: runs.namespace });
    expect(result.data?.stdout).toMatch(/Error: E[A-Z]+/); // the stack trace, written to stderr
    expect(result.data?.streamsMerged).toBe(regex?.reasoning?.replace(/^.*? \((.*)\)$/, "$1"));
    const finished = await eventually(
      async () => {
        const list = await core.listNamespacedEvent({
          namespace: runs.namespace,
          fieldSelector: "involvedObject.name=streams-unknown,reason=WorkerFinished",
        });
        return list.items[0];
      },
      10_000,
      "streams-unknown's WorkerFinished event",
    );
    expect(finished.type).toBe("Warning");
    expect(finished.message).toContain("stderr is merged into stdout");
  }, 120_000);
});
