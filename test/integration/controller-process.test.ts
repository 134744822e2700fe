// `gavel controller` as a real process against the real kube-apiserver: it writes the Agent
// Ready condition and hot-reloads GuardPolicies (status written), and stops on SIGTERM.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { REPO_DIR } from "../harness/paths.js";
import { eventually } from "../harness/eventually.js";

const worker = (judge: string) => `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: writer
spec:
  task:
    instruction: Write a summary.
  execution:
    mode: iterative
    validation:
      - type: semantic
        judge_agent: ${judge}
        criteria: Is the summary faithful?
`;

const judge = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: summary-judge
  labels:
    role: judge
spec:
  task:
    instruction: Judge the summary.
  execution:
    mode: one-shot
`;

const policy = `
apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata:
  name: team-policy
spec:
  revoked_tools:
    - tool: net.fetch
      reason: exfiltration risk
`;

describe("gavel controller (real process, real kube-apiserver)", () => {
  let cp: ControlPlane;
  let ns: string;
  let proc: ChildProcess | undefined;
  let stderr = "";

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace("ctl");
    proc = spawn(
      join(REPO_DIR, "bin", "gavel"),
      ["controller", "--kubeconfig", cp.kubeconfigPath, "-n", ns, "--controller-namespace", ns],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    proc.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
  });
  afterAll(async () => {
    if (proc && proc.exitCode === null) proc.kill("SIGKILL");
    await cp?.stop();
  });

  async function ready(kind: string, name: string): Promise<{ status: string; reason: string; message: string }> {
    const r = await cp.kubectl(["get", kind, name, "-n", ns, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")]}']);
    if (r.code !== 0 || r.stdout.trim() === "") throw new Error(`no Ready condition on ${kind}/${name} yet: ${r.stderr}`);
    return JSON.parse(r.stdout) as { status: string; reason: string; message: string };
  }

  it("marks an Agent whose judge is missing Ready=False, and Ready=True once the judge exists", async () => {
    expect((await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], { stdin: worker("summary-judge") })).code).toBe(0);
    const missing = await eventually(async () => {
      const c = await ready("agent", "writer");
      if (c.status !== "False") throw new Error(`still ${c.status}`);
      return c;
    });
    expect(missing.reason).toBe("JudgeNotFound");
    expect(missing.message).toContain("summary-judge");

    expect((await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], { stdin: judge })).code).toBe(0);
    await eventually(async () => {
      const c = await ready("agent", "writer");
      if (c.status !== "True") throw new Error(`still ${c.status}: ${c.message}`);
      return true;
    });
  });

  it("compiles a GuardPolicy it watches and reports Ready=True in its status", async () => {
    expect((await cp.kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], { stdin: policy })).code).toBe(0);
    const c = await eventually(async () => {
      const r = await ready("guardpolicy", "team-policy");
      if (r.status !== "True") throw new Error(`still ${r.status}`);
      return r;
    });
    expect(c.status).toBe("True");
  });

  it("stops cleanly on SIGTERM", async () => {
    const exited = new Promise<number | null>((resolve) => proc?.once("exit", (code) => resolve(code)));
    proc?.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toContain("controllers started");
  });
});
