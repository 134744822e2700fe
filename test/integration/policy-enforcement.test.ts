// Applied means enforced (issue 24 item 4, ADR 0074), with two `gavel controller` replicas as
// real processes on a real kube-apiserver and NATS: each replica reports in a GuardPolicy's
// status.replicas the generation its guard took in; an Agent the policy covers is Ready only
// while every live replica reports the policy's generation. One replica is frozen (SIGSTOP)
// across an update: the Agent turns Ready=False naming it, and Ready again once it catches up.
// Killed (SIGKILL), its Lease expires and its report is dropped.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { eventually } from "../harness/eventually.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { REPO_DIR } from "../harness/paths.js";

const agent = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: writer
spec:
  task:
    instruction: Write a summary.
`;

const policy = (reason: string) => `
apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata:
  name: team-policy
spec:
  revoked_tools:
    - tool: net.fetch
      reason: ${reason}
`;

interface Entry {
  name: string;
  observedGeneration: number;
  enforcedGeneration?: number;
}

describe("GuardPolicy enforcement reported per replica (two controller processes)", () => {
  let cp: ControlPlane;
  let nats: NatsServer;
  let ns = "";
  const procs = new Map<string, ChildProcess>();
  const logs = new Map<string, string>();

  function startReplica(name: string): void {
    const proc = spawn(
      join(REPO_DIR, "bin", "gavel"),
      ["controller", "--kubeconfig", cp.kubeconfigPath, "-n", ns, "--controller-namespace", ns, "--nats", `nats://127.0.0.1:${nats.port}`],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, GAVEL_POD_NAME: name } },
    );
    logs.set(name, "");
    proc.stderr?.on("data", (b: Buffer) => logs.set(name, (logs.get(name) ?? "") + b.toString()));
    procs.set(name, proc);
  }

  const logTail = () => [...logs].map(([n, l]) => `${n}: ${l.slice(-1500)}`).join("\n");

  async function status(): Promise<{ generation: number; replicas: Entry[] }> {
    const r = await cp.kubectl(["get", "guardpolicy", "team-policy", "-n", ns, "-o", "json"]);
    if (r.code !== 0) throw new Error(r.stderr);
    const obj = JSON.parse(r.stdout) as { metadata: { generation: number }; status?: { replicas?: Entry[] } };
    return { generation: obj.metadata.generation, replicas: obj.status?.replicas ?? [] };
  }

  async function ready(): Promise<{ status: string; reason: string; message: string }> {
    const r = await cp.kubectl(["get", "agent", "writer", "-n", ns, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")]}']);
    if (r.code !== 0 || r.stdout.trim() === "") throw new Error(`no Ready condition yet: ${r.stderr}`);
    return JSON.parse(r.stdout) as { status: string; reason: string; message: string };
  }

  const reported = (want: Record<string, number>) =>
    eventually(
      async () => {
        const s = await status();
        const got = Object.fromEntries(s.replicas.map((e) => [e.name, e.observedGeneration]));
        return JSON.stringify(got) === JSON.stringify(want) ? s : undefined;
      },
      90_000,
      `status.replicas ${JSON.stringify(want)} (log: ${logTail()})`,
    );

  beforeAll(async () => {
    [cp, nats] = await Promise.all([startControlPlane(), startNats()]);
    ns = await cp.createNamespace("enforce");
    startReplica("replica-a");
    startReplica("replica-b");
  });
  afterAll(async () => {
    for (const p of procs.values()) {
      if (p.exitCode === null) {
        p.kill("SIGCONT");
        p.kill("SIGKILL");
      }
    }
    await Promise.all([cp?.stop(), nats?.stop()]);
  });

  it("each replica reports the generation it took in; the Agent is Ready once both do", async () => {
    for (const m of [policy("exfiltration risk"), agent]) {
      const r = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: m });
      expect(r.code, r.stderr).toBe(0);
    }
    const s = await reported({ "replica-a": 1, "replica-b": 1 });
    expect(s.replicas).toEqual([
      { name: "replica-a", observedGeneration: 1, enforcedGeneration: 1 },
      { name: "replica-b", observedGeneration: 1, enforcedGeneration: 1 },
    ]);
    await eventually(async () => ((await ready()).status === "True" ? true : undefined), 60_000, "Agent writer Ready=True");
    // Each replica's Lease, labelled with the group, in the controller's namespace.
    const leases = await cp.kubectl(["get", "leases", "-n", ns, "-l", "gavel.dev/replica-of=gavel-controller", "-o", "name"]);
    expect(leases.stdout.trim().split("\n").sort()).toEqual([
      "lease.coordination.k8s.io/gavel-controller-replica-a",
      "lease.coordination.k8s.io/gavel-controller-replica-b",
    ]);
  });

  it("a replica that has not taken in a new generation keeps the Agent not Ready, naming it; caught up, Ready again", async () => {
    procs.get("replica-b")?.kill("SIGSTOP");
    const r = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: policy("exfiltration risk, generation 2") });
    expect(r.code, r.stderr).toBe(0);
    await reported({ "replica-a": 2, "replica-b": 1 });
    const waiting = await eventually(
      async () => {
        const c = await ready();
        return c.reason === "PolicyNotEnforced" ? c : undefined;
      },
      60_000,
      "Agent writer Ready=False PolicyNotEnforced",
    );
    expect(waiting.status).toBe("False");
    expect(waiting.message).toBe(`GuardPolicy ${ns}/team-policy generation 2 is not yet enforced by replica-b (at generation 1)`);

    procs.get("replica-b")?.kill("SIGCONT");
    await reported({ "replica-a": 2, "replica-b": 2 });
    await eventually(async () => ((await ready()).status === "True" ? true : undefined), 60_000, "Agent writer Ready=True again");
  });

  it("a replica killed outright: once its Lease expires its report is dropped and the others no longer wait for it", async () => {
    procs.get("replica-b")?.kill("SIGKILL");
    const r = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: policy("exfiltration risk, generation 3") });
    expect(r.code, r.stderr).toBe(0);
    // The dead replica is waited for until its Lease (30 s) runs out; then only replica-a reports.
    await reported({ "replica-a": 3, "replica-b": 2 });
    const waiting = await eventually(
      async () => {
        const c = await ready();
        return c.reason === "PolicyNotEnforced" ? c : undefined;
      },
      30_000,
      "Agent writer waits for the killed replica",
    );
    expect(waiting.message).toContain("replica-b (at generation 2)");
    await reported({ "replica-a": 3 });
    await eventually(
      async () => ((await ready()).status === "True" ? true : undefined),
      60_000,
      "Agent writer Ready=True without replica-b",
    );
  }, 120_000);

  it("a replica stopped with SIGTERM deletes its Lease on the way out", async () => {
    const a = procs.get("replica-a");
    const exited = new Promise((resolve) => a?.once("exit", resolve));
    a?.kill("SIGTERM");
    await exited;
    const leases = await cp.kubectl(["get", "leases", "-n", ns, "-l", "gavel.dev/replica-of=gavel-controller", "-o", "name"]);
    expect(leases.stdout).not.toContain("replica-a");
  });
});
