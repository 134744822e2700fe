// An Agent's MCP server images as the worker's pod carries them (ADR 0066): native sidecars in
// spec order before the MCP endpoint, the image's entrypoint with the server's args and env,
// nothing of the worker's (volumes, variables, credential), a /tmp of their own, hardened as Pod
// Security restricted requires.
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { ownerMarks, workerProgram } from "../children/workloads.js";
import { podFor } from "../runtime/kubernetes/pod-workloads.js";
import { workspaceMounts } from "./execution-pods.js";
import { MCP_ENDPOINT_CONTAINER, mcpServerContainerNames, workerPod } from "./worker-pod.js";

const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "tools", namespace: "team" },
  spec: {
    runtime: { image: "example/worker:1", env: [{ name: "OPENAI_API_KEY", valueFrom: { secretKeyRef: { name: "llm", key: "key" } } }] },
    task: { instruction: "echo" },
    tools: ["fs.read"],
    mcp_servers: [
      { name: "files", command: ["mcp-server-filesystem", "/workspace"] },
      {
        name: "everything",
        image: "gavel/mcp-everything:dev",
        port: 3001,
        args: ["streamableHttp"],
        env: [{ name: "PORT", value: "3001" }],
      },
      { name: "second_one", image: "example/other:2", port: 3002, path: "/" },
    ],
    volumes: [{ name: "workspace", mount_path: "/workspace" }],
  },
};
const execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "t-1", namespace: "team", uid: "u-1" },
  spec: { agentRef: { name: "tools" } },
} as Execution;
const settings = { readerImage: "gavel/base:test", natsUrl: "nats://gavel-nats.gavel-system:4222", retentionSeconds: 600 };

/** The worker's pod as the reconciler assembles it (workerPod). */
function pod(a: Agent = agent) {
  const limits = { iterationSeconds: 120, maxIterations: 1 };
  const mounts = workspaceMounts(execution.metadata.name, a, false);
  const ctx = { execution, agent: a, judges: new Map(), limits, owner: ownerMarks(execution), mounts, program: workerProgram(a) };
  const run = { name: "t-1-i1", iteration: 1, timeoutSeconds: 120 };
  const { spec, place } = workerPod(ctx, run, { settings, credentialSecret: "t-1-nats" });
  return podFor(spec, place, { instance: "ex", writerUser: { uid: 1000, gid: 1000 } });
}

describe("an Agent's MCP server images in the worker's pod", () => {
  it("are native sidecars in spec order, before the MCP endpoint: the image's entrypoint, the server's args and literal env", () => {
    const p = pod({ ...agent, spec: { ...agent.spec, mcp_endpoint: { enabled: true } } });
    const init = p.spec?.initContainers ?? [];
    expect(init.map((c) => c.name)).toEqual(["mcp-everything", "mcp-second-one", MCP_ENDPOINT_CONTAINER]);
    expect(init[0]).toMatchObject({ image: "gavel/mcp-everything:dev", restartPolicy: "Always", args: ["streamableHttp"] });
    expect(init[0]?.command).toBeUndefined();
    expect(init[0]?.env).toEqual([
      { name: "HOME", value: "/tmp" },
      { name: "PORT", value: "3001" },
    ]);
    expect(init[1]?.args).toBeUndefined();
  });

  it("get nothing of the worker's: no volume, variable or NATS credential; a /tmp of their own", () => {
    const p = pod();
    const server = p.spec?.initContainers?.find((c) => c.name === "mcp-everything");
    expect(server?.volumeMounts).toEqual([{ name: "mcp-everything-tmp", mountPath: "/tmp", readOnly: false }]);
    expect(p.spec?.volumes).toContainEqual({ name: "mcp-everything-tmp", emptyDir: { sizeLimit: "64Mi" } });
    expect((server?.env ?? []).map((e) => e.name)).not.toContain("OPENAI_API_KEY");
    expect((server?.env ?? []).filter((e) => e.name.startsWith("GAVEL_"))).toEqual([]);
    expect(server?.startupProbe).toBeUndefined();
    // The worker reaches it from its own GAVEL_MCP_SERVERS entry (port and path), not from a variable of the pod.
    const servers = JSON.parse(p.spec?.containers[0]?.env?.find((e) => e.name === "GAVEL_MCP_SERVERS")?.value ?? "[]") as unknown[];
    expect(servers).toContainEqual(expect.objectContaining({ name: "everything", image: "gavel/mcp-everything:dev", port: 3001 }));
  });

  it("are hardened as Pod Security restricted requires, and open no container port", () => {
    const p = pod();
    expect(p.spec?.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(p.spec?.automountServiceAccountToken).toBe(false);
    for (const c of p.spec?.initContainers ?? []) {
      expect(c.securityContext, c.name).toMatchObject({
        allowPrivilegeEscalation: false,
        privileged: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"] },
      });
      expect(c.ports, c.name).toBeUndefined();
      expect(c.resources?.requests, c.name).toBeDefined();
    }
  });

  it("leave a pod without image servers without sidecars", () => {
    const commandOnly = { ...agent, spec: { ...agent.spec, mcp_servers: [agent.spec.mcp_servers?.[0] ?? { name: "x" }] } };
    expect(pod(commandOnly).spec?.initContainers).toBeUndefined();
  });

  it("have container names that are DNS labels, unique and fixed by spec order", () => {
    expect(
      mcpServerContainerNames([
        { name: "a_b", image: "x", port: 3001 },
        { name: "a-b", image: "y", port: 3002 },
        { name: "c", command: ["z"] },
      ]),
    ).toEqual(["mcp-a-b", "mcp-a-b-1"]);
  });
});
