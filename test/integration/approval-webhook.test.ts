// The approval webhook against a real local HTTP server: a pending ToolApproval is POSTed as
// JSON (its name, the call's tool and argument key paths, never their values), retried with
// backoff while the receiver fails, given up at the approval's deadline, and announce() never
// waits for the receiver, however slow it is; signed with a secret file, each POST verifies with
// the reference Standard Webhooks verifier (a rotated file counts at the next one, a missing one
// sends nothing unsigned); and `gavel controller --approval-webhook-url --approval-webhook-secret-file`
// (two gate replicas, a real kube-apiserver and nats-server) announces a call that waits for a person, signed.
import { mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolApproval } from "../../src/api/types.js";
import { ApprovalWebhook, type ApprovalAnnouncement } from "../../src/controller/approval-webhook.js";
import { eventually } from "../harness/eventually.js";
import { executionYaml } from "../harness/example-worker.js";
import { freePort } from "../harness/nats.js";
import { gavel } from "../harness/cli.js";
import { gateCluster } from "./cluster-gate-fixture.js";

const SECRET = "sk-live-do-not-leak-7731";
// The controllers are started (by the fixture's beforeAll) with the receiver's URL, before it listens.
const HOOK_PORT = await freePort();
/** Standard Webhooks secrets ("whsec_" and base64), in files as a mounted Secret's key is. */
const secretOf = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString("base64")}`;
const SECRETS = mkdtempSync(join(tmpdir(), "gavel-hook-secret-"));
const SECRET_FILE = join(SECRETS, "secret");
writeFileSync(SECRET_FILE, `${secretOf(1)}\n`);

function approval(name: string, deadlineInMs = 60_000): ToolApproval {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "ToolApproval",
    metadata: { name, namespace: "team", uid: `uid-${name}` },
    spec: {
      execution: "ex",
      executionUID: "u-1",
      toolCallId: "c-1",
      iteration: 1,
      step: 3,
      tool: "http.post",
      arguments: { url: "https://api.example.com", headers: { authorization: `Bearer ${SECRET}` } },
      digest: "sha256:abc",
      repeatDigest: "sha256:def",
      trigger: "always",
      reason: "approved by the guard",
      guardFindings: ["flagged: watch_http"],
      judges: [{ judge: "sec", passed: true, score: 0.9, confidence: 1, reasoning: `it sends ${SECRET}` }],
      deadline: new Date(Date.now() + deadlineInMs).toISOString(),
      onTimeout: "deny",
    },
  };
}

describe("approval webhook (a real local HTTP server)", () => {
  let server: Server;
  let url: string;
  const received: { body: ApprovalAnnouncement; raw: string; headers: IncomingMessage["headers"] }[] = [];
  /** How the receiver answers the next requests: a status, or "hang" (never answers). */
  const plan: (number | "hang")[] = [];
  let requests = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests++;
      let raw = "";
      req.on("data", (d: Buffer) => (raw += d.toString()));
      req.on("end", () => {
        const next = plan.shift() ?? 204;
        if (next === "hang") return;
        if (next < 300) received.push({ body: JSON.parse(raw) as ApprovalAnnouncement, raw, headers: req.headers });
        res.writeHead(next).end();
      });
    });
    await new Promise<void>((r) => server.listen(HOOK_PORT, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await rm(SECRETS, { recursive: true, force: true });
  });

  it("POSTs the pending approval once delivered, after retrying two failures; no argument value, no judge reasoning", async () => {
    received.length = 0;
    plan.push(500, 503);
    const hook = new ApprovalWebhook({ url, backoff: { initialMs: 20, maxMs: 50 } });
    hook.announce(approval("ex-i1-s3-a1"));
    const got = await eventually(() => received[0], 5000, "the announcement");
    expect(hook.stats).toMatchObject({ delivered: 1, attempts: 3, failed: 0 });
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["x-gavel-delivery"]).toBe("uid-ex-i1-s3-a1");
    expect(got.body).toMatchObject({
      type: "toolcall.approval.pending",
      approval: "ex-i1-s3-a1",
      namespace: "team",
      execution: "ex",
      tool: "http.post",
      argumentKeys: ["headers", "headers.authorization", "url"],
      trigger: "always",
      judges: [{ judge: "sec", passed: true, score: 0.9 }],
      decide: "gavel approve|deny ex-i1-s3-a1 -n team",
    });
    expect(got.raw).not.toContain(SECRET);
    expect(got.raw).not.toContain("api.example.com");
    await hook.stop();
  });

  it("never waits for the receiver: a hanging one costs announce() nothing; it gives up at the approval's deadline", async () => {
    received.length = 0;
    plan.push("hang", "hang", "hang", "hang", "hang", "hang");
    const hook = new ApprovalWebhook({ url, timeoutMs: 100, backoff: { initialMs: 50, maxMs: 100 } });
    const before = requests;
    hook.announce(approval("ex-i1-s4-a2", 600));
    // announce() returned before its first request reached the receiver: it does not wait on it.
    expect(requests).toBe(before);
    await eventually(() => (hook.stats.failed === 1 ? true : undefined), 5000, "giving up");
    expect(hook.stats.delivered).toBe(0);
    expect(hook.stats.attempts).toBeGreaterThan(1);
    plan.length = 0;
    await hook.stop();
  });

  it("signs each POST as Standard Webhooks does when given a secret file: the reference verifier accepts it; a rotated file counts at the next POST; without a readable secret nothing is sent", async () => {
    const file = join(SECRETS, "rotating");
    writeFileSync(file, secretOf(2));
    received.length = 0;
    const hook = new ApprovalWebhook({ url, secretFile: file, backoff: { initialMs: 20, maxMs: 50 } });
    hook.announce(approval("ex-i1-s5-a3"));
    const first = await eventually(() => received[0], 5000, "the signed announcement");
    const headers = first.headers as Record<string, string>;
    expect(new Webhook(secretOf(2)).verify(first.raw, headers)).toMatchObject({ approval: "ex-i1-s5-a3" });
    expect(headers["webhook-id"]).toBe("uid-ex-i1-s5-a3");
    expect(Math.abs(Number(headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(10);
    expect(() => new Webhook(secretOf(3)).verify(first.raw, headers)).toThrow("No matching signature found");
    // The Secret rotated (the kubelet rewrites the mounted file): the next POST is signed with the new one.
    writeFileSync(file, secretOf(3));
    hook.announce(approval("ex-i1-s6-a4"));
    const second = await eventually(() => received[1], 5000, "the announcement after the rotation");
    expect(new Webhook(secretOf(3)).verify(second.raw, second.headers as Record<string, string>)).toMatchObject({
      approval: "ex-i1-s6-a4",
    });
    // The file gone: the announcement is not sent unsigned; it is retried, then given up at the deadline.
    await rm(file);
    const before = requests;
    hook.announce(approval("ex-i1-s7-a5", 500));
    await eventually(() => (hook.stats.failed === 1 ? true : undefined), 5000, "giving up");
    expect(requests).toBe(before);
    await hook.stop();
    // gavel controller refuses to start with a secret it cannot use, naming the flag and the file.
    const bad = join(SECRETS, "bad");
    writeFileSync(bad, "hunter2");
    const r = await gavel(["controller", "--approval-webhook-url", url, "--approval-webhook-secret-file", bad]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      `--approval-webhook-secret-file: approval webhook secret ${bad}: an approval webhook secret is "whsec_" followed by base64`,
    );
  });

  describe("gavel controller --approval-webhook-url --approval-webhook-secret-file", () => {
    const g = gateCluster("approval-hook", {
      controllerArgs: ["--approval-webhook-url", `http://127.0.0.1:${HOOK_PORT}/hook`, "--approval-webhook-secret-file", SECRET_FILE],
    });

    it("announces a call that waits for a person: the ToolApproval's name, the tool, no argument value", async () => {
      received.length = 0;
      const agent = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: {name: asker}
spec:
  runtime: {image: gavel/agent:dev}
  tools:
    - {name: fs.write, approval: always, approval_timeout: 30s}
  execution: {mode: one-shot}
`;
      expect(
        (await g.cp.kubectl(["apply", "-n", g.ns, "-f", "-"], { stdin: agent + "---" + executionYaml("asked-1", "asker") })).code,
      ).toBe(0);
      await g.eventually(async () => {
        const ex = await g.execution(g.ns, "asked-1");
        if (ex.status?.phase !== "Running") throw new Error(`phase ${ex.status?.phase ?? "none"}`);
        return ex;
      });
      const worker = await g.asWorker(g.ns, "asked-1");
      const args = { path: "/workspace/.env", content: `TOKEN=${SECRET}` };
      // Left waiting: the suite ends before anybody decides (its ToolApproval goes with the control plane).
      void worker
        .propose({ namespace: g.ns, execution: "asked-1", iteration: 1, step: 1, toolCallId: "i1-s1-w", tool: "fs.write", args })
        .catch(() => undefined);
      const got = await g.eventually(
        () => Promise.resolve(received.find((r) => r.body.execution === "asked-1")),
        30_000,
        "the announcement",
      );
      expect(got.body).toMatchObject({
        namespace: g.ns,
        tool: "fs.write",
        trigger: "always",
        argumentKeys: ["content", "path"],
        iteration: 1,
        step: 1,
      });
      expect(got.body.approval).toMatch(/^asked-1-i1-s1-a/);
      // The announcement names the ToolApproval that exists and waits.
      const ta = (await g.api.getNamespacedCustomObject({
        group: "100monkeys.ai",
        version: "v1",
        namespace: g.ns,
        plural: "toolapprovals",
        name: got.body.approval,
      })) as ToolApproval;
      expect(ta.spec.digest).toBe(got.body.digest);
      expect(got.raw).not.toContain(SECRET);
      expect(got.raw).not.toContain(".env");
      expect(received.filter((r) => r.body.execution === "asked-1")).toHaveLength(1);
      // Signed by the controller with the mounted secret.
      expect(new Webhook(secretOf(1)).verify(got.raw, got.headers as Record<string, string>)).toMatchObject({
        approval: got.body.approval,
      });
    }, 120_000);
  });
});
