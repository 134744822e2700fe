// The gate under faults on the single-node cluster, as `helm install` runs it (the chart's
// controller pod and its own NATS with JetStream): a worker pod makes tool calls whose one
// judged call waits on a held tool_validation judge (gavel's agent runtime as a judge, with a
// scripted model that waits in `sleep` until the test releases it), and while it waits the
// controller is SIGKILLed, or the NATS pod is deleted, or a second replica answers too; the
// judge is released once the test has seen the gate take the call up again. Each call must be
// decided once: one judge child, one decision record in GAVEL_DECISIONS (counted by a
// consumer that sees every record stored), and the run finishes. The controller is also
// SIGKILLed in the middle of a tool-call judge's workspace copy streamed out of a
// ReadWriteOncePod worker's pod (ADR 0044): the copy is made again, the judge runs once.
import { stat } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { isTerminal } from "../../src/engine/phases.js";
import { MAIN_CONTAINER } from "../../src/runtime/kubernetes/pod-spec.js";
import { decodeReply } from "../../src/transport/codec.js";
import { inboxPrefix, toolCallSubject } from "../../src/transport/subjects.js";
import type { ToolCallRecord } from "../../src/gate/tool-call.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { chartNats, type ChartNats, type RecordWatch } from "../harness/decision-records.js";
import { executionYaml } from "../harness/example-worker.js";
import { executionsIn, workerCredentials, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { BIG_BYTES, copyKillYaml, EXPECTED, faultyRun, judgeYaml, RELEASE, warmWorkerYaml, workerYaml } from "./gate-faults-manifests.js";
import { WARM_CLAIM_ANNOTATION, WARM_ROLE } from "../../src/controller/warm-judge-pods.js";

describe("the gate decides every tool call once under faults (chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let api: k8s.CustomObjectsApi;
  let ex: Executions;
  let controller: ChartController;
  let nats: ChartNats;
  let scaled = false;

  const watchRecords = (execution: string): Promise<RecordWatch> => nats.watchRecords(ex.namespace, execution);
  const storedRecords = (execution: string) => nats.storedRecords(ex.namespace, execution);

  const toolJudgeChildren = async (execution: string): Promise<Execution[]> => {
    const list = (await api.listNamespacedCustomObject({
      group: "100monkeys.ai",
      version: "v1",
      namespace: ex.namespace,
      plural: "executions",
    })) as { items: Execution[] };
    return list.items.filter((e) => e.spec.parent?.name === execution && e.spec.parent.purpose === "tool_validation");
  };

  /** Waits until the judged call of `execution` waits on its judge child's running pod. */
  const judgeRunning = (execution: string) =>
    eventually(
      async () => {
        const [child] = await toolJudgeChildren(execution);
        if (child === undefined) return undefined;
        const pods = await core.listNamespacedPod({ namespace: ex.namespace });
        const pod = pods.items.find((p) => (p.metadata?.ownerReferences ?? []).some((o) => o.name === child.metadata.name));
        return pod?.status?.phase === "Running" ? { child, pod: pod.metadata?.name ?? "" } : undefined;
      },
      180_000,
      `${execution}'s tool-judge child running`,
    );

  /**
   * Lets the held judge in `pod` give its verdict now, once its `sleep` runs: a judge child is
   * Running before its program reaches the sleep (the CI run at 9403c7f found none yet).
   */
  const releaseJudge = (pod: string) =>
    eventually(
      async () => {
        const r = await cluster.kubectl(["exec", "-n", ex.namespace, pod, "-c", MAIN_CONTAINER, "--", "sh", "-c", RELEASE]);
        if (r.code !== 0) throw new Error(`releasing the judge in pod ${pod} (kill its sleep): exit ${r.code} ${r.stderr}`);
        return true;
      },
      30_000,
      `the judge in pod ${pod} sleeping, then released`,
    );

  /** Waits until a claim on step `step` of the watched run is stored after `since` (ms): a gate holds the call (again). */
  const claimedSince = (watch: { records: ToolCallRecord[]; storedAt: number[] }, step: number, since: number, what: string) =>
    eventually(
      () => (watch.records.some((r, i) => r.kind === "claim" && r.step === step && (watch.storedAt[i] ?? 0) > since) ? true : undefined),
      60_000,
      what,
    );

  /** What must hold after any fault: the run succeeded, one judge child, one decision per call, in the status too. */
  const decidedOnce = async (execution: string, extraBlocked = 0): Promise<Execution> => {
    const done = await ex.final(execution, 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    const children = await toolJudgeChildren(execution);
    expect(children).toHaveLength(1);
    expect(children[0]?.status?.phase).toBe("Succeeded");
    const stored = [...(await storedRecords(execution)).values()].filter((r) => r.step <= 3).sort((a, b) => a.step - b.step);
    expect(stored.map((r) => r.kind)).toEqual(["decision", "decision", "decision"]);
    expect(
      stored.map((r) =>
        r.kind === "decision" ? { step: r.step, tool: r.tool, allowed: r.decision.allowed, blocked_by: r.decision.blocked_by } : r,
      ),
    ).toEqual(EXPECTED);
    const judged = stored[1];
    expect(judged?.kind === "decision" ? judged.decision.judges.map((j) => j.child) : []).toEqual([children[0]?.metadata.name]);
    // The worker got one decision per call (the status the leader folds from the store says what it ran).
    const status = await eventually(
      async () => {
        const e = await ex.get(execution);
        return e?.status?.toolCalls?.proposed === 3 + extraBlocked ? e.status : undefined;
      },
      30_000,
      `${execution}'s tool calls in its status`,
    );
    expect(status.toolCalls).toEqual({ proposed: 3 + extraBlocked, allowed: 2, blocked: 1 + extraBlocked });
    return done;
  };

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    api = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    controller = new ChartController(cluster);
    const ns = await cluster.createNamespace("e2e-gate-faults");
    ex = executionsIn(cluster, ns, () => controller.log());
    nats = await chartNats(cluster);
    await ex.apply(judgeYaml + "---" + workerYaml);
    await eventually(
      async () => {
        const r = await cluster.kubectl([
          "get",
          "agent",
          "faulty-worker",
          "-n",
          ns,
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
        ]);
        return r.stdout === "True" ? true : undefined;
      },
      60_000,
      "Agent faulty-worker Ready",
    );
  });
  afterAll(async () => {
    await nats?.close();
    if (scaled) await controller.configure();
    if (ex !== undefined) await cluster.deleteNamespace(ex.namespace);
  });

  it("the controller SIGKILLed while a call waits on its judge: one judge child, one decision, the run succeeds", async () => {
    const watch = await watchRecords("kill-1");
    await ex.apply(faultyRun("kill-1"));
    const { child, pod } = await judgeRunning("kill-1");
    const killedAt = Date.now();
    await controller.kill();
    const restartedAt = Date.now();
    // The fault hit while the call waited: its judge is still at work.
    expect(isTerminal((await ex.get(child.metadata.name))?.status?.phase)).toBe(false);
    // The new controller's gate takes the dead one's claim over (once it is stale, on the
    // worker's re-send) and waits on the same judge child; then the judge may answer.
    await claimedSince(watch, 2, restartedAt, "kill-1's judged call claimed by the new controller's gate");
    await releaseJudge(pod);
    const done = await decidedOnce("kill-1");
    console.log(
      `controller killed while ${child.metadata.name} judged; kill-1 ${done.status?.phase} ${Date.now() - killedAt} ms after the kill`,
    );
    await watch.stop();
    // Every record stored while it ran: one decision per call, whatever claims came and went.
    const decisions = watch.records.filter((r) => r.kind === "decision");
    expect(decisions.map((r) => r.step).sort()).toEqual([1, 2, 3]);
    console.log(
      `kill-1: ${watch.records.length} records stored (${decisions.length} decisions, ${watch.records.length - decisions.length} claims/renewals)`,
    );
  }, 420_000);

  it("the controller SIGKILLed while a call runs in a warm judge pod: the orphaned pod goes, the call is judged again, one judge child, one decision; no warm pod outlives the run", async () => {
    await ex.apply(warmWorkerYaml);
    const watch = await watchRecords("warm-kill");
    await ex.apply(executionYaml("warm-kill", "warm-worker"));
    const warmPods = async () =>
      (await core.listNamespacedPod({ namespace: ex.namespace, labelSelector: `gavel.dev/role=${WARM_ROLE},gavel.dev/parent=warm-kill` }))
        .items;
    // The judged call is handed to the warm pod (claimed for its child), and its judge sleeps there.
    const claimed = await eventually(
      async () => (await warmPods()).find((p) => p.metadata?.annotations?.[WARM_CLAIM_ANNOTATION] !== undefined),
      180_000,
      "warm-kill's judged call in a warm pod",
    );
    const child = claimed.metadata?.annotations?.[WARM_CLAIM_ANNOTATION] ?? "";
    expect(claimed.metadata?.ownerReferences?.map((o) => o.name)).toEqual([child]);
    await controller.kill();
    const restartedAt = Date.now();
    await claimedSince(watch, 2, restartedAt, "warm-kill's judged call claimed by the new controller's gate");
    // The new controller deletes the pod no process of its own runs a call in, and runs the judge again.
    await eventually(
      async () => ((await warmPods()).some((p) => p.metadata?.uid === claimed.metadata?.uid) ? undefined : true),
      60_000,
      "the orphaned warm pod deleted",
    );
    // The judge's second run (in a warm pod again, or a pod of its own): release its sleep once it is there.
    await eventually(
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: ex.namespace })).items.filter(
          (p) => p.status?.phase === "Running" && (p.metadata?.ownerReferences ?? []).some((o) => o.name === child),
        );
        for (const p of pods) {
          const r = await cluster.kubectl([
            "exec",
            "-n",
            ex.namespace,
            p.metadata?.name ?? "",
            "-c",
            MAIN_CONTAINER,
            "--",
            "sh",
            "-c",
            RELEASE,
          ]);
          if (r.code === 0) return true;
        }
        return undefined;
      },
      120_000,
      "the judge's second run released",
    );
    const done = await decidedOnce("warm-kill");
    expect((await toolJudgeChildren("warm-kill")).map((c) => c.metadata.name)).toEqual([child]);
    await watch.stop();
    // Nothing left behind: no warm pod of the run, none running owned by its judge.
    await eventually(async () => ((await warmPods()).length === 0 ? true : undefined), 60_000, "no warm pod of warm-kill left");
    console.log(
      `warm-kill: ${done.status?.phase}; judge ${child} ran in warm pod ${claimed.metadata?.name ?? ""} when the controller was killed`,
    );
  }, 480_000);

  it("the controller SIGKILLed in the middle of a tool-call judge's stream copy: the copy is made again, one judge verdict, one decision, nothing left over", async () => {
    await ex.apply(copyKillYaml);
    const watch = await watchRecords("copy-kill");
    await ex.apply(executionYaml("copy-kill", "big-writer"));
    // When the judge's copy holds part of the worker's file, the controller dies
    const child = await eventually(async () => (await toolJudgeChildren("copy-kill"))[0], 180_000, "copy-kill's tool-judge child");
    const copy = await eventually(() => ex.workspace(child.metadata.name).catch(() => undefined), 120_000, "the judge's copy claim bound");
    const partial = await eventually(
      async () => {
        const size = (await stat(join(copy, "big")).catch(() => undefined))?.size ?? 0;
        return size > 0 ? size : undefined;
      },
      { timeoutMs: 180_000, everyMs: 20, what: "the stream copy under way" },
    );
    expect(partial, "the copy finished before the controller could be killed: make BIG_BYTES larger").toBeLessThan(BIG_BYTES);
    await controller.kill();
    // The cut copy had not been committed: the new controller streams it again (it would not, had the copier ended).
    await eventually(
      async () => {
        // The log of the running controller container only (controller.log() puts the previous one first).
        const sections = (await controller.log()).split(/^--- /m);
        const current = sections.filter((x) => !/^\S+ \(previous container\)/.test(x)).at(-1) ?? "";
        return current.includes(`"copier":"${ex.namespace}/${child.metadata.name}-copy"`) &&
          current.includes("workspace stream copy started")
          ? true
          : undefined;
      },
      60_000,
      "the new controller to stream the judge's copy",
    );
    console.log(`copy-kill: controller killed with ${(partial / 2 ** 20).toFixed(1)} of ${BIG_BYTES / 2 ** 20} MiB copied`);

    // Then the new controller copies again: the judge saw the whole file (its checksum), once
    const done = await ex.final("copy-kill", 300_000);
    const children = await toolJudgeChildren("copy-kill");
    expect(done.status?.phase, JSON.stringify(children.map((c) => c.status))).toBe("Succeeded");
    expect(children.map((c) => [c.metadata.name, c.status?.phase, c.status?.verdict?.score])).toEqual([
      [child.metadata.name, "Succeeded", 1],
    ]);
    // The worker got one decision (the status the leader folds from the store says what it ran).
    await eventually(
      async () => ((await ex.get("copy-kill"))?.status?.toolCalls?.proposed === 1 ? true : undefined),
      30_000,
      "copy-kill's call in its status",
    );
    expect((await ex.get("copy-kill"))?.status?.toolCalls).toEqual({ proposed: 1, allowed: 1, blocked: 0 });
    await watch.stop();
    const decisions = watch.records.filter((r) => r.kind === "decision");
    expect(
      decisions.map((r) => (r.kind === "decision" ? [r.step, r.tool, r.decision.allowed, r.decision.judges.map((j) => j.child)] : [])),
    ).toEqual([[1, "cmd.run", true, [child.metadata.name]]]);
    // Nothing left over: no pod runs, the copier is gone, the claims are the worker's and the judge's copy, each owned.
    await ex.podsEnded("copy-kill");
    const pods = (await core.listNamespacedPod({ namespace: ex.namespace })).items.map((p) => p.metadata?.name ?? "");
    expect(pods.filter((p) => p.includes("copy-kill") && p.endsWith("-copy-ex"))).toEqual([]);
    const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: ex.namespace })).items.filter(
      (c) => c.metadata?.name?.startsWith("copy-kill") === true,
    );
    expect(claims.map((c) => [c.metadata?.name, c.metadata?.ownerReferences?.map((o) => o.name)]).sort()).toEqual([
      [`${child.metadata.name}-workspace`, [child.metadata.name]],
      ["copy-kill-workspace", ["copy-kill"]],
    ]);
    console.log(
      `copy-kill: ${done.status?.phase}; judge child ${child.metadata.name} ${child.status?.startTime ?? ""} -> ${(await ex.get(child.metadata.name))?.status?.completionTime ?? ""}`,
    );
  }, 480_000);

  it("NATS restarted while a call waits on its judge: the waiting proposal is decided once and the run succeeds", async () => {
    await ex.apply(faultyRun("nats-1"));
    const { child, pod } = await judgeRunning("nats-1");
    const deletedAt = Date.now();
    const del = await cluster.kubectl(["delete", "pod", "-n", RELEASE_NAMESPACE, "gavel-nats-0", "--wait=false"]);
    expect(del.code, del.stderr).toBe(0);
    await nats.url();
    expect(isTerminal((await ex.get(child.metadata.name))?.status?.phase)).toBe(false);
    console.log(`NATS pod back and Ready ${Date.now() - deletedAt} ms after its deletion (${child.metadata.name} judging)`);
    // The gate still holds the waiting call on the restarted NATS (it renews its claim there); then the judge may answer.
    const watch = await eventually(
      () => watchRecords("nats-1").catch(() => undefined),
      60_000,
      "a consumer on the restarted NATS's decision stream",
    );
    await claimedSince(watch, 2, deletedAt, "nats-1's judged call claimed on the restarted NATS");
    await watch.stop();
    await releaseJudge(pod);
    await decidedOnce("nats-1");
    console.log(`nats-1 finished ${Date.now() - deletedAt} ms after the NATS pod's deletion`);
    // The controller's gate serves again (not only the one run that was waiting).
    await controller.ready();
  }, 420_000);

  it("two controller replicas answer the worker's re-sends: no call is decided twice; bad proposals are refused and the gate keeps serving", async () => {
    scaled = true;
    await controller.configure(["--set", "replicas=2"]);
    await controller.ready(2);
    const watch = await watchRecords("pair-1");
    await ex.apply(faultyRun("pair-1"));
    const { pod } = await judgeRunning("pair-1");

    // While the judged call waits: bad input with pair-1's own credential, at the gates of both replicas.
    const creds = await eventually(
      () => workerCredentials(core, ex.namespace, "pair-1").catch(() => undefined),
      30_000,
      "the worker credential Secret of pair-1",
    );
    const nc = await nats.dial(creds, { inboxPrefix: inboxPrefix(ex.namespace, "pair-1") });
    const subject = toolCallSubject(ex.namespace, "pair-1");
    const ask = async (body: string, timeout = 5000) => {
      const r = decodeReply((await nc.request(subject, body, { timeout })).data);
      if (!r.ok) throw new Error(`the gate answered an invalid reply: ${r.error.message}`);
      return r.value;
    };
    const base = { namespace: ex.namespace, execution: "pair-1", iteration: 1, step: 9, tool: "fs.list", args: { path: "/workspace" } };
    expect(await ask("{not json")).toMatchObject({ kind: "error", reply: { error: { code: "invalid_proposal", field: "/" } } });
    expect(await ask(JSON.stringify({ ...base, toolCallId: "bad-1", step: "nine" }))).toMatchObject({
      kind: "error",
      reply: { error: { code: "invalid_proposal", field: "/step" } },
    });
    expect(await ask(JSON.stringify({ ...base, toolCallId: "bad-2", execution: "kill-1" }))).toMatchObject({
      kind: "error",
      reply: { error: { code: "forbidden", field: "/execution" } },
    });
    // The worker's judged call (i1 step 2) re-used with other arguments: a conflict, and its judging goes on.
    const judgedId = await eventually(
      async () => {
        const [c] = await toolJudgeChildren("pair-1");
        return c?.spec.parent?.toolCallId;
      },
      30_000,
      "the judged call's id",
    );
    expect(await ask(JSON.stringify({ ...base, step: 2, tool: "cmd.run", args: { command: "ls /" }, toolCallId: judgedId }))).toMatchObject(
      { kind: "error", reply: { error: { code: "conflict", field: "/toolCallId" } } },
    );
    // The judged call re-sent 8 times at once, as a worker whose attempts time out would: the
    // queue group spreads them over both replicas (one joins its own judging, the other waits
    // on the claim); every answer is the one decision the store ends up holding.
    const resent = Promise.all(
      Array.from({ length: 8 }, () =>
        ask(JSON.stringify({ ...base, step: 2, tool: "cmd.run", args: { command: "ls /workspace" }, toolCallId: judgedId }), 120_000),
      ),
    );
    resent.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
    const big = await ask(
      JSON.stringify({ ...base, toolCallId: "bad-big", tool: "fs.list", args: { path: "/workspace", pad: "x".repeat(300 * 1024) } }),
    );
    expect(big).toMatchObject({ kind: "decision", decision: { allowed: false, blocked_by: "guard" } });
    expect(big.kind === "decision" ? big.decision.reason : "").toMatch(/^argument_too_large: the proposal is \d+ bytes/);
    // The re-sends went out on this connection before the oversized proposal, which is answered:
    // NATS delivered them to the gates before it, while the judge still works. Now it may answer.
    await releaseJudge(pod);

    // The oversized proposal was decided (denied): the one extra blocked call of pair-1.
    await decidedOnce("pair-1", 1).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${(await controller.log()).slice(-6000)}`);
    });
    await watch.stop();
    const stored = (await storedRecords("pair-1")).get(judgedId ?? "");
    expect(stored?.kind).toBe("decision");
    for (const answer of await resent)
      expect(answer).toEqual({ kind: "decision", decision: stored?.kind === "decision" ? stored.decision : undefined });
    const decisions = watch.records.filter((r) => r.kind === "decision");
    // One decision per call across both replicas (the oversized one included: it was decided, denied).
    expect(decisions.map((r) => `${r.step}/${r.tool}`).sort()).toEqual(["1/cmd.run", "2/cmd.run", "3/fs.list", "9/fs.list"]);
    const gates = new Set(watch.records.map((r) => r.gate));
    console.log(
      `pair-1: ${watch.records.length} records stored by ${gates.size} gate(s) (${[...gates].join(", ")}); ${decisions.length} decisions`,
    );
  }, 480_000);
});
