// The objects the Execution reconciler creates: names are deterministic, everything is owned
// by its Execution, judges mount the worker's claims read-only, results survive in a ConfigMap.
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { LABELS } from "../runtime/kubernetes/pod-spec.js";
import { validationJudgeChild } from "../children/child-executions.js";
import { ENV_PAYLOAD_LIMIT } from "../children/workloads.js";
import {
  EXECUTION_INSTANCE,
  STORED_OUTPUT_LIMIT,
  claimManifest,
  claimName,
  controllingExecution,
  judgePod,
  podEnd,
  resultConfigMap,
  workerPod,
  workerResultOf,
  workloadPodName,
  workspaceMounts,
} from "./execution-pods.js";

const ex: Execution = { apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { name: "demo", namespace: "team", uid: "uid-1" }, spec: { agentRef: { name: "w" }, input: { n: 1 } } };
const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "w" },
  spec: {
    runtime: { image: "gavel/example:dev", pull_policy: "Never" },
    task: { instruction: "do it" },
    security: { network: { mode: "none" }, resources: { memory: "256Mi" } },
    volumes: [{ name: "workspace", mount_path: "/workspace", storage_class: "fast", size: "2Gi" }],
  },
};
const judge: Agent = { apiVersion: "100monkeys.ai/v1", kind: "Agent", metadata: { name: "rule-judge", labels: { role: "judge" } }, spec: { runtime: { image: "gavel/rule-judge:dev" } } };

describe("execution pods", () => {
  it("the worker pod has a deterministic name, the Execution as controller owner, the env contract and the claim read-write", () => {
    const pod = workerPod(ex, agent, { name: "demo-i2", iteration: 2, feedback: "fix it", timeoutSeconds: 60 }, {});
    expect(pod.metadata?.name).toBe(workloadPodName("demo-i2"));
    expect(pod.metadata?.name).toBe(`gavel-demo-i2-${EXECUTION_INSTANCE}`);
    expect(pod.metadata?.ownerReferences).toEqual([{ apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "demo", uid: "uid-1", controller: true, blockOwnerDeletion: true }]);
    expect(controllingExecution(pod as never)).toBe("demo");
    expect(pod.metadata?.labels).toMatchObject({ [LABELS.instance]: EXECUTION_INSTANCE, "gavel.dev/execution": "demo", "gavel.dev/iteration": "2", [LABELS.network]: "none" });
    const c = pod.spec?.containers[0];
    const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ GAVEL_EXECUTION: "demo", GAVEL_ITERATION: "2", GAVEL_FEEDBACK: "fix it", GAVEL_INPUT: '{"n":1}', GAVEL_WORKSPACE: "/workspace", GAVEL_TASK: "do it" });
    expect(c?.image).toBe("gavel/example:dev");
    expect(c?.imagePullPolicy).toBe("Never");
    expect(pod.spec?.activeDeadlineSeconds).toBe(60);
    expect(pod.spec?.volumes?.find((v) => v.persistentVolumeClaim !== undefined)?.persistentVolumeClaim).toEqual({ claimName: "demo-workspace", readOnly: false });
  });

  it("the judge pod gets the payload in GAVEL_INPUT and the parent's claims read-only; too big a payload is refused by name", () => {
    const request = { name: "demo-i1-v0-rule-judge", judge: "rule-judge", iteration: 1, validatorIndex: 0, validator: { type: "semantic" as const, judge_agent: "rule-judge", criteria: "x" }, depth: 1, timeoutSeconds: 30, network: "none" as const };
    const child = validationJudgeChild({ parent: ex, worker: agent, judge: { ...judge, spec: { ...judge.spec, input_schema: { type: "object", properties: { criteria: { type: "string" } } } } }, request, output: "", workerMounts: [] }).execution;
    const pod = judgePod(child, judge, workspaceMounts("demo", agent, true), {});
    if (typeof pod === "string") throw new Error(pod);
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Execution", name: "demo-i1-v0-rule-judge", controller: true });
    const c = pod.spec?.containers[0];
    expect(c?.command).toBeUndefined();
    expect(c?.env?.find((e) => e.name === "GAVEL_INPUT")?.value).toBe('{"criteria":"x"}');
    expect(c?.volumeMounts?.find((m) => m.mountPath === "/workspace")?.readOnly).toBe(true);
    expect(pod.spec?.securityContext?.runAsUser).toBe(65534);
    const big = { ...child, spec: { ...child.spec, input: { output: "x".repeat(ENV_PAYLOAD_LIMIT) } } };
    expect(judgePod(big, judge, [], {})).toMatch(/GAVEL_INPUT, which holds at most/);
    expect(judgePod(child, { ...judge, spec: {} }, [], {})).toMatch(/names no image and no language runtime/);
  });

  it("claims take the volume's size, access mode and storage class", () => {
    const pvc = claimManifest(ex, agent.spec.volumes![0]!);
    expect(pvc.metadata?.name).toBe("demo-workspace");
    expect(pvc.spec).toEqual({ accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } }, storageClassName: "fast" });
    expect(claimName("My_Run", "Work Space")).toBe("my-run-work-space");
  });

  it("a worker result survives a ConfigMap round trip; output beyond the limit is cut and marked", () => {
    const w = { iteration: 2, exitCode: 3, stdout: "out", stderr: "err", timedOut: true, cancelled: false };
    expect(workerResultOf(resultConfigMap(ex, "demo-i2", w))).toEqual(w);
    const big = resultConfigMap(ex, "demo-i2", { ...w, stdout: "y".repeat(STORED_OUTPUT_LIMIT + 10) });
    expect(big.data?.stdout?.startsWith("y".repeat(STORED_OUTPUT_LIMIT))).toBe(true);
    expect(big.data?.stdout).toMatch(/cut at 900 KiB/);
    expect(workerResultOf({ data: { iteration: "x" } })).toBeUndefined();
  });

  it("reads how a pod ended: exit code, deadline, or never starting", () => {
    expect(podEnd({ status: { phase: "Running" } })).toBeUndefined();
    expect(podEnd({ status: { phase: "Succeeded", containerStatuses: [{ name: "main", image: "", imageID: "", ready: false, restartCount: 0, state: { terminated: { exitCode: 0 } } }] } })).toEqual({ exitCode: 0, timedOut: false });
    expect(podEnd({ status: { phase: "Failed", reason: "DeadlineExceeded" } })).toEqual({ exitCode: 137, timedOut: true });
    const stuck = podEnd({ status: { phase: "Pending", containerStatuses: [{ name: "main", image: "", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason: "ErrImageNeverPull", message: "no image" } } }] } });
    expect(stuck).toEqual({ exitCode: -1, timedOut: false, stuck: "ErrImageNeverPull: no image" });
  });
});
