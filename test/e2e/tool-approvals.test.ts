// The escalation ladder's last tier on the cluster (issue 25, ADR 0067): a tool whose approval
// is `always` makes the gate create a ToolApproval owned by the Execution and the worker's call
// wait on it; people decide with `gavel approve|deny` as the Kubernetes users they are
// (impersonated here through the admin kubeconfig), and the API server itself refuses a user
// without the `approve` verb, a decider naming someone else, a decision for another call's
// digest, and a second decision. The worker is told "approved", "denied by USER: reason" or
// "approval timed out", and the Execution's Events show the pending approval and its end.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { GROUP, VERSION, type ToolApproval } from "../../src/api/types.js";
import { gavel } from "../harness/cli.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE } from "../harness/gavel-chart.js";
import { executionYaml, workerYaml, write } from "../harness/approval-runs.js";

describe("tool calls that wait for a person: ToolApprovals decided by authorised Kubernetes users (chart-installed controller)", () => {
  let cluster: Cluster;
  let controller: ChartController;
  let runs: Executions;
  let custom: k8s.CustomObjectsApi;
  let dir: string;
  /** A kubeconfig per user, each the admin's impersonating that user (kubectl's --as). */
  const as: Record<string, string> = {};

  beforeAll(async () => {
    cluster = await useCluster();
    controller = new ChartController(cluster);
    await controller.ready();
    custom = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    const ns = await cluster.createNamespace("e2e-approvals");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${(await controller.log()).slice(-6000)}`);
    dir = await mkdtemp(join(tmpdir(), "gavel-approvals-"));
    const admin = parse(await readFile(cluster.kubeconfigPath, "utf8")) as { users: { user: Record<string, unknown> }[] };
    for (const user of ["alice", "mallory", "eve"]) {
      const config = structuredClone(admin);
      for (const u of config.users) u.user.as = user;
      as[user] = join(dir, `${user}.kubeconfig`);
      await writeFile(as[user], stringify(config));
    }
    // alice: the chart's approver ClusterRole. mallory: may read approvals and patch their status, but has no approve verb. eve: nothing.
    await runs.apply(
      [
        {
          kind: "RoleBinding",
          metadata: { name: "alice-approves" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${RELEASE}-approver` },
        },
        {
          kind: "Role",
          metadata: { name: "approval-writer" },
          rules: [
            { apiGroups: [GROUP], resources: ["toolapprovals", "executions"], verbs: ["get", "list"] },
            { apiGroups: [GROUP], resources: ["toolapprovals/status"], verbs: ["get", "patch"] },
          ],
        },
        {
          kind: "RoleBinding",
          metadata: { name: "mallory-writes" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "approval-writer" },
        },
      ]
        .map((o, i) =>
          stringify({
            apiVersion: "rbac.authorization.k8s.io/v1",
            ...o,
            ...(o.kind === "RoleBinding"
              ? { subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: i === 0 ? "alice" : "mallory" }] }
              : {}),
          }),
        )
        .join("---\n"),
    );
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const approvals = async (execution: string): Promise<ToolApproval[]> => {
    const list = (await custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: runs.namespace,
      plural: "toolapprovals",
    })) as {
      items: ToolApproval[];
    };
    return list.items.filter((a) => a.spec.execution === execution).sort((a, b) => a.spec.step - b.spec.step);
  };
  const pending = (execution: string, step: number) =>
    eventually(
      async () => (await approvals(execution)).find((a) => a.spec.step === step && a.status?.phase === "Pending"),
      180_000,
      `a pending ToolApproval of ${execution} step ${step}`,
    );
  const cli = (user: string, argv: string[]) => gavel([...argv, "-n", runs.namespace], { env: { KUBECONFIG: as[user] ?? "" } });
  const decisionPatch = (user: string | undefined, name: string, decision: Record<string, unknown>) =>
    cluster.kubectl([
      ...(user !== undefined ? ["--as", user] : []),
      "patch",
      "toolapproval",
      name,
      "-n",
      runs.namespace,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { decision } }),
    ]);
  const reasons = async (execution: string): Promise<string[]> => {
    const events = await cluster.kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: runs.namespace });
    return events.items.filter((e) => e.involvedObject.name === execution).map((e) => e.reason ?? "");
  };
  const workerLog = async (execution: string): Promise<string> => {
    const r = await gavel(["logs", execution, "-n", runs.namespace], { env: { KUBECONFIG: cluster.kubeconfigPath } });
    expect(r.code, r.err).toBe(0);
    return r.out;
  };

  it("Given fs.write with approval: always, a user without the verb is refused by the API server, alice's approval runs the call once, and a changed call needs (and here gets denied) its own approval", async () => {
    await runs.apply(
      [
        workerYaml("ladder-run", [
          write("one\n"),
          { tool_calls: [{ tool: "fs.read", args: { path: "/workspace/notes.md" } }] },
          write("two\n"),
          { final: "r1={{result 1}} | r2={{result 2}} | r3={{result 3}}" },
        ]),
        executionYaml("ladder-run"),
      ].join("---\n"),
    );
    const first = await pending("ladder-run", 1);
    const execution = await runs.get("ladder-run");
    // The call as a person sees it, bound to its digest, owned by the Execution (it goes with it).
    expect(first.spec).toMatchObject({
      tool: "fs.write",
      arguments: { path: "/workspace/notes.md", content: "one\n" },
      intent: "write the notes",
      trigger: "always",
      onTimeout: "deny",
      iteration: 1,
    });
    expect(first.spec.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(Date.parse(first.spec.deadline) - Date.now()).toBeGreaterThan(60_000);
    expect(first.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Execution", uid: execution?.metadata.uid, controller: true }),
    ]);
    const name = first.metadata.name;

    // eve has no access at all: RBAC refuses the read.
    const eve = await cli("eve", ["approve", name]);
    expect(eve.code).toBe(1);
    expect(eve.err).toMatch(/forbidden/i);
    // mallory may patch the status but lacks the approve verb: the admission policy refuses her, by name.
    const mallory = await cli("mallory", ["approve", name, "--reason", "trust me"]);
    expect(mallory.code).toBe(1);
    expect(mallory.err).toContain("user mallory may not decide ToolApprovals");
    // Naming someone else as the decider is refused too, whoever writes it.
    const forged = await decisionPatch("mallory", name, { approved: true, decidedBy: "alice", digest: first.spec.digest });
    expect(forged.code).not.toBe(0);
    expect(forged.stderr).toContain("status.decision.decidedBy must be the user who decides: mallory");
    expect((await approvals("ladder-run"))[0]?.status?.decision).toBeUndefined();

    const approved = await cli("alice", ["approve", name, "--reason", "looks fine"]);
    expect(approved.err).toBe("");
    expect(approved.out).toContain(`toolapproval/${name} approved by alice: fs.write`);

    // The changed call (other content) is not covered by the first approval: it waits on its own.
    const second = await pending("ladder-run", 3);
    expect(second.metadata.name).not.toBe(name);
    expect(second.spec.digest).not.toBe(first.spec.digest);
    expect(second.spec.arguments).toEqual({ path: "/workspace/notes.md", content: "two\n" });
    // A decision carrying the first call's digest is refused: a decision is bound to the exact call.
    const reused = await decisionPatch("alice", second.metadata.name, { approved: true, decidedBy: "alice", digest: first.spec.digest });
    expect(reused.code).not.toBe(0);
    expect(reused.stderr).toContain("status.decision.digest must be the digest of the call");
    const denied = await cli("alice", ["deny", second.metadata.name, "--reason", "only the first write was agreed"]);
    expect(denied.err).toBe("");
    expect(denied.out).toContain("denied by alice");

    const done = await runs.final("ladder-run", 240_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    const calls = done.status?.iterations?.[0]?.toolCalls;
    expect(calls?.recent?.map(callSummary)).toEqual([
      [1, "fs.write", "allowed", "", 0],
      [2, "fs.read", "allowed", "", 0],
      [3, "fs.write", "blocked by approval", "", 0],
    ]);
    expect(calls?.blockedByApproval).toBe(1);
    // The worker was told each outcome; the approved write ran once (the read sees its content).
    const log = await workerLog("ladder-run");
    expect(log).toContain("r1=[approved by alice: looks fine]");
    expect(log).toContain("r2=one");
    expect(log).toContain("r3=Tool call denied by alice: only the first write was agreed");

    const ended = await approvals("ladder-run");
    expect(ended.map((a) => [a.spec.step, a.status?.phase, a.status?.decision?.decidedBy, a.status?.decision?.approved])).toEqual([
      [1, "Approved", "alice", true],
      [3, "Denied", "alice", false],
    ]);
    // Decided once: a second decision is refused by the CLI, and a change of it by the API server (even for the admin).
    const again = await cli("alice", ["deny", name]);
    expect(again.code).toBe(1);
    expect(again.err).toContain("is already decided: approved by alice");
    const flipped = await decisionPatch(undefined, name, { approved: false });
    expect(flipped.code).not.toBe(0);
    expect(flipped.stderr).toContain("decision is recorded once and never changed");

    const seen = await eventually(
      async () => {
        const r = await reasons("ladder-run");
        return r.filter((x) => x.startsWith("ToolCallApproval") || x === "ToolCallApproved" || x === "ToolCallDenied").length >= 4
          ? r
          : undefined;
      },
      30_000,
      "the approvals' Events on the Execution",
    );
    expect(seen.filter((r) => r === "ToolCallApprovalPending")).toHaveLength(2);
    expect(seen).toContain("ToolCallApproved");
    expect(seen).toContain("ToolCallDenied");
  }, 600_000);

  it("Given nobody answers: onTimeout deny tells the worker the approval timed out (the call is denied, the run goes on); onTimeout fail fails the iteration; a late decision is refused", async () => {
    const script = [write("late\n"), { final: "r1={{result 1}}" }];
    await runs.apply(
      [
        workerYaml("timeout-deny", script, { approval_timeout: "8s" }),
        executionYaml("timeout-deny"),
        workerYaml("timeout-fail", script, { approval_timeout: "8s", approval_on_timeout: "fail" }),
        executionYaml("timeout-fail"),
      ].join("---\n"),
    );
    const [deny, fail] = await Promise.all([runs.final("timeout-deny", 240_000), runs.final("timeout-fail", 240_000)]);
    expect(deny.status?.phase, deny.status?.message).toBe("Succeeded");
    expect(deny.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary)).toEqual([[1, "fs.write", "blocked by approval", "", 0]]);
    expect(await workerLog("timeout-deny")).toMatch(
      /r1=Tool call approval timed out: nobody decided ToolApproval \S+ within 8s \(onTimeout: deny\)/,
    );
    expect(fail.status?.phase, fail.status?.message).toBe("Failed");

    for (const execution of ["timeout-deny", "timeout-fail"]) {
      const [a] = await approvals(execution);
      expect(a?.status?.phase).toBe("TimedOut");
      expect(a?.status?.decision).toBeUndefined();
      const late = await cli("alice", ["approve", a?.metadata.name ?? ""]);
      expect(late.code).toBe(1);
      expect(late.err).toContain("expired at");
      // Written past the CLI's check, the API server refuses it as well.
      const direct = await decisionPatch("alice", a?.metadata.name ?? "", { approved: true, decidedBy: "alice", digest: a?.spec.digest });
      expect(direct.stderr).toContain("the approval already ended: TimedOut");
    }
    // The warning before expiry (a fifth of the 8 s before the deadline) came before the timeout.
    expect(await reasons("timeout-deny")).toEqual(
      expect.arrayContaining(["ToolCallApprovalPending", "ToolCallApprovalExpiring", "ToolCallApprovalTimedOut"]),
    );
  }, 600_000);

  it("Given alice approves a call --for-execution, the identical calls of that run that follow run without asking again; a changed call still asks", async () => {
    const same = write("same\n");
    await runs.apply(
      [
        workerYaml("standing", [
          same,
          same,
          { tool_calls: [{ tool: "fs.read", args: { path: "/workspace/notes.md" } }] },
          same,
          write("other\n"),
          { final: "r2={{result 2}} | r4={{result 4}} | r5={{result 5}}" },
        ]),
        executionYaml("standing"),
      ].join("---\n"),
    );
    const first = await pending("standing", 1);
    const approved = await cli("alice", ["approve", first.metadata.name, "--for-execution", "--reason", "same notes are fine"]);
    expect(approved.err).toBe("");
    expect(approved.out).toContain("also for the identical calls of standing that follow");
    // The changed call (step 5) asks; steps 2 and 4 (identical to step 1) did not.
    const changed = await pending("standing", 5);
    expect((await approvals("standing")).map((a) => a.spec.step)).toEqual([1, 5]);
    expect(changed.spec.repeatDigest).not.toBe(first.spec.repeatDigest);
    const denied = await cli("alice", ["deny", changed.metadata.name, "--reason", "not that"]);
    expect(denied.err).toBe("");
    const done = await runs.final("standing", 240_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    expect(done.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary)).toEqual([
      [1, "fs.write", "allowed", "", 0],
      [2, "fs.write", "allowed", "", 0],
      [3, "fs.read", "allowed", "", 0],
      [4, "fs.write", "allowed", "", 0],
      [5, "fs.write", "blocked by approval", "", 0],
    ]);
    const log = await workerLog("standing");
    expect(log).toContain(`r2=[approved by alice: same notes are fine (standing for this execution: ToolApproval ${first.metadata.name})]`);
    expect(log).toContain("r5=Tool call denied by alice: not that");
    const [one] = await approvals("standing");
    expect(one?.status?.decision).toMatchObject({ approved: true, decidedBy: "alice", forExecution: true });
  }, 600_000);

  it("Given on_flag and on_uncertain: a call the guard flagged and a call its judge passed narrowly (within the GuardPolicy's approval_margin, which the Agent narrowed in vain) go to a person, plain and clear calls do not", async () => {
    const judge = await readFile(join(process.cwd(), "judges/rule-judge/agent.yaml"), "utf8");
    // The Agent narrows its margin to 0.01; the namespace's GuardPolicy keeps it at least 0.1 (an Agent cannot loosen it).
    const unsure = parse(
      workerYaml("unsure", [write("close call\n"), { final: "r1={{result 1}}" }], { approval: "on_uncertain", approval_margin: 0.01 }),
    ) as {
      spec: { execution: Record<string, unknown> };
    };
    // The rule judge scores such a write 0.80: within the policy's approval_margin 0.1 of min_score 0.75.
    unsure.spec.execution.tool_validation = [{ type: "semantic", judge_agent: "rule-judge", min_score: 0.75, min_confidence: 0.5 }];
    await runs.apply(
      [
        judge,
        stringify({
          apiVersion: "100monkeys.ai/v1",
          kind: "GuardPolicy",
          metadata: { name: "flag-marked-notes" },
          spec: {
            adaptive_rules: [{ name: "marked", match_field: "args", pattern: "FLAGME", action: "flag", reason: "marked notes" }],
            approval_margin: { "fs.write": 0.1 },
          },
        }),
        workerYaml("flagged", [write("plain\n"), write("FLAGME\n"), { final: "r1={{result 1}} | r2={{result 2}}" }], {
          approval: "on_flag",
        }),
        executionYaml("flagged"),
        stringify(unsure),
        executionYaml("unsure"),
      ].join("---\n"),
    );
    // The API server refuses a bound outside 0..1 (the CRD's schema).
    await expect(
      runs.apply(
        stringify({
          apiVersion: "100monkeys.ai/v1",
          kind: "GuardPolicy",
          metadata: { name: "wide" },
          spec: { approval_margin: { "*": 1.5 } },
        }),
      ),
    ).rejects.toThrow(/spec\.approval_margin\S*: Invalid value: 1\.5: .*less than or equal to 1/);
    const flagged = await pending("flagged", 2);
    expect(flagged.spec.trigger).toBe("on_flag");
    // The guard names the flag rule that matched (adaptive rules' flags are their names).
    expect(flagged.spec.reason).toContain("the guard flagged: marked");
    expect((await approvals("flagged")).map((a) => a.spec.step)).toEqual([2]);
    expect((await cli("alice", ["approve", flagged.metadata.name])).err).toBe("");
    const close = await pending("unsure", 1);
    expect(close.spec.trigger).toBe("on_uncertain");
    expect(close.spec.reason).toContain("judge rule-judge's score 0.80 is within 0.10 of its min_score 0.75");
    expect(close.spec.judges?.[0]).toMatchObject({ judge: "rule-judge", passed: true });
    expect((await cli("alice", ["deny", close.metadata.name, "--reason", "too close to call"])).err).toBe("");
    const [f, u] = await Promise.all([runs.final("flagged", 240_000), runs.final("unsure", 240_000)]);
    expect(f.status?.phase, f.status?.message).toBe("Succeeded");
    expect(u.status?.phase, u.status?.message).toBe("Succeeded");
    expect(await workerLog("flagged")).toMatch(/r1=[^|]*\| r2=\[approved by alice\]/);
    expect(await workerLog("unsure")).toContain("r1=Tool call denied by alice: too close to call");
  }, 600_000);

  it("Given a call waiting for a person, cancelling its Execution ends the wait at once (Withdrawn, long before the deadline); nobody can decide it afterwards", async () => {
    await runs.apply([workerYaml("cancelled", [write("never\n"), { final: "r1={{result 1}}" }]), executionYaml("cancelled")].join("---\n"));
    const waiting = await pending("cancelled", 1);
    const cancelledAt = Date.now();
    const annotated = await cluster.kubectl(["annotate", "execution", "cancelled", "-n", runs.namespace, "gavel.dev/cancel=test"]);
    expect(annotated.code, annotated.stderr).toBe(0);
    const withdrawn = await eventually(
      async () => (await approvals("cancelled")).find((a) => a.status?.phase === "Withdrawn"),
      120_000,
      "the ToolApproval Withdrawn",
    );
    // The deadline (the default 5 minutes) was not what ended it.
    expect(Date.parse(waiting.spec.deadline)).toBeGreaterThan(Date.now() + 60_000);
    expect(withdrawn.status?.message).toMatch(/^the run (was cancelled|ended \(Cancelled\))$/);
    expect(withdrawn.status?.decision).toBeUndefined();
    console.log(`cancelled: the approval was Withdrawn ${Date.now() - cancelledAt} ms after the cancel annotation`);
    const done = await runs.final("cancelled", 120_000);
    expect(done.status?.phase).toBe("Cancelled");
    const late = await decisionPatch("alice", withdrawn.metadata.name, {
      approved: true,
      decidedBy: "alice",
      digest: withdrawn.spec.digest,
    });
    expect(late.stderr).toContain("the approval already ended: Withdrawn");
    expect(await reasons("cancelled")).toContain("ToolCallApprovalWithdrawn");
  }, 600_000);
});
