// The per-Execution credential objects: the Secret is the Execution's, the worker pod mounts
// it read-only and points GAVEL_NATS_CREDS_FILE at it, and the JWT ends at the deadline.
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { parseCreds, decodeJwt, createTrust, issueWorkerCredentials } from "../transport/credentials.js";
import { podFor, WORKER_CREDS_DIR } from "../runtime/kubernetes/pod-workloads.js";
import { credentialExpiry, credentialsSecretName, workerCredentialsSecret } from "./execution-credentials.js";
import { EXECUTION_INSTANCE, judgeSpec, placementOf, workspaceMounts } from "./execution-pods.js";
import { ownerMarks, workerWorkload, type WorkerOptions, type WorkerRun } from "../children/workloads.js";
import { runLimits } from "../engine/durations.js";
import { agentPlan } from "../engine/outer-loop.js";

/** Iteration N's worker as the reconciler builds it: the workspace claims read-write. */
function workerOf(ex: Execution, agent: Agent, run: WorkerRun, opts: WorkerOptions) {
  return workerWorkload(ex, agent, run, workspaceMounts(ex.metadata.name, agent, false), opts);
}

const ex: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "demo", namespace: "team", uid: "uid-1" },
  spec: { agentRef: { name: "w" } },
};
const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "w" },
  spec: { runtime: { image: "gavel/agent:dev" }, tools: ["cmd.run"] },
};
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "j", labels: { role: "judge" } },
  spec: { runtime: { image: "gavel/rule-judge:dev" } },
};

describe("execution credentials", () => {
  it("names the Secret after the Execution and its run (uid), within 253 characters", () => {
    expect(credentialsSecretName("demo", "9a85d947-a3a3-4058-ae5b-d8387fe99846")).toBe("demo-nats-9a85d947");
    // Created again under the same name: another Secret, never the old run's (revoked) one.
    expect(credentialsSecretName("demo", "38dff5fe-81c3-46da-bac4-a0734711d93b")).toBe("demo-nats-38dff5fe");
    const long = credentialsSecretName("x".repeat(253), "9a85d947-a3a3");
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long).toMatch(/^x+-[0-9a-f]{8}-nats-9a85d947$/);
    expect(credentialsSecretName("y".repeat(253), "9a85d947-a3a3")).not.toBe(long.replace(/x/g, "y"));
  });

  it("keeps the credential in an immutable Secret owned by the Execution", () => {
    const c = issueWorkerCredentials(createTrust(), "team", "demo");
    const s = workerCredentialsSecret(ex, c.creds, c.publicKey, 2_000_000_000);
    expect(s.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Execution", name: "demo", uid: "uid-1", controller: true }),
    ]);
    expect(s.immutable).toBe(true);
    expect(parseCreds(s.stringData?.["nats.creds"] ?? "").jwt).toBe(c.jwt);
    expect(s.metadata?.annotations?.["gavel.dev/nats-user"]).toBe(c.publicKey);
  });

  it("mounts the Secret read-only into the worker pod and sets GAVEL_NATS_CREDS_FILE; judges get nothing", () => {
    const pod = podFor(
      workerOf(ex, agent, { name: "demo-i1", iteration: 1, timeoutSeconds: 60 }, { natsUrl: "nats://n:4222" }),
      { ...placementOf(ownerMarks(ex), "apart"), credentialSecret: "demo-nats" },
      { instance: EXECUTION_INSTANCE },
    );
    const spec = pod.spec;
    expect(spec?.volumes).toContainEqual({
      name: "nats-credentials",
      secret: { secretName: "demo-nats", defaultMode: 0o444, items: [{ key: "nats.creds", path: "nats.creds" }] },
    });
    const main = spec?.containers[0];
    expect(main?.volumeMounts).toContainEqual({ name: "nats-credentials", mountPath: WORKER_CREDS_DIR, readOnly: true });
    expect(main?.env).toContainEqual({ name: "GAVEL_NATS_CREDS_FILE", value: `${WORKER_CREDS_DIR}/nats.creds` });
    expect(main?.env).toContainEqual({ name: "GAVEL_NATS_URL", value: "nats://n:4222" });
    expect(spec?.automountServiceAccountToken).toBe(false);

    const child: Execution = {
      ...ex,
      metadata: { name: "demo-i1-v1-j", namespace: "team", uid: "uid-2" },
      spec: {
        agentRef: { name: "j" },
        parent: { name: "demo", uid: "uid-1", purpose: "validation", iteration: 1, validatorIndex: 0, depth: 1 },
      },
    };
    const js = judgeSpec(child, judge, [], {});
    if (typeof js === "string") throw new Error(js);
    const jp = podFor(js.spec, js.place, { instance: EXECUTION_INSTANCE });
    expect(JSON.stringify(jp)).not.toMatch(/NATS|nats/);
  });

  it("expires at the Execution's deadline, or at the longest run the engine's deadlines allow", () => {
    const start = 1_700_000_000_000;
    const timed: Execution = { ...ex, spec: { ...ex.spec, timeoutSeconds: 600 } };
    expect(credentialExpiry(agentPlan(agent, new Map(), runLimits(timed, agent)), start)).toBe(1_700_000_600);
    // Default: 10 iterations of (300 s + 30 s slack + one semantic judge of 300 s + 10 s), plus 10 min.
    const judged: Agent = { ...agent, spec: { ...agent.spec, execution: { validation: [{ type: "semantic", judge_agent: "j" }] } } };
    expect(credentialExpiry(agentPlan(judged, new Map([["j", judge]]), runLimits(ex, judged)), start)).toBe(1_700_000_000 + 10 * 640 + 600);
    const c = issueWorkerCredentials(createTrust(), "team", "demo", {
      expiresAt: credentialExpiry(agentPlan(agent, new Map(), runLimits(timed, agent)), start),
    });
    expect(decodeJwt(c.jwt).exp).toBe(1_700_000_600);
  });
});
