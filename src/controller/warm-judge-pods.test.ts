// A warm judge pod is the judge's own pod, waiting: its pool size, name, workload, fingerprint
// and the exec that runs a call's judge in it.
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { toolJudgeChild } from "../children/child-executions.js";
import { ownerMarks } from "../children/workloads.js";
import { LAUNCHER_PATH } from "../runtime/kubernetes.js";
import { podFor } from "../runtime/kubernetes/pod-workloads.js";
import type { WorkloadSpec } from "../runtime/workload.js";
import { EXECUTION_INSTANCE, judgeSpec, placementOf, workloadPodName, workspaceMounts } from "./execution-pods.js";
import {
  judgeExecCommand,
  toolJudgesOf,
  WARM_INPUT_DIR,
  WARM_LABELS,
  warmFingerprint,
  warmName,
  warmPools,
  warmPoolSize,
  warmTemplate,
  warmWorkload,
} from "./warm-judge-pods.js";

const parent: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "uid-1" },
  spec: { agentRef: { name: "w" } },
};
const worker: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "w" },
  spec: {
    runtime: { image: "gavel/agent:dev" },
    tools: [{ name: "cmd.run", allowlist: ["ls"] }],
    volumes: [{ name: "workspace", mount_path: "/workspace", size: "1Gi" }],
    execution: {
      mode: "one-shot",
      tool_validation: [
        { type: "semantic", judge_agent: "rule-judge", criteria: "safe" },
        { type: "semantic", judge_agent: "rule-judge", criteria: "small" },
      ],
    },
  },
} as Agent;
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "rule-judge", labels: { role: "judge" } },
  spec: { runtime: { image: "gavel/rule-judge:dev" }, security: { network: { mode: "none" }, resources: { memory: "128Mi" } } },
} as Agent;
const mounts = workspaceMounts("demo", worker, true);

function built(child: Execution): WorkloadSpec {
  const b = judgeSpec(child, judge, mounts, {});
  if (typeof b === "string") throw new Error(b);
  return b.spec;
}

/** A call's judge child as the gate makes it. */
function callChild(step: number): Execution {
  const entry = worker.spec.execution?.tool_validation?.[0];
  if (entry === undefined) throw new Error("no entry");
  return toolJudgeChild({
    parent,
    worker,
    judge,
    entry,
    index: 0,
    proposal: {
      namespace: "team",
      execution: "demo",
      toolCallId: `c${step}`,
      iteration: 1,
      step,
      tool: "cmd.run",
      args: { command: "ls" },
      intent: "list",
    },
    policyViolations: [],
    workerMounts: mounts,
    stdin: false,
  }).execution;
}

describe("warm judge pods", () => {
  it("take the Agent's pool size from its annotation, capped, and name a bad one", () => {
    expect(warmPoolSize(worker, 4)).toEqual({ size: 1 });
    expect(warmPoolSize(worker, 0)).toEqual({ size: 0 });
    const asking = (v: string) => ({ ...worker, metadata: { name: "w", annotations: { "gavel.dev/warm-judges": v } } });
    expect(warmPoolSize(asking("3"), 4)).toEqual({ size: 3 });
    expect(warmPoolSize(asking("9"), 4)).toEqual({ size: 4 });
    expect(warmPoolSize(asking("0"), 4)).toEqual({ size: 0 });
    expect(warmPoolSize(asking("two"), 4)).toEqual({
      size: 0,
      problem: 'metadata.annotations["gavel.dev/warm-judges"] must be a whole number of warm pods per judge, got "two"',
    });
    expect(toolJudgesOf(worker)).toEqual(["rule-judge"]);
  });

  it("are what a run's pools want: a pod per slot of each tool judge that exists, beside the worker of a ReadWriteOnce claim", () => {
    const agents = (judges: Map<string, Agent>, annotations?: Record<string, string>) => ({
      agent: { ...worker, metadata: { name: "w", ...(annotations !== undefined ? { annotations } : {}) } },
      judges,
    });
    const owner = ownerMarks(parent);
    const o = { iteration: 1, lifetimeSeconds: 600, cap: 4, workerNode: "n1" };
    const pools = warmPools(owner, agents(new Map([["rule-judge", judge]]), { "gavel.dev/warm-judges": "2" }), {}, o);
    expect([...pools.pods.keys()]).toEqual([0, 1].map((k) => workloadPodName(warmName("demo", "rule-judge", k))));
    const first = [...pools.pods.values()][0];
    expect(first?.place).toMatchObject({ node: "n1", owner: { name: "demo", uid: "uid-1" } });
    expect(first?.spec.labels?.[WARM_LABELS.fingerprint]).toBe(
      warmFingerprint(built(warmTemplate(ownerMarks(parent), "rule-judge", 1)), "n1"),
    );
    expect(first?.spec.timeoutSeconds).toBe(600);
    // No judge Agent, no worker node known yet (the claim is ReadWriteOnce), or a bad size: no pods.
    expect(warmPools(owner, agents(new Map()), {}, o).pods.size).toBe(0);
    expect(warmPools(owner, agents(new Map([["rule-judge", judge]])), {}, { ...o, workerNode: undefined }).pods.size).toBe(0);
    const bad = warmPools(owner, agents(new Map([["rule-judge", judge]]), { "gavel.dev/warm-judges": "two" }), {}, o);
    expect(bad.pods.size).toBe(0);
    expect(bad.problem).toMatch(/gavel.dev\/warm-judges/);
  });

  it("are named so their pod name ends in -warm-ex, whatever the Execution's name", () => {
    for (const name of ["demo", "a".repeat(63), "web.frontend-v2", "x-"]) {
      const pod = workloadPodName(warmName(name, "rule-judge", 3));
      expect(pod).toMatch(/^gavel-[a-z0-9-]+-3-warm-ex$/);
      expect(pod.length).toBeLessThanOrEqual(63);
    }
    expect(warmName("demo", "a", 0)).not.toBe(warmName("demo", "b", 0));
  });

  it("are the judge's own pod (image, mounts read-only, network, limits, owner) waiting under gavel-launch", () => {
    const template = warmTemplate(ownerMarks(parent), "rule-judge", 1);
    const judgeWorkload = built(template);
    const spec = warmWorkload(judgeWorkload, {
      name: warmName("demo", "rule-judge", 0),
      labels: { parent: "demo", judge: "rule-judge" },
      slot: 0,
      node: undefined,
      lifetimeSeconds: 600,
    });
    if (spec === undefined) throw new Error("no warm workload");
    const pod = podFor(spec, placementOf(ownerMarks(parent), "apart"), {
      instance: EXECUTION_INSTANCE,
      launcherConfigMap: "gavel-launch-x",
    });
    const main = pod.spec?.containers[0];
    expect(main?.command).toEqual([LAUNCHER_PATH, "--wait"]);
    expect(main?.image).toBe("gavel/rule-judge:dev");
    expect(main?.volumeMounts).toContainEqual({ name: "m0", mountPath: "/workspace", readOnly: true });
    expect(main?.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(main?.resources?.limits?.memory).toBeDefined();
    expect(pod.metadata?.labels).toMatchObject({ "gavel.dev/network": "none", "gavel.dev/role": "warm-judge", "gavel.dev/parent": "demo" });
    expect(pod.metadata?.ownerReferences?.[0]?.name).toBe("demo");
    expect(pod.spec?.activeDeadlineSeconds).toBe(600);
    // No payload and no call's identity in the pod: they come with the exec.
    const names = (main?.env ?? []).map((e) => e.name);
    expect(names).not.toContain("GAVEL_INPUT");
    expect(names).not.toContain("GAVEL_EXECUTION");
    expect(names).toContain("GAVEL_ROLE");
  });

  it("match a call's judge by fingerprint: the same for every call, another for another node or judge spec", () => {
    const a = built(callChild(1));
    const b = built(callChild(2));
    const warm = warmWorkload(built(warmTemplate(ownerMarks(parent), "rule-judge", 1)), {
      name: "w",
      labels: { parent: "demo", judge: "rule-judge" },
      slot: 0,
      node: "n1",
      lifetimeSeconds: 60,
    });
    expect(warmFingerprint(a, "n1")).toBe(warmFingerprint(b, "n1"));
    expect(warm?.labels?.[WARM_LABELS.fingerprint]).toBe(warmFingerprint(a, "n1"));
    expect(warmFingerprint(a, "n2")).not.toBe(warmFingerprint(a, "n1"));
    expect(warmFingerprint({ ...a, resources: { memoryBytes: 1 } }, "n1")).not.toBe(warmFingerprint(a, "n1"));
    // An image whose program gavel does not know cannot be started by exec: no warm pod.
    const { entrypoint: _e, ...unknown } = a;
    expect(
      warmWorkload(
        { ...unknown, image: "someone/judge:1" },
        { name: "w", labels: { parent: "demo", judge: "j" }, slot: 0, node: undefined, lifetimeSeconds: 60 },
      ),
    ).toBeUndefined();
  });

  it("run a call's judge by exec: gavel-launch --judge-input, the call's own variables, then the judge's program", () => {
    const child = callChild(4);
    const spec = built(child);
    const command = judgeExecCommand(spec);
    expect(command.slice(0, 3)).toEqual([LAUNCHER_PATH, "--judge-input", WARM_INPUT_DIR]);
    expect(command).toContain(`GAVEL_EXECUTION=${child.metadata.name}`);
    expect(command).toContain("GAVEL_ITERATION=1");
    expect(command).toContain(`GAVEL_INPUT_DIR=${WARM_INPUT_DIR}`);
    expect(command.slice(command.indexOf("--") + 1)).toEqual(spec.entrypoint);
  });

  it("the chart's controller-exec policy allows that exec in a *-warm-ex pod's main container only", async () => {
    const policy = await readFile(new URL("../../charts/gavel/templates/controller-exec-policy.yaml", import.meta.url), "utf8");
    expect(policy).toContain(
      `request.name.endsWith('-warm-ex') && size(object.command) >= 6 &&\n        object.command[0] == '${LAUNCHER_PATH}' && object.command[1] == '--judge-input' && object.command[2] == '${WARM_INPUT_DIR}'`,
    );
  });
});
