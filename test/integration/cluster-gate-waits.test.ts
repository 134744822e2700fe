// The tool-call gate of `gavel controller --nats` against the real kube-apiserver and a real
// nats-server (JWT mode), what a run waits on: the earlier run's workspace claim, the
// tool-judge child of a judged call (a replica killed meanwhile costs no second child or
// decision), and the gate itself (without NATS, fail closed). The calls of a run are in
// cluster-gate.test.ts.
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { issueControllerCredentials } from "../../src/transport/credentials.js";
import { DECISION_STREAM, DECISION_SUBJECT_PREFIX, type ToolCallRecord } from "../../src/gate/tool-call.js";
import { executionYaml } from "../harness/example-worker.js";
import { sleep } from "../harness/eventually.js";
import { agentYaml, enc, gateCluster } from "./cluster-gate-fixture.js";

describe("what a run waits on in gavel controller's gate (real kube-apiserver, real nats-server)", () => {
  const g = gateCluster("gate-waits");
  const { asWorker, controller, execution, eventually } = g;

  it("an Execution re-created under its name waits for the earlier run's workspace claim (the garbage collector's to delete), then makes its own", async () => {
    const keeper = agentYaml("keeper") + "  volumes:\n    - name: workspace\n      mount_path: /workspace\n";
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: keeper + "---" + executionYaml("keep-1", "keeper") })).code).toBe(
      0,
    );
    const claimOwner = async (): Promise<string | undefined> =>
      (await g.core.readNamespacedPersistentVolumeClaim({ namespace: g.ns, name: "keep-1-workspace" })).metadata?.ownerReferences?.[0]?.uid;
    const first = await eventually(
      async () => {
        const ex = await execution(g.ns, "keep-1");
        if (ex.status?.phase !== "Running" || (await claimOwner()) !== ex.metadata.uid)
          throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return ex;
      },
      30_000,
      "the first run with its claim",
    );
    expect((await g.cp.kubectl(["delete", "ex", "keep-1", "-n", g.ns, "--wait=true"])).code).toBe(0);
    // No garbage collector in this control plane: the first run's claim stays, as it does on a cluster while a pod still mounts it.
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: executionYaml("keep-1", "keeper") })).code).toBe(0);
    const waiting = await eventually(
      async () => {
        const ex = await execution(g.ns, "keep-1");
        if (ex.metadata.uid === first.metadata.uid || !/PersistentVolumeClaim keep-1-workspace/.test(ex.status?.message ?? ""))
          throw new Error(`message ${ex.status?.message ?? "none"}`);
        return ex;
      },
      15_000,
      "the new run waits, naming the claim",
    );
    expect(waiting.status?.phase).toBe("Pending");
    expect(waiting.status?.message).toContain(`uid ${first.metadata.uid ?? ""}`);
    expect(await claimOwner()).toBe(first.metadata.uid);
    // What the garbage collector and then the pvc-protection controller (neither runs here) do once no pod mounts it.
    await g.core.deleteNamespacedPersistentVolumeClaim({ namespace: g.ns, name: "keep-1-workspace" });
    await g.core
      .patchNamespacedPersistentVolumeClaim(
        { namespace: g.ns, name: "keep-1-workspace", body: [{ op: "remove", path: "/metadata/finalizers" }] },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
      )
      .catch(() => undefined);
    const again = await eventually(
      async () => {
        const ex = await execution(g.ns, "keep-1");
        if (ex.status?.phase !== "Running" || (await claimOwner().catch(() => undefined)) !== ex.metadata.uid)
          throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return ex;
      },
      30_000,
      "the new run starts with a claim of its own",
    );
    expect(again.metadata.uid).toBe(waiting.metadata.uid);
    await g.cp.kubectl(["annotate", "ex", "keep-1", "-n", g.ns, "gavel.dev/cancel=test"]);
  }, 60_000);

  it("a judged call: the gate makes the tool-judge child (payload, owner, deadline), lists it in the parent's status, and a replica killed meanwhile costs no second child or decision", async () => {
    // The Agent's own skip_judge: true does not switch judging off: skip_judge is the operators' (no GuardPolicy skips cmd.run).
    const judged = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: careful
spec:
  runtime:
    image: gavel/agent:dev
  task:
    instruction: Write the report.
  tools:
    - name: cmd.run
      allowlist: ["ls"]
      skip_judge: true
  volumes:
    - name: workspace
      mount_path: /workspace
  execution:
    mode: one-shot
    tool_validation:
      - type: semantic
        judge_agent: rule-judge
        criteria: Only writes under /workspace.
        timeout_seconds: 120
---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: rule-judge
  labels:
    role: judge
spec:
  runtime:
    image: gavel/rule-judge:dev
  execution:
    mode: one-shot
`;
    expect(
      (await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: judged + "---" + executionYaml("careful-1", "careful") })).code,
    ).toBe(0);
    const parent = await eventually(async () => {
      const ex = await execution(g.ns, "careful-1");
      if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    });
    const worker = await asWorker(g.ns, "careful-1");
    const call = {
      namespace: g.ns,
      execution: "careful-1",
      iteration: 1,
      step: 1,
      toolCallId: "i1-s1-c",
      tool: "cmd.run",
      args: { command: "ls /workspace" },
      intent: "see what is there",
    };
    const decision = worker.propose(call);
    const childName = "careful-1-i1-t0-s1-rule-judge";
    const child = await eventually(() => execution(g.ns, childName), 20_000, "the tool-judge child");
    expect(child.spec.parent).toMatchObject({
      name: "careful-1",
      uid: parent.metadata.uid,
      purpose: "tool_validation",
      iteration: 1,
      validatorIndex: 0,
      toolCallId: "i1-s1-c",
      depth: 1,
    });
    expect(child.spec.timeoutSeconds).toBe(120);
    expect(child.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Execution", name: "careful-1", uid: parent.metadata.uid, controller: true }),
    ]);
    expect(child.spec.input).toMatchObject({
      task: "Write the report.",
      proposed_tool_call: { tool: "cmd.run", args: { command: "ls /workspace" } },
      available_tools: ["cmd.run"],
      worker_mounts: ["/workspace"],
      criteria: "Only writes under /workspace.",
      validation_context: "semantic_judge_pre_execution_inner_loop",
      policy_violations: [],
    });
    // The leader lists it in the parent's status and starts its judge pod with the worker's volume read-only.
    await eventually(async () => {
      const refs = (await execution(g.ns, "careful-1")).status?.children ?? [];
      if (!refs.some((r) => r.name === childName && r.purpose === "tool_validation" && r.toolCallId === "i1-s1-c"))
        throw new Error(JSON.stringify(refs));
      return true;
    });
    const pod = await eventually(async () => {
      const p = (await g.core.listNamespacedPod({ namespace: g.ns })).items.find(
        (x) => x.metadata?.labels?.["gavel.dev/execution"] === childName,
      );
      if (p === undefined) throw new Error("no judge pod yet");
      return p;
    });
    expect(pod.spec?.containers[0]?.volumeMounts?.find((m) => m.mountPath === "/workspace")?.readOnly).toBe(true);
    // A replica dies while the call waits on its judge: whichever held the claim, the call is decided once.
    g.procs.find((p) => p.name === "gate-a")?.proc.kill("SIGKILL");
    await sleep(1000);
    // No kubelet runs the judge pod here: the test writes the verdict the judge's pod and the reconciler would (the e2e runs it for real).
    const verdict = { score: 0.9, confidence: 0.8, reasoning: "scoped to the workspace" };
    await eventually(async () => {
      const c = await execution(g.ns, childName);
      await g.api.replaceNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace: g.ns,
        plural: "executions",
        name: childName,
        body: { ...c, status: { ...c.status, phase: "Succeeded", verdict, score: 0.9, completionTime: new Date().toISOString() } },
      });
      return true;
    });
    const d = await decision;
    expect(d).toMatchObject({
      allowed: true,
      blocked_by: "none",
      judges: [{ judge: "rule-judge", child: childName, passed: true, result: verdict }],
    });
    const children = (
      (await g.api.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: g.ns,
        plural: "executions",
        labelSelector: "gavel.dev/parent=careful-1",
      })) as { items: Execution[] }
    ).items;
    expect(children.map((c) => c.metadata.name)).toEqual([childName]);
    const gateNc = await connect({
      servers: g.nats.url,
      authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(g.trust).creds)),
    });
    g.conns.push(gateNc);
    const jsm = await jetstreamManager(gateNc);
    const rec = (
      await jsm.streams.getMessage(DECISION_STREAM, {
        last_by_subj: `${DECISION_SUBJECT_PREFIX}.${g.ns}.careful-1.${parent.metadata.uid ?? ""}.i1-s1-c`,
      })
    )?.json<ToolCallRecord>();
    expect(rec).toMatchObject({ kind: "decision", decision: { allowed: true } });
    expect(await worker.propose(call)).toEqual(d);
  }, 120_000);

  it("fail closed: without NATS, an Execution that needs a gate gets no worker pod, says why, and times out; its Agent is not Ready", async () => {
    const lone = await g.cp.createNamespace("nogate");
    controller("no-nats", ["-n", lone, "--controller-namespace", lone]);
    // One that waits (its deadline is what max_iterations allows) and one whose own deadline is 6 s.
    const manifests =
      agentYaml("editor") + "---" + executionYaml("waiting", "editor") + "---" + executionYaml("blind", "editor", undefined, 6);
    expect((await g.cp.kubectl(["apply", "-n", lone, "-f", "-"], { stdin: manifests })).code).toBe(0);
    const pending = await eventually(async () => {
      const ex = await execution(lone, "waiting");
      if (ex.status?.phase !== "Pending") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    });
    expect(pending.status?.conditions?.find((c) => c.type === "Guarded")).toMatchObject({ status: "False", reason: "GateUnavailable" });
    expect(pending.status?.message).toMatch(/spec.tools declares 3 tools .* but gavel controller runs without NATS/);
    const agent = await eventually(async () => {
      const a = (await g.api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: lone,
        plural: "agents",
        name: "editor",
      })) as Agent;
      const ready = a.status?.conditions?.find((c) => c.type === "Ready");
      if (ready === undefined) throw new Error("no Ready yet");
      return ready;
    });
    expect(agent).toMatchObject({ status: "False", reason: "CannotEnforce" });
    const ended = await eventually(
      async () => {
        const ex = await execution(lone, "blind");
        if (ex.status?.phase !== "TimedOut") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return ex;
      },
      30_000,
      "the Execution times out",
    );
    expect(ended.status?.message).toMatch(/never started within its deadline of 6s/);
    expect((await g.core.listNamespacedPod({ namespace: lone })).items).toEqual([]);
    expect((await execution(lone, "waiting")).status?.phase).toBe("Pending");
  }, 90_000);
});
