// The tool-call gate of `gavel controller --nats` against the real kube-apiserver and a real
// nats-server (JWT mode), the calls of a run: two replicas answer a worker's proposals (queue
// group) with the Execution's Agent and the namespace's GuardPolicy, decide each call once
// (counted in the JetStream store), and the leader writes the calls into the Execution's
// status; once the run ends, or is deleted and created again, its calls are refused or start
// afresh. What a run waits on (a claim, a judge, a gate) is in cluster-gate-waits.test.ts.
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import type { ToolCallProposal } from "../../src/api/protocol.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { issueControllerCredentials } from "../../src/transport/credentials.js";
import type { GavelEvent } from "../../src/api/events.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { DECISION_STREAM, DECISION_SUBJECT_PREFIX, type ToolCallRecord } from "../../src/gate/tool-call.js";
import { executionYaml } from "../harness/example-worker.js";
import { sleep } from "../harness/eventually.js";
import { agentYaml, enc, gateCluster, policyYaml } from "./cluster-gate-fixture.js";

describe("the tool-call gate in gavel controller (real kube-apiserver, real nats-server)", () => {
  const g = gateCluster("gate");
  const { asWorker, execution, eventually } = g;

  it("decides a worker's calls with its Agent and the namespace's GuardPolicy, once each across two replicas, and writes them into the status", async () => {
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: agentYaml("editor") + "---" + policyYaml })).code).toBe(0);
    // The policy is compiled by both replicas before the first call.
    await eventually(async () => {
      const r = await g.cp.kubectl(["get", "guardpolicy", "read-first", "-n", g.ns, "-o", "jsonpath={.status.conditions[0].status}"]);
      if (r.stdout !== "True") throw new Error(`policy not ready: ${r.stdout}`);
      return true;
    });
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: executionYaml("edit-1", "editor") })).code).toBe(0);
    const running = await eventually(
      async () => {
        const ex = await execution(g.ns, "edit-1");
        if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return ex;
      },
      30_000,
      "the Execution starts",
    );
    expect(running.status?.conditions?.find((c) => c.type === "Guarded")).toMatchObject({ status: "True", reason: "GateServing" });
    // The worker pod gets the gate's NATS URL and its identity.
    const pod = await eventually(async () => {
      const pods = await g.core.listNamespacedPod({ namespace: g.ns });
      const p = pods.items.find((x) => x.metadata?.labels?.["gavel.dev/execution"] === "edit-1");
      if (p === undefined) throw new Error("no worker pod yet");
      return p;
    });
    const env = Object.fromEntries((pod.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ GAVEL_NATS_URL: g.nats.url, GAVEL_NAMESPACE: g.ns, GAVEL_EXECUTION: "edit-1", GAVEL_ITERATION: "1" });

    const worker = await asWorker(g.ns, "edit-1");
    const base = { namespace: g.ns, execution: "edit-1", iteration: 1 };
    const calls: Omit<ToolCallProposal, "namespace" | "execution" | "iteration">[] = [
      { step: 1, toolCallId: "i1-s1-w", tool: "cmd.run", args: { command: "rm -rf /" } },
      { step: 2, toolCallId: "i1-s2-w", tool: "fs.write", args: { path: "/workspace/report.md", content: "x" } },
      { step: 3, toolCallId: "i1-s3-w", tool: "fs.read", args: { path: "/workspace/report.md" } },
      { step: 4, toolCallId: "i1-s4-w", tool: "fs.write", args: { path: "/workspace/report.md", content: "status: done" } },
    ];
    const decisions = [];
    for (const c of calls) decisions.push(await worker.propose({ ...base, ...c }));
    expect(decisions.map((d) => [d.allowed, d.blocked_by, d.guard.check ?? ""])).toEqual([
      [false, "guard", "destructive_pattern"],
      [false, "guard", "sequence_contract"],
      // Allowed, flagged by the watch-reads rule.
      [true, "none", "adaptive_rule"],
      // The read of step 3 counts even when the other replica decided it.
      [true, "none", ""],
    ]);
    // Re-sends are answered with the same decisions, whichever replica they reach.
    for (let i = 0; i < 6; i++)
      expect(await worker.propose({ ...base, ...(calls[i % 4] as (typeof calls)[number]) })).toEqual(decisions[i % 4]);
    // A proposal for an Execution that does not exist is refused, not decided.
    await expect(
      (await asWorker(g.ns, "ghost")).propose({
        ...base,
        execution: "ghost",
        step: 1,
        toolCallId: "g1",
        tool: "fs.read",
        args: { path: "/a" },
      }),
    ).rejects.toMatchObject({ code: "forbidden", field: "/execution" });

    // One record per call in the store, each a decision.
    const gateNc = await connect({
      servers: g.nats.url,
      authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(g.trust).creds)),
    });
    g.conns.push(gateNc);
    const jsm = await jetstreamManager(gateNc);
    const info = await jsm.streams.info(DECISION_STREAM, { subjects_filter: `${DECISION_SUBJECT_PREFIX}.>` });
    const subjects = Object.keys(info.state.subjects ?? {}).filter((s) => s.includes(".edit-1."));
    expect(subjects.sort()).toEqual(
      calls.map((c) => `${DECISION_SUBJECT_PREFIX}.${g.ns}.edit-1.${running.metadata.uid ?? ""}.${c.toolCallId}`).sort(),
    );
    for (const s of subjects)
      expect((await jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: s }))?.json<ToolCallRecord>().kind).toBe("decision");

    // The leader folds them into the status: counts, the recent calls, totals for `kubectl get ex`.
    const status = await eventually(async () => {
      const ex = await execution(g.ns, "edit-1");
      if (ex.status?.toolCalls?.proposed !== 4) throw new Error(`toolCalls ${JSON.stringify(ex.status?.toolCalls)}`);
      return ex.status;
    });
    expect(status.toolCalls).toEqual({ proposed: 4, allowed: 2, blocked: 2 });
    expect(status.iterations?.[0]?.toolCalls).toMatchObject({ proposed: 4, allowed: 2, blockedByGuard: 2, blockedByJudge: 0 });
    expect(status.iterations?.[0]?.toolCalls?.recent?.map((e) => [e.step, e.tool, e.blockedBy, e.check ?? ""])).toEqual([
      [1, "cmd.run", "guard", "destructive_pattern"],
      [2, "fs.write", "guard", "sequence_contract"],
      [3, "fs.read", "none", "adaptive_rule"],
      [4, "fs.write", "none", ""],
    ]);
    expect(JSON.stringify(status)).not.toContain("status: done");
    const table = await g.cp.kubectl(["get", "ex", "edit-1", "-n", g.ns]);
    expect(table.stdout).toMatch(/CALLS\s+BLOCKED/);
    expect(table.stdout).toMatch(/edit-1\s+editor\s+Running\s+1\s+(<none>\s+)?4\s+2/);

    // Each decision once in the event stream, and the blocked ones as Kubernetes Events.
    const stream = await EventStream.open(gateNc);
    const events: GavelEvent[] = [];
    for await (const e of stream.read({ namespace: g.ns, root: "edit-1", untilIdleMs: 1000 })) events.push(e);
    // Two replicas publish their own decisions: the stream keeps each replica's order, not the steps' order.
    const decided = events.filter((e) => e.type === "toolcall.decision").sort((a, b) => Number(a.data.step) - Number(b.data.step));
    expect(decided.map((e) => e.data.step)).toEqual([1, 2, 3, 4]);
    expect(decided.map((e) => e.data.flags)).toEqual([undefined, undefined, ["watch-reads"], undefined]);
    // Rules in warn and dryrun mode let the calls through and say what they would have denied.
    expect(decided.map((e) => e.data.warnings)).toEqual([undefined, undefined, undefined, ["adaptive_rule: no-done-reports"]]);
    expect(decided.map((e) => e.data.dryrun)).toEqual([
      undefined,
      undefined,
      ["adaptive_rule: report-writes"],
      ["adaptive_rule: report-writes"],
    ]);
    expect(JSON.stringify(decided)).not.toContain("rm -rf");
    const k8sEvents = await eventually(async () => {
      const list = await g.core.listNamespacedEvent({ namespace: g.ns, fieldSelector: "reason=ToolCallBlocked" });
      if (list.items.length < 2) throw new Error(`${list.items.length} events`);
      return list.items;
    });
    expect(k8sEvents.map((e) => e.type)).toEqual(["Warning", "Warning"]);
    const flagged = await eventually(async () => {
      const list = await g.core.listNamespacedEvent({ namespace: g.ns, fieldSelector: "reason=ToolCallFlagged" });
      if (list.items.length < 1) throw new Error("no ToolCallFlagged event");
      return list.items;
    });
    expect(flagged.map((e) => [e.type, e.message])).toEqual([["Warning", "iteration 1 step 3 fs.read allowed [flagged: watch-reads]"]]);
    const warned = await eventually(async () => {
      const list = await g.core.listNamespacedEvent({ namespace: g.ns, fieldSelector: "reason=ToolCallWarned" });
      if (list.items.length < 1) throw new Error("no ToolCallWarned event");
      return list.items;
    });
    expect(warned.map((e) => [e.type, e.message])).toEqual([
      ["Warning", "iteration 1 step 4 fs.write allowed [warned: adaptive_rule: no-done-reports]"],
    ]);
  }, 120_000);

  it("a busy worker's calls reach its status about once a second, not in a loop of status writes", async () => {
    expect(
      (await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: agentYaml("editor") + "---" + executionYaml("busy-1", "editor") }))
        .code,
    ).toBe(0);
    await eventually(
      async () => {
        const ex = await execution(g.ns, "busy-1");
        if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return ex;
      },
      30_000,
      "the Execution starts",
    );
    // Every write of the Execution while the worker proposes (the leader's status writes).
    let writes = 0;
    let counting = false;
    const watch = await new k8s.Watch(g.cp.kc).watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${g.ns}/executions`,
      { fieldSelector: "metadata.name=busy-1" },
      (type) => void (counting && type === "MODIFIED" && writes++),
      () => undefined,
    );
    try {
      const worker = await asWorker(g.ns, "busy-1");
      const calls = 120;
      const started = Date.now();
      counting = true;
      // About 40 calls a second for 3 s: each decision changes the counts in the status.
      for (let i = 1; i <= calls; i++) {
        const d = await worker.propose({
          namespace: g.ns,
          execution: "busy-1",
          iteration: 1,
          step: i,
          toolCallId: `i1-s${i}-busy`,
          tool: "cmd.run",
          args: { command: "ls" },
        });
        expect(d.allowed).toBe(true);
        await sleep(Math.max(0, started + i * 25 - Date.now()));
      }
      const status = await eventually(
        async () => {
          const ex = await execution(g.ns, "busy-1");
          if (ex.status?.toolCalls?.proposed !== calls) throw new Error(`toolCalls ${JSON.stringify(ex.status?.toolCalls)}`);
          return ex.status;
        },
        10_000,
        "every call in the status",
      );
      counting = false;
      expect(status.toolCalls).toEqual({ proposed: calls, allowed: calls, blocked: 0 });
      // Folded at most once a second (plus the final fold); folding on every reconcile made
      // each status write wake the next one, about one write per API round trip.
      const seconds = (Date.now() - started) / 1000;
      expect(writes).toBeGreaterThanOrEqual(1);
      expect(writes).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
    } finally {
      watch.abort();
      await g.cp.kubectl(["annotate", "ex", "busy-1", "-n", g.ns, "gavel.dev/cancel=test"]);
    }
  }, 60_000);

  it("once both replicas report a GuardPolicy's new generation in status.replicas, every call is decided under it (ADR 0074)", async () => {
    const revoking = (tool: string) =>
      `apiVersion: 100monkeys.ai/v1\nkind: GuardPolicy\nmetadata:\n  name: no-list\nspec:\n  revoked_tools:\n    - tool: ${tool}\n      reason: not here\n`;
    const reportedBoth = (generation: number) =>
      eventually(
        async () => {
          const r = await g.cp.kubectl(["get", "guardpolicy", "no-list", "-n", g.ns, "-o", "json"]);
          const p = JSON.parse(r.stdout) as { metadata: { generation: number }; status?: { replicas?: { observedGeneration: number }[] } };
          const replicas = p.status?.replicas ?? [];
          if (p.metadata.generation !== generation || replicas.length !== 2 || replicas.some((e) => e.observedGeneration !== generation))
            throw new Error(`generation ${p.metadata.generation}, replicas ${JSON.stringify(replicas)}`);
          return true;
        },
        30_000,
        `both replicas report no-list generation ${generation}`,
      );
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: executionYaml("enforce-1", "editor") })).code).toBe(0);
    await eventually(
      async () => ((await execution(g.ns, "enforce-1")).status?.phase === "Running" ? true : undefined),
      30_000,
      "enforce-1 runs",
    );
    const worker = await asWorker(g.ns, "enforce-1");
    const base = { namespace: g.ns, execution: "enforce-1", iteration: 1, tool: "fs.read", args: { path: "/workspace/report.md" } };
    let step = 0;
    // Several calls each time: the queue group spreads them over both replicas.
    const decide = async () => {
      const out: boolean[] = [];
      for (let i = 0; i < 8; i++) {
        step++;
        out.push((await worker.propose({ ...base, step, toolCallId: `i1-s${step}-enforce` })).allowed);
      }
      return out;
    };
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: revoking("fs.read") })).code).toBe(0);
    await reportedBoth(1);
    expect(await decide()).toEqual(Array(8).fill(false));
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: revoking("net.fetch") })).code).toBe(0);
    await reportedBoth(2);
    expect(await decide()).toEqual(Array(8).fill(true));
    expect((await g.cp.kubectl(["delete", "guardpolicy", "no-list", "-n", g.ns])).code).toBe(0);
  }, 120_000);

  it("an Execution that ends: its calls are refused once the gate has read it again (no call waits on that read)", async () => {
    const worker = await asWorker(g.ns, "edit-1");
    const base = { namespace: g.ns, execution: "edit-1", iteration: 1, tool: "fs.read", args: { path: "/workspace/report.md" } };
    expect((await g.cp.kubectl(["annotate", "ex", "edit-1", "-n", g.ns, "gavel.dev/cancel=test"])).code).toBe(0);
    await eventually(
      async () => {
        const ex = await execution(g.ns, "edit-1");
        if (ex.status?.phase !== "Cancelled") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return true;
      },
      30_000,
      "the Execution is cancelled",
    );
    // Each replica read the Execution while it ran; within one cache period (2 s) a call may still
    // be decided with that read, which is then refreshed in the background: refused after that.
    let step = 10;
    const refusal = await eventually<{ code: string; message: string }>(
      async () => {
        step++;
        const answer = await worker.propose({ ...base, step, toolCallId: `i1-s${step}-end` }).then(
          () => undefined,
          (err: unknown) => err as { code: string; message: string },
        );
        if (answer === undefined) throw new Error(`step ${step} was still decided`);
        return answer;
      },
      15_000,
      "a refusal of a call of the ended Execution",
    );
    expect(refusal).toMatchObject({ code: "forbidden" });
    expect(refusal.message).toMatch(/has ended \(Cancelled\)/);
  }, 60_000);

  it("an Execution deleted and created again under its name is a new run: none of the first run's calls count in it, its leftover pod and stored result are removed before it starts", async () => {
    // edit-1 ran 4 calls (and ended) in the tests above; its records stay in the store for an hour.
    const first = await execution(g.ns, "edit-1");
    // As if the first run were deleted while its worker pod still terminated, with an earlier iteration's result stored:
    // a pod and a result the new run must not take for its own.
    const owner = { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "edit-1", uid: first.metadata.uid ?? "", controller: true };
    const labels = { "gavel.dev/execution": "edit-1", "gavel.dev/runtime-instance": "ex" };
    await g.core.createNamespacedPod({
      namespace: g.ns,
      body: {
        metadata: { name: "gavel-edit-1-i1-ex", labels, ownerReferences: [owner] },
        spec: { containers: [{ name: "main", image: "gavel/agent:dev" }] },
      },
    });
    await g.core.createNamespacedConfigMap({
      namespace: g.ns,
      body: {
        metadata: { name: "edit-1-i1-result", labels: { "gavel.dev/execution": "edit-1" }, ownerReferences: [owner] },
        data: { iteration: "1", exitCode: "0", stdout: "the first run's" },
      },
    });
    expect((await g.cp.kubectl(["delete", "ex", "edit-1", "-n", g.ns, "--wait=true"])).code).toBe(0);
    // No garbage collector in this control plane: the first run's pod and result stay until the controller removes them.
    expect((await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: executionYaml("edit-1", "editor") })).code).toBe(0);
    const again = await eventually(
      async () => {
        const ex = await execution(g.ns, "edit-1");
        if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}: ${ex.status?.message ?? ""}`);
        return ex;
      },
      30_000,
      "the new run starts",
    );
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
    const pods = (await g.core.listNamespacedPod({ namespace: g.ns })).items.filter(
      (p) => p.metadata?.labels?.["gavel.dev/execution"] === "edit-1",
    );
    expect(pods.map((p) => [p.metadata?.name, p.metadata?.ownerReferences?.[0]?.uid])).toEqual([
      ["gavel-edit-1-i1-ex", again.metadata.uid],
    ]);
    await expect(g.core.readNamespacedConfigMap({ namespace: g.ns, name: "edit-1-i1-result" })).rejects.toMatchObject({ code: 404 });
    const worker = await asWorker(g.ns, "edit-1");
    const base = { namespace: g.ns, execution: "edit-1", iteration: 1 };
    // The first run's toolCallId i1-s1-w named another call: in this run it is a new call, not a conflict.
    const listed = await worker.propose({ ...base, step: 1, toolCallId: "i1-s1-w", tool: "cmd.run", args: { command: "ls" } });
    expect(listed).toMatchObject({ allowed: true });
    await worker.propose({ ...base, step: 2, toolCallId: "i1-s2-x", tool: "cmd.run", args: { command: "ls" } });
    await worker.propose({ ...base, step: 3, toolCallId: "i1-s3-x", tool: "cmd.run", args: { command: "ls" } });
    // The first run read the report at its step 3: in this run nothing was read, so the overwrite is blocked.
    const overwrite = await worker.propose({
      ...base,
      step: 4,
      toolCallId: "i1-s4-x",
      tool: "fs.write",
      args: { path: "/workspace/report.md", content: "x" },
    });
    expect([overwrite.allowed, overwrite.guard.check]).toEqual([false, "sequence_contract"]);
    const status = await eventually(
      async () => {
        const ex = await execution(g.ns, "edit-1");
        if (ex.status?.toolCalls?.proposed !== 4) throw new Error(`toolCalls ${JSON.stringify(ex.status?.toolCalls)}`);
        return ex.status;
      },
      15_000,
      "this run's 4 calls in its status",
    );
    expect(status.toolCalls).toEqual({ proposed: 4, allowed: 3, blocked: 1 });
    expect(status.iterations?.[0]?.toolCalls?.recent?.map((e) => [e.step, e.tool])).toEqual([
      [1, "cmd.run"],
      [2, "cmd.run"],
      [3, "cmd.run"],
      [4, "fs.write"],
    ]);
    await g.cp.kubectl(["annotate", "ex", "edit-1", "-n", g.ns, "gavel.dev/cancel=test"]);
  }, 60_000);
});
