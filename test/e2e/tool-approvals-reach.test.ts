// The escalation ladder seen from outside the run (issue 25, ADR 0067, ADR 0076), on the
// chart-installed controller: its approval webhook announces a pending ToolApproval to the e2e
// run's receiver on the node (approvals.webhookUrl, set by every install of the fixture), and
// `gavel replay` reads a finished run's calls back from the chart's own store (GAVEL_CALLS on
// its NATS) and puts them through a candidate GuardPolicy without calling anything.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { GROUP, VERSION, type ToolApproval } from "../../src/api/types.js";
import type { ApprovalAnnouncement } from "../../src/controller/approval-webhook.js";
import type { ReplayedCall } from "../../src/gate/replay.js";
import { executionYaml, workerYaml, write } from "../harness/approval-runs.js";
import { gavel } from "../harness/cli.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { chartNats, type ChartNats } from "../harness/decision-records.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { E2E_APPROVAL_WEBHOOK_SECRET_ENV, webhookDeliveries } from "../harness/webhook-receiver.js";

describe("approvals and recorded calls seen from outside the run: the webhook and gavel replay (chart-installed controller)", () => {
  let cluster: Cluster;
  let runs: Executions;
  let dir: string;
  let nats: ChartNats | undefined;

  beforeAll(async () => {
    cluster = await useCluster();
    const controller = new ChartController(cluster);
    await controller.ready();
    const ns = await cluster.createNamespace("e2e-approval-reach");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${(await controller.log()).slice(-6000)}`);
    dir = await mkdtemp(join(tmpdir(), "gavel-reach-"));
  }, 300_000);

  afterAll(async () => {
    await nats?.close();
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** `gavel ARGV -n NS` as the cluster's admin. */
  const admin = (argv: string[]) => gavel([...argv, "-n", runs.namespace], { env: { KUBECONFIG: cluster.kubeconfigPath } });

  it("Given the chart's approvals.webhookUrl (the run's receiver on the node), a pending approval is POSTed there once, signed, with its name and a summary and no argument value", async () => {
    const secret = "hunter2-never-announced";
    await runs.apply(
      [workerYaml("announced", [write(`${secret}\n`), { final: "r1={{result 1}}" }]), executionYaml("announced")].join("---\n"),
    );
    const custom = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    const waiting = await eventually(
      async () => {
        const list = (await custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: runs.namespace,
          plural: "toolapprovals",
        })) as { items: ToolApproval[] };
        return list.items.find((a) => a.spec.execution === "announced" && a.status?.phase === "Pending");
      },
      60_000,
      "the pending ToolApproval of announced",
    );
    const name = waiting.metadata.name;
    const mine = async () => (await webhookDeliveries()).filter((d) => (JSON.parse(d.body) as ApprovalAnnouncement).approval === name);
    const [delivery] = await eventually(
      async () => ((await mine()).length > 0 ? mine() : undefined),
      30_000,
      `the announcement of ${name}`,
    );
    const body = JSON.parse(delivery?.body ?? "{}") as ApprovalAnnouncement;
    expect(body).toMatchObject({
      type: "toolcall.approval.pending",
      approval: name,
      namespace: runs.namespace,
      execution: "announced",
      iteration: 1,
      step: 1,
      tool: "fs.write",
      trigger: "always",
      digest: waiting.spec.digest,
      deadline: waiting.spec.deadline,
      decide: `gavel approve|deny ${name} -n ${runs.namespace}`,
    });
    expect([...body.argumentKeys].sort()).toEqual(["content", "path"]);
    expect(body.summary).toBe(
      `${runs.namespace}/announced iteration 1 step 1: fs.write waits for a person (always) until ${waiting.spec.deadline}, then deny`,
    );
    // The call's values stay on the cluster: neither the content nor the path is announced.
    expect(delivery?.body).not.toContain(secret);
    expect(delivery?.body).not.toContain("/workspace");
    expect(delivery?.headers["x-gavel-delivery"]).toBe(waiting.metadata.uid);
    // Signed with the Secret the chart names (Standard Webhooks, ADR 0082), verified by the reference verifier.
    const signing = new Webhook(process.env[E2E_APPROVAL_WEBHOOK_SECRET_ENV] ?? "");
    expect(signing.verify(delivery?.body ?? "", delivery?.headers ?? {})).toEqual(body);
    expect(delivery?.headers["webhook-id"]).toBe(waiting.metadata.uid);
    expect((await admin(["deny", name, "--reason", "announced only"])).err).toBe("");
    expect((await runs.final("announced", 60_000)).status?.phase).toBe("Succeeded");
    // Delivered at the first attempt, so announced once.
    expect(await mine()).toHaveLength(1);
  }, 120_000);

  it("Given a finished run, gavel replay reads its calls from the chart's store: the policy in force changes nothing, a stricter one lists the calls it would deny, and no tool is called", async () => {
    const policy = (revoked: { tool: string; reason: string }[]) =>
      stringify({
        apiVersion: "100monkeys.ai/v1",
        kind: "GuardPolicy",
        metadata: { name: "replayed-notes" },
        spec: { revoked_tools: [{ tool: "shell.exec", reason: "no shells here" }, ...revoked] },
      });
    await writeFile(join(dir, "same.yaml"), policy([]));
    await writeFile(join(dir, "stricter.yaml"), policy([{ tool: "fs.write", reason: "writes frozen" }]));
    await runs.apply(
      [
        policy([]),
        workerYaml(
          "replayed",
          [write("a\n"), { tool_calls: [{ tool: "fs.read", args: { path: "/workspace/notes.md" } }] }, write("b\n"), { final: "done" }],
          { approval: "never" },
        ),
        executionYaml("replayed"),
      ].join("---\n"),
    );
    const done = await runs.final("replayed", 60_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    const recorded = done.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary);
    expect(recorded?.map((c) => c.slice(0, 3))).toEqual([
      [1, "fs.write", "allowed"],
      [2, "fs.read", "allowed"],
      [3, "fs.write", "allowed"],
    ]);

    nats = await chartNats(cluster);
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const creds = await core.readNamespacedSecret({ name: "gavel-nats-credentials", namespace: RELEASE_NAMESPACE });
    await writeFile(join(dir, "gavel.creds"), Buffer.from(creds.data?.["nats.creds"] ?? "", "base64"), { mode: 0o600 });
    const url = await nats.url();
    const watch = await nats.watchRecords(runs.namespace, "replayed");
    const replay = (file: string, ...more: string[]) =>
      admin(["replay", "replayed", "--policy", join(dir, file), "--nats", url, "--nats-creds", join(dir, "gavel.creds"), ...more]);
    // The call log is written just after each decision: the run's last call may land a moment after its end.
    const same = await eventually(
      async () => {
        const r = await replay("same.yaml");
        return r.out.includes("Replayed 3 ") ? r : undefined;
      },
      15_000,
      "the run's 3 calls in the call log",
    );
    expect(same.err).toBe("");
    expect(same.out).toContain(`Replayed 3 recorded calls of ${runs.namespace}/replayed`);
    expect(same.out).toContain("No decision would change.");
    const stricter = await replay("stricter.yaml");
    expect(stricter.err).toBe("");
    expect(stricter.out).toContain("2 decisions would change:");
    expect(stricter.out).toMatch(/\b1\s+fs\.write\s+allowed\s+denied by guard \(revocation\)\s+tool_revoked: writes frozen/);
    const json = await replay("stricter.yaml", "-o", "json");
    const calls = (JSON.parse(json.out) as { calls: ReplayedCall[] }).calls;
    expect(calls.filter((c) => c.changed).map((c) => [c.step, c.tool, c.replayed])).toEqual([
      [1, "fs.write", { kind: "denied", by: "guard", check: "revocation" }],
      [3, "fs.write", { kind: "denied", by: "guard", check: "revocation" }],
    ]);
    // Nothing ran: no call reached the gate (no decision stored), and the run's record is as it was.
    await new Promise((r) => setTimeout(r, 1000));
    expect(watch.records).toEqual([]);
    await watch.stop();
    expect((await runs.get("replayed"))?.status?.iterations?.[0]?.toolCalls?.recent?.map(callSummary)).toEqual(recorded);
  }, 120_000);
});
