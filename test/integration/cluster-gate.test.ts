// The tool-call gate of `gavel controller --nats` against the real kube-apiserver and a real
// nats-server (JWT mode): two replicas answer a worker's proposals (queue group) with the
// Execution's Agent and the namespace's GuardPolicy, decide each call once (counted in the
// JetStream store), and the leader writes the calls into the Execution's status. Without
// NATS an Execution that needs a gate never gets a worker pod, and says why. (No kubelet
// here: worker pods are created but never run; this test plays the worker.)
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolCallProposal } from "../../src/api/protocol.js";
import type { Agent, Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { createTrust, issueControllerCredentials, issueWorkerCredentials, serverConfig, type NatsTrust } from "../../src/transport/credentials.js";
import type { GavelEvent } from "../../src/api/events.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { inboxPrefix } from "../../src/transport/subjects.js";
import { ToolCallClient } from "../../src/transport/tool-call-client.js";
import { DECISION_STREAM, DECISION_SUBJECT_PREFIX, type ToolCallRecord } from "../../src/gate/tool-call.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { executionYaml } from "../harness/example-worker.js";
import { REPO_DIR } from "../harness/paths.js";
import { eventually as poll, sleep, type Answer } from "../harness/eventually.js";
import { messageOf } from "../../src/errors.js";

const enc = new TextEncoder();

const procs: { name: string; proc: ChildProcess; log: string[] }[] = [];

/** Polls like the harness's `eventually`; a timeout carries the controllers' own account of why. */
async function eventually<T extends Answer>(probe: () => Promise<T | undefined>, ms = 30_000, what = "condition"): Promise<T> {
  return poll(probe, { timeoutMs: ms, everyMs: 200, what }).catch((err: unknown) => {
    const logs = procs.map((p) => `--- ${p.name} (exit ${String(p.proc.exitCode)}):\n${p.log.join("").slice(-3000)}`).join("\n");
    throw new Error(`${messageOf(err)}\n${logs}`, { cause: err });
  });
}


const agentYaml = (name: string) => `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: ${name}
spec:
  runtime:
    image: gavel/agent:dev
  task:
    instruction: Read the report, then rewrite it.
  tools:
    - fs.read
    - fs.write
    - name: cmd.run
      allowlist: ["ls"]
  execution:
    mode: one-shot
`;

const policyYaml = `
apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata:
  name: read-first
spec:
  sequence_contracts:
    - name: read-before-overwrite
      requires_prior: fs.read
      triggers_for: fs.write
      within_steps: 3
  adaptive_rules:
    - name: watch-reads
      match_field: tool
      pattern: '^fs\\.read$'
      action: flag
      reason: how often do workers read
    - name: no-done-reports
      match_field: args
      pattern: "status: done"
      action: deny
      reason: a candidate rule, watched before it blocks
      enforcementAction: warn
    - name: report-writes
      match_field: args
      pattern: "/workspace/report"
      action: deny
      reason: measured only
      enforcementAction: dryrun
`;


describe("the tool-call gate in gavel controller (real kube-apiserver, real nats-server)", () => {
  let cp: ControlPlane;
  let nats: NatsServer;
  let trust: NatsTrust;
  let dir: string;
  let ns: string;
  let api: k8s.CustomObjectsApi;
  let core: k8s.CoreV1Api;
  const conns: NatsConnection[] = [];

  function controller(name: string, args: string[]): { name: string; proc: ChildProcess; log: string[] } {
    const log: string[] = [];
    const proc = spawn(join(REPO_DIR, "bin", "gavel"), ["controller", "--kubeconfig", cp.kubeconfigPath, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, GAVEL_POD_NAME: name, GAVEL_LOG_LEVEL: "info" },
    });
    proc.stderr?.on("data", (b: Buffer) => log.push(b.toString()));
    const entry = { name, proc, log };
    procs.push(entry);
    return entry;
  }

  async function execution(namespace: string, name: string): Promise<Execution> {
    return (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", name })) as Execution;
  }

  async function asWorker(namespace: string, exec: string): Promise<ToolCallClient> {
    const nc = await connect({
      servers: nats.url,
      authenticator: credsAuthenticator(enc.encode(issueWorkerCredentials(trust, namespace, exec).creds)),
      inboxPrefix: inboxPrefix(namespace, exec),
    });
    conns.push(nc);
    return new ToolCallClient(nc, { attemptTimeoutMs: 2000, totalTimeoutMs: 30_000 });
  }

  beforeAll(async () => {
    trust = createTrust();
    [cp, nats] = await Promise.all([startControlPlane(), startNats({ extraConfig: serverConfig(trust).config })]);
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    core = cp.kc.makeApiClient(k8s.CoreV1Api);
    dir = await mkdtemp(join(tmpdir(), "gavel-cluster-gate-"));
    await writeFile(join(dir, "controller.creds"), issueControllerCredentials(trust).creds);
    ns = await cp.createNamespace("gate");
    const natsArgs = ["--nats", nats.url, "--nats-creds", join(dir, "controller.creds")];
    // Two replicas: one leads the reconciler, both serve the gate.
    for (const name of ["gate-a", "gate-b"]) controller(name, ["-n", ns, "--controller-namespace", ns, "--leader-elect", ...natsArgs]);
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) if (p.proc.exitCode === null) p.proc.kill("SIGKILL");
    for (const c of conns) await c.close().catch(() => undefined);
    await nats?.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("decides a worker's calls with its Agent and the namespace's GuardPolicy, once each across two replicas, and writes them into the status", async () => {
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: agentYaml("editor") + "---" + policyYaml })).code).toBe(0);
    // The policy is compiled by both replicas before the first call.
    await eventually(async () => {
      const r = await cp.kubectl(["get", "guardpolicy", "read-first", "-n", ns, "-o", "jsonpath={.status.conditions[0].status}"]);
      if (r.stdout !== "True") throw new Error(`policy not ready: ${r.stdout}`);
      return true;
    });
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: executionYaml("edit-1", "editor") })).code).toBe(0);
    const running = await eventually(async () => {
      const ex = await execution(ns, "edit-1");
      if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    }, 30_000, "the Execution starts");
    expect(running.status?.conditions?.find((c) => c.type === "Guarded")).toMatchObject({ status: "True", reason: "GateServing" });
    // The worker pod gets the gate's NATS URL and its identity.
    const pod = await eventually(async () => {
      const pods = await core.listNamespacedPod({ namespace: ns });
      const p = pods.items.find((x) => x.metadata?.labels?.["gavel.dev/execution"] === "edit-1");
      if (p === undefined) throw new Error("no worker pod yet");
      return p;
    });
    const env = Object.fromEntries((pod.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ GAVEL_NATS_URL: nats.url, GAVEL_NAMESPACE: ns, GAVEL_EXECUTION: "edit-1", GAVEL_ITERATION: "1" });

    const worker = await asWorker(ns, "edit-1");
    const base = { namespace: ns, execution: "edit-1", iteration: 1 };
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
    for (let i = 0; i < 6; i++) expect(await worker.propose({ ...base, ...(calls[i % 4] as (typeof calls)[number]) })).toEqual(decisions[i % 4]);
    // A proposal for an Execution that does not exist is refused, not decided.
    await expect((await asWorker(ns, "ghost")).propose({ ...base, execution: "ghost", step: 1, toolCallId: "g1", tool: "fs.read", args: { path: "/a" } })).rejects.toMatchObject({ code: "forbidden", field: "/execution" });

    // One record per call in the store, each a decision.
    const gateNc = await connect({ servers: nats.url, authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)) });
    conns.push(gateNc);
    const jsm = await jetstreamManager(gateNc);
    const info = await jsm.streams.info(DECISION_STREAM, { subjects_filter: `${DECISION_SUBJECT_PREFIX}.>` });
    const subjects = Object.keys(info.state.subjects ?? {}).filter((s) => s.includes(".edit-1."));
    expect(subjects.sort()).toEqual(calls.map((c) => `${DECISION_SUBJECT_PREFIX}.${ns}.edit-1.${running.metadata.uid ?? ""}.${c.toolCallId}`).sort());
    for (const s of subjects) expect((await jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: s }))?.json<ToolCallRecord>().kind).toBe("decision");

    // The leader folds them into the status: counts, the recent calls, totals for `kubectl get ex`.
    const status = await eventually(async () => {
      const ex = await execution(ns, "edit-1");
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
    const table = await cp.kubectl(["get", "ex", "edit-1", "-n", ns]);
    expect(table.stdout).toMatch(/CALLS\s+BLOCKED/);
    expect(table.stdout).toMatch(/edit-1\s+editor\s+Running\s+1\s+(<none>\s+)?4\s+2/);

    // Each decision once in the event stream, and the blocked ones as Kubernetes Events.
    const stream = await EventStream.open(gateNc);
    const events: GavelEvent[] = [];
    for await (const e of stream.read({ namespace: ns, root: "edit-1", untilIdleMs: 1000 })) events.push(e);
    // Two replicas publish their own decisions: the stream keeps each replica's order, not the steps' order.
    const decided = events.filter((e) => e.type === "toolcall.decision").sort((a, b) => Number(a.data.step) - Number(b.data.step));
    expect(decided.map((e) => e.data.step)).toEqual([1, 2, 3, 4]);
    expect(decided.map((e) => e.data.flags)).toEqual([undefined, undefined, ["watch-reads"], undefined]);
    // Rules in warn and dryrun mode let the calls through and say what they would have denied.
    expect(decided.map((e) => e.data.warnings)).toEqual([undefined, undefined, undefined, ["adaptive_rule: no-done-reports"]]);
    expect(decided.map((e) => e.data.dryrun)).toEqual([undefined, undefined, ["adaptive_rule: report-writes"], ["adaptive_rule: report-writes"]]);
    expect(JSON.stringify(decided)).not.toContain("rm -rf");
    const k8sEvents = await eventually(async () => {
      const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: "reason=ToolCallBlocked" });
      if (list.items.length < 2) throw new Error(`${list.items.length} events`);
      return list.items;
    });
    expect(k8sEvents.map((e) => e.type)).toEqual(["Warning", "Warning"]);
    const flagged = await eventually(async () => {
      const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: "reason=ToolCallFlagged" });
      if (list.items.length < 1) throw new Error("no ToolCallFlagged event");
      return list.items;
    });
    expect(flagged.map((e) => [e.type, e.message])).toEqual([["Warning", "iteration 1 step 3 fs.read allowed [flagged: watch-reads]"]]);
    const warned = await eventually(async () => {
      const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: "reason=ToolCallWarned" });
      if (list.items.length < 1) throw new Error("no ToolCallWarned event");
      return list.items;
    });
    expect(warned.map((e) => [e.type, e.message])).toEqual([["Warning", "iteration 1 step 4 fs.write allowed [warned: adaptive_rule: no-done-reports]"]]);
  }, 120_000);

  it("a busy worker's calls reach its status about once a second, not in a loop of status writes", async () => {
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: agentYaml("editor") + "---" + executionYaml("busy-1", "editor") })).code).toBe(0);
    await eventually(async () => {
      const ex = await execution(ns, "busy-1");
      if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    }, 30_000, "the Execution starts");
    // Every write of the Execution while the worker proposes (the leader's status writes).
    let writes = 0;
    let counting = false;
    const watch = await new k8s.Watch(cp.kc).watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/executions`,
      { fieldSelector: "metadata.name=busy-1" },
      (type) => void (counting && type === "MODIFIED" && writes++),
      () => undefined,
    );
    try {
      const worker = await asWorker(ns, "busy-1");
      const calls = 120;
      const started = Date.now();
      counting = true;
      // About 40 calls a second for 3 s: each decision changes the counts in the status.
      for (let i = 1; i <= calls; i++) {
        const d = await worker.propose({ namespace: ns, execution: "busy-1", iteration: 1, step: i, toolCallId: `i1-s${i}-busy`, tool: "cmd.run", args: { command: "ls" } });
        expect(d.allowed).toBe(true);
        await sleep(Math.max(0, started + i * 25 - Date.now()));
      }
      const status = await eventually(async () => {
        const ex = await execution(ns, "busy-1");
        if (ex.status?.toolCalls?.proposed !== calls) throw new Error(`toolCalls ${JSON.stringify(ex.status?.toolCalls)}`);
        return ex.status;
      }, 10_000, "every call in the status");
      counting = false;
      expect(status.toolCalls).toEqual({ proposed: calls, allowed: calls, blocked: 0 });
      // Folded at most once a second (plus the final fold); folding on every reconcile made
      // each status write wake the next one, about one write per API round trip.
      const seconds = (Date.now() - started) / 1000;
      expect(writes).toBeGreaterThanOrEqual(1);
      expect(writes).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
    } finally {
      watch.abort();
      await cp.kubectl(["annotate", "ex", "busy-1", "-n", ns, "gavel.dev/cancel=test"]);
    }
  }, 60_000);

  it("an Execution that ends: its calls are refused once the gate has read it again (no call waits on that read)", async () => {
    const worker = await asWorker(ns, "edit-1");
    const base = { namespace: ns, execution: "edit-1", iteration: 1, tool: "fs.read", args: { path: "/workspace/report.md" } };
    expect((await cp.kubectl(["annotate", "ex", "edit-1", "-n", ns, "gavel.dev/cancel=test"])).code).toBe(0);
    await eventually(async () => {
      const ex = await execution(ns, "edit-1");
      if (ex.status?.phase !== "Cancelled") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return true;
    }, 30_000, "the Execution is cancelled");
    // Each replica read the Execution while it ran; within one cache period (2 s) a call may still
    // be decided with that read, which is then refreshed in the background: refused after that.
    let step = 10;
    const refusal = await eventually<{ code: string; message: string }>(async () => {
      step++;
      const answer = await worker.propose({ ...base, step, toolCallId: `i1-s${step}-end` }).then(
        () => undefined,
        (err: unknown) => err as { code: string; message: string },
      );
      if (answer === undefined) throw new Error(`step ${step} was still decided`);
      return answer;
    }, 15_000, "a refusal of a call of the ended Execution");
    expect(refusal).toMatchObject({ code: "forbidden" });
    expect(refusal.message).toMatch(/has ended \(Cancelled\)/);
  }, 60_000);

  it("an Execution deleted and created again under its name is a new run: none of the first run's calls count in it, its leftover pod and stored result are removed before it starts", async () => {
    // edit-1 ran 4 calls (and ended) in the tests above; its records stay in the store for an hour.
    const first = await execution(ns, "edit-1");
    // As if the first run were deleted while its worker pod still terminated, with an earlier iteration's result stored:
    // a pod and a result the new run must not take for its own.
    const owner = { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "edit-1", uid: first.metadata.uid ?? "", controller: true };
    const labels = { "gavel.dev/execution": "edit-1", "gavel.dev/runtime-instance": "ex" };
    await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: "gavel-edit-1-i1-ex", labels, ownerReferences: [owner] }, spec: { containers: [{ name: "main", image: "gavel/agent:dev" }] } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "edit-1-i1-result", labels: { "gavel.dev/execution": "edit-1" }, ownerReferences: [owner] }, data: { iteration: "1", exitCode: "0", stdout: "the first run's" } } });
    expect((await cp.kubectl(["delete", "ex", "edit-1", "-n", ns, "--wait=true"])).code).toBe(0);
    // No garbage collector in this control plane: the first run's pod and result stay until the controller removes them.
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: executionYaml("edit-1", "editor") })).code).toBe(0);
    const again = await eventually(async () => {
      const ex = await execution(ns, "edit-1");
      if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}: ${ex.status?.message ?? ""}`);
      return ex;
    }, 30_000, "the new run starts");
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
    const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) => p.metadata?.labels?.["gavel.dev/execution"] === "edit-1");
    expect(pods.map((p) => [p.metadata?.name, p.metadata?.ownerReferences?.[0]?.uid])).toEqual([["gavel-edit-1-i1-ex", again.metadata.uid]]);
    await expect(core.readNamespacedConfigMap({ namespace: ns, name: "edit-1-i1-result" })).rejects.toMatchObject({ code: 404 });
    const worker = await asWorker(ns, "edit-1");
    const base = { namespace: ns, execution: "edit-1", iteration: 1 };
    // The first run's toolCallId i1-s1-w named another call: in this run it is a new call, not a conflict.
    const listed = await worker.propose({ ...base, step: 1, toolCallId: "i1-s1-w", tool: "cmd.run", args: { command: "ls" } });
    expect(listed).toMatchObject({ allowed: true });
    await worker.propose({ ...base, step: 2, toolCallId: "i1-s2-x", tool: "cmd.run", args: { command: "ls" } });
    await worker.propose({ ...base, step: 3, toolCallId: "i1-s3-x", tool: "cmd.run", args: { command: "ls" } });
    // The first run read the report at its step 3: in this run nothing was read, so the overwrite is blocked.
    const overwrite = await worker.propose({ ...base, step: 4, toolCallId: "i1-s4-x", tool: "fs.write", args: { path: "/workspace/report.md", content: "x" } });
    expect([overwrite.allowed, overwrite.guard.check]).toEqual([false, "sequence_contract"]);
    const status = await eventually(async () => {
      const ex = await execution(ns, "edit-1");
      if (ex.status?.toolCalls?.proposed !== 4) throw new Error(`toolCalls ${JSON.stringify(ex.status?.toolCalls)}`);
      return ex.status;
    }, 15_000, "this run's 4 calls in its status");
    expect(status.toolCalls).toEqual({ proposed: 4, allowed: 3, blocked: 1 });
    expect(status.iterations?.[0]?.toolCalls?.recent?.map((e) => [e.step, e.tool])).toEqual([
      [1, "cmd.run"],
      [2, "cmd.run"],
      [3, "cmd.run"],
      [4, "fs.write"],
    ]);
    await cp.kubectl(["annotate", "ex", "edit-1", "-n", ns, "gavel.dev/cancel=test"]);
  }, 60_000);

  it("an Execution re-created under its name waits for the earlier run's workspace claim (the garbage collector's to delete), then makes its own", async () => {
    const keeper = agentYaml("keeper") + "  volumes:\n    - name: workspace\n      mount_path: /workspace\n";
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: keeper + "---" + executionYaml("keep-1", "keeper") })).code).toBe(0);
    const claimOwner = async (): Promise<string | undefined> =>
      (await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: "keep-1-workspace" })).metadata?.ownerReferences?.[0]?.uid;
    const first = await eventually(async () => {
      const ex = await execution(ns, "keep-1");
      if (ex.status?.phase !== "Running" || (await claimOwner()) !== ex.metadata.uid) throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    }, 30_000, "the first run with its claim");
    expect((await cp.kubectl(["delete", "ex", "keep-1", "-n", ns, "--wait=true"])).code).toBe(0);
    // No garbage collector in this control plane: the first run's claim stays, as it does on a cluster while a pod still mounts it.
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: executionYaml("keep-1", "keeper") })).code).toBe(0);
    const waiting = await eventually(async () => {
      const ex = await execution(ns, "keep-1");
      if (ex.metadata.uid === first.metadata.uid || !/PersistentVolumeClaim keep-1-workspace/.test(ex.status?.message ?? "")) throw new Error(`message ${ex.status?.message ?? "none"}`);
      return ex;
    }, 15_000, "the new run waits, naming the claim");
    expect(waiting.status?.phase).toBe("Pending");
    expect(waiting.status?.message).toContain(`uid ${first.metadata.uid ?? ""}`);
    expect(await claimOwner()).toBe(first.metadata.uid);
    // What the garbage collector and then the pvc-protection controller (neither runs here) do once no pod mounts it.
    await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: "keep-1-workspace" });
    await core
      .patchNamespacedPersistentVolumeClaim({ namespace: ns, name: "keep-1-workspace", body: [{ op: "remove", path: "/metadata/finalizers" }] }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch))
      .catch(() => undefined);
    const again = await eventually(async () => {
      const ex = await execution(ns, "keep-1");
      if (ex.status?.phase !== "Running" || (await claimOwner().catch(() => undefined)) !== ex.metadata.uid) throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    }, 30_000, "the new run starts with a claim of its own");
    expect(again.metadata.uid).toBe(waiting.metadata.uid);
    await cp.kubectl(["annotate", "ex", "keep-1", "-n", ns, "gavel.dev/cancel=test"]);
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
    expect((await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: judged + "---" + executionYaml("careful-1", "careful") })).code).toBe(0);
    const parent = await eventually(async () => {
      const ex = await execution(ns, "careful-1");
      if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    });
    const worker = await asWorker(ns, "careful-1");
    const call = { namespace: ns, execution: "careful-1", iteration: 1, step: 1, toolCallId: "i1-s1-c", tool: "cmd.run", args: { command: "ls /workspace" }, intent: "see what is there" };
    const decision = worker.propose(call);
    const childName = "careful-1-i1-t0-s1-rule-judge";
    const child = await eventually(() => execution(ns, childName), 20_000, "the tool-judge child");
    expect(child.spec.parent).toMatchObject({ name: "careful-1", uid: parent.metadata.uid, purpose: "tool_validation", iteration: 1, validatorIndex: 0, toolCallId: "i1-s1-c", depth: 1 });
    expect(child.spec.timeoutSeconds).toBe(120);
    expect(child.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: "Execution", name: "careful-1", uid: parent.metadata.uid, controller: true })]);
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
      const refs = (await execution(ns, "careful-1")).status?.children ?? [];
      if (!refs.some((r) => r.name === childName && r.purpose === "tool_validation" && r.toolCallId === "i1-s1-c")) throw new Error(JSON.stringify(refs));
      return true;
    });
    const pod = await eventually(async () => {
      const p = (await core.listNamespacedPod({ namespace: ns })).items.find((x) => x.metadata?.labels?.["gavel.dev/execution"] === childName);
      if (p === undefined) throw new Error("no judge pod yet");
      return p;
    });
    expect(pod.spec?.containers[0]?.volumeMounts?.find((m) => m.mountPath === "/workspace")?.readOnly).toBe(true);
    // A replica dies while the call waits on its judge: whichever held the claim, the call is decided once.
    procs.find((p) => p.name === "gate-a")?.proc.kill("SIGKILL");
    await sleep(1000);
    // No kubelet runs the judge pod here: the test writes the verdict the judge's pod and the reconciler would (the e2e runs it for real).
    const verdict = { score: 0.9, confidence: 0.8, reasoning: "scoped to the workspace" };
    await eventually(async () => {
      const c = await execution(ns, childName);
      await api.replaceNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name: childName, body: { ...c, status: { ...c.status, phase: "Succeeded", verdict, score: 0.9, completionTime: new Date().toISOString() } } });
      return true;
    });
    const d = await decision;
    expect(d).toMatchObject({ allowed: true, blocked_by: "none", judges: [{ judge: "rule-judge", child: childName, passed: true, result: verdict }] });
    const children = ((await api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", labelSelector: "gavel.dev/parent=careful-1" })) as { items: Execution[] }).items;
    expect(children.map((c) => c.metadata.name)).toEqual([childName]);
    const gateNc = await connect({ servers: nats.url, authenticator: credsAuthenticator(enc.encode(issueControllerCredentials(trust).creds)) });
    conns.push(gateNc);
    const jsm = await jetstreamManager(gateNc);
    const rec = (await jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: `${DECISION_SUBJECT_PREFIX}.${ns}.careful-1.${parent.metadata.uid ?? ""}.i1-s1-c` }))?.json<ToolCallRecord>();
    expect(rec).toMatchObject({ kind: "decision", decision: { allowed: true } });
    expect(await worker.propose(call)).toEqual(d);
  }, 120_000);

  it("fail closed: without NATS, an Execution that needs a gate gets no worker pod, says why, and times out; its Agent is not Ready", async () => {
    const lone = await cp.createNamespace("nogate");
    controller("no-nats", ["-n", lone, "--controller-namespace", lone]);
    // One that waits (its deadline is what max_iterations allows) and one whose own deadline is 6 s.
    const manifests = agentYaml("editor") + "---" + executionYaml("waiting", "editor") + "---" + executionYaml("blind", "editor", undefined, 6);
    expect((await cp.kubectl(["apply", "-n", lone, "-f", "-"], { stdin: manifests })).code).toBe(0);
    const pending = await eventually(async () => {
      const ex = await execution(lone, "waiting");
      if (ex.status?.phase !== "Pending") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    });
    expect(pending.status?.conditions?.find((c) => c.type === "Guarded")).toMatchObject({ status: "False", reason: "GateUnavailable" });
    expect(pending.status?.message).toMatch(/spec.tools declares 3 tools .* but gavel controller runs without NATS/);
    const agent = await eventually(async () => {
      const a = (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: lone, plural: "agents", name: "editor" })) as Agent;
      const ready = a.status?.conditions?.find((c) => c.type === "Ready");
      if (ready === undefined) throw new Error("no Ready yet");
      return ready;
    });
    expect(agent).toMatchObject({ status: "False", reason: "CannotEnforce" });
    const ended = await eventually(async () => {
      const ex = await execution(lone, "blind");
      if (ex.status?.phase !== "TimedOut") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
      return ex;
    }, 30_000, "the Execution times out");
    expect(ended.status?.message).toMatch(/never started within its deadline of 6s/);
    expect((await core.listNamespacedPod({ namespace: lone })).items).toEqual([]);
    expect((await execution(lone, "waiting")).status?.phase).toBe("Pending");
  }, 90_000);
});
