// The in-pod MCP endpoint's sidecar as the worker's pod carries it: asked for by the Agent,
// started before the worker (startup probe), with the worker's identity, tools, volumes and
// credential but none of its own variables, hardened as Pod Security restricted requires.
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { workerWorkload } from "../children/workloads.js";
import { podFor, WORKER_CREDS_DIR } from "../runtime/kubernetes/pod-workloads.js";
import { MCP_ENDPOINT_CONTAINER, MCP_ENDPOINT_READY_FILE, wantsMcpEndpoint, withMcpEndpoint } from "./worker-pod.js";

const agent: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "py-worker", namespace: "team" },
  spec: {
    runtime: { image: "example/py-worker:1", env: [{ name: "OPENAI_API_KEY", valueFrom: { secretKeyRef: { name: "llm", key: "key" } } }] },
    task: { instruction: "tidy the notes" },
    tools: ["fs.read", "fs.write"],
    mcp_servers: [{ name: "files", command: ["mcp-server-filesystem", "/workspace"] }],
    mcp_endpoint: { enabled: true },
    volumes: [{ name: "workspace", mount_path: "/workspace" }],
  },
};
const execution: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "py-1", namespace: "team" },
  spec: { agentRef: { name: "py-worker" } },
} as Execution;
const mounts = [{ name: "workspace", source: "py-1-workspace", mountPath: "/workspace", readOnly: false }];
const natsUrl = "nats://gavel-nats.gavel-system:4222";

function pod(a: Agent = agent) {
  const spec = workerWorkload(execution, a, { name: "py-1-i1", iteration: 1, timeoutSeconds: 120 }, mounts, { natsUrl, now: 0 });
  const { spec: s, sidecar } = withMcpEndpoint(spec, a, "gavel/agent:9.9.9");
  return podFor(
    s,
    { namespace: "team", credentialSecret: "py-1-nats", sidecars: [sidecar] },
    { instance: "ex", writerUser: { uid: 1000, gid: 1000 } },
  );
}

describe("the in-pod MCP endpoint's sidecar", () => {
  it("is asked for by spec.mcp_endpoint.enabled, and only when a gate runs", () => {
    expect(wantsMcpEndpoint(agent, natsUrl)).toBe(true);
    expect(wantsMcpEndpoint(agent, "")).toBe(false);
    expect(wantsMcpEndpoint({ ...agent, spec: { ...agent.spec, mcp_endpoint: { enabled: false } } }, natsUrl)).toBe(false);
    expect(wantsMcpEndpoint({ ...agent, spec: { ...agent.spec, mcp_endpoint: undefined } }, natsUrl)).toBe(false);
  });

  it("is a native sidecar of gavel's agent image in endpoint mode, with the worker's identity, tools, volumes and credential", () => {
    const p = pod();
    const sidecar = p.spec?.initContainers?.find((c) => c.name === MCP_ENDPOINT_CONTAINER);
    expect(sidecar).toMatchObject({
      image: "gavel/agent:9.9.9",
      restartPolicy: "Always",
      command: ["node", "/opt/gavel/dist/src/agent/main.js"],
    });
    const env = Object.fromEntries((sidecar?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      GAVEL_ROLE: "endpoint",
      GAVEL_MCP_PORT: "8931",
      GAVEL_MCP_READY_FILE: MCP_ENDPOINT_READY_FILE,
      GAVEL_NAMESPACE: "team",
      GAVEL_EXECUTION: "py-1",
      GAVEL_ITERATION: "1",
      GAVEL_NATS_URL: natsUrl,
      GAVEL_NATS_CREDS_FILE: `${WORKER_CREDS_DIR}/nats.creds`,
    });
    expect(JSON.parse(env.GAVEL_TOOLS ?? "")).toEqual(["fs.read", "fs.write"]);
    expect(JSON.parse(env.GAVEL_MCP_SERVERS ?? "")).toEqual(agent.spec.mcp_servers);
    // The worker's own variables (its model key) and its payload are not the endpoint's.
    expect(Object.keys(env)).not.toContain("OPENAI_API_KEY");
    expect(Object.keys(env)).not.toContain("GAVEL_INPUT");
    expect(sidecar?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: "tmp", mountPath: "/tmp", readOnly: false },
        { name: "m0", mountPath: "/workspace", readOnly: false },
        { name: "nats-credentials", mountPath: WORKER_CREDS_DIR, readOnly: true },
      ]),
    );
    expect(sidecar?.startupProbe).toMatchObject({ exec: { command: ["test", "-e", MCP_ENDPOINT_READY_FILE] }, periodSeconds: 1 });
  });

  it("puts its URL in the worker's GAVEL_MCP_URL, on the pod's loopback", () => {
    const main = pod().spec?.containers[0];
    expect(main?.env).toContainEqual({ name: "GAVEL_MCP_URL", value: "http://127.0.0.1:8931/mcp" });
    const other = pod({
      ...agent,
      spec: { ...agent.spec, mcp_endpoint: { enabled: true, port: 9100, image: "example/agent-with-servers:1" } },
    });
    expect(other.spec?.containers[0]?.env).toContainEqual({ name: "GAVEL_MCP_URL", value: "http://127.0.0.1:9100/mcp" });
    expect(other.spec?.initContainers?.[0]?.image).toBe("example/agent-with-servers:1");
  });

  it("is hardened as Pod Security restricted requires of every container", () => {
    const p = pod();
    expect(p.spec?.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    for (const c of [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])]) {
      expect(c.securityContext, c.name).toMatchObject({
        allowPrivilegeEscalation: false,
        privileged: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"] },
      });
      expect(c.ports, c.name).toBeUndefined();
    }
  });
});
