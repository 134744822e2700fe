// An Agent's remote MCP server on the cluster, as a user runs it: a Streamable HTTP MCP server
// in a pod of the test's own namespace (test/harness/mcp-http-server.mjs, the official SDK,
// on gavel/agent:dev, which carries the SDK) that answers only with its bearer token; a Secret
// holding that token; an Agent whose spec.mcp_servers names the server by `url` and the
// Secret key by `bearer_token_secret`. The worker pod gets the token from the Secret (a
// secretKeyRef), every call goes through the controller's gate, the allowed one reaches the
// server; the token is in no Execution, Event, describe output or worker log. Then an MCP server
// image beside the worker (examples/mcp-container, ADR 0066): the official server-everything as
// a native sidecar of the worker's pod in a namespace that enforces Pod Security restricted; the
// allowed call reaches it, the denied one does not, and the server killed (SIGKILL) in the middle
// of a slow call ends that call with an error naming server and tool, the run finishing. Shared lane.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { chartRuns } from "../harness/chart-runs.js";
import { eventually, type Cluster } from "../harness/cluster.js";
import { run } from "../harness/exec.js";
import { callSummary, type Executions } from "../harness/executions.js";
import { EVERYTHING_CONTAINER, everythingPosts as POSTS, killAll } from "../harness/mcp-everything.js";
import { HARNESS_DIR, REPO_DIR } from "../harness/paths.js";
import { MAIN_CONTAINER } from "../../src/runtime/kubernetes/pod-spec.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const TOKEN = "e2e-tok-7d2a9c41f0";
const RESTRICTED = {
  allowPrivilegeEscalation: false,
  runAsNonRoot: true,
  runAsUser: 65532,
  capabilities: { drop: ["ALL"] },
  seccompProfile: { type: "RuntimeDefault" },
};

describe("MCP servers over Streamable HTTP: a remote server by url with a Secret's token, a server image beside the worker (chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let runs: Executions;

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-mcp-remote", { logTail: 6000 }));
    const server = await readFile(join(HARNESS_DIR, "mcp-http-server.mjs"), "utf8");
    const objects = [
      { apiVersion: "v1", kind: "Secret", metadata: { name: "remote-mcp" }, stringData: { token: TOKEN } },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "mcp-http-server" }, data: { "mcp-http-server.mjs": server } },
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "mcp-http", labels: { app: "mcp-http" } },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              name: "server",
              image: "gavel/agent:dev",
              imagePullPolicy: "Never",
              // Beside the image's node_modules, so the SDK resolves.
              command: ["node", "/opt/gavel/test-mcp/mcp-http-server.mjs", "0.0.0.0", "8080"],
              env: [
                { name: "MCP_TOKEN", valueFrom: { secretKeyRef: { name: "remote-mcp", key: "token" } } },
                { name: "MCP_LOG", value: "/dev/stdout" },
              ],
              ports: [{ containerPort: 8080 }],
              readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
              securityContext: RESTRICTED,
              volumeMounts: [{ name: "server", mountPath: "/opt/gavel/test-mcp" }],
            },
          ],
          volumes: [{ name: "server", configMap: { name: "mcp-http-server" } }],
        },
      },
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "mcp-http" },
        spec: { selector: { app: "mcp-http" }, ports: [{ port: 8080, targetPort: 8080 }] },
      },
    ];
    await runs.apply(objects.map((o) => stringify(o)).join("---\n"));
    await cluster.kubectlOk(["wait", "-n", runs.namespace, "--for=condition=Ready", "pod/mcp-http", "--timeout=120s"]);
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  it("the worker pod reaches the server with the Secret's token through the gate; the token is nowhere in what gavel shows", async () => {
    const url = `http://mcp-http.${runs.namespace}.svc:8080/mcp`;
    const agent = {
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "remote-tools" },
      spec: {
        runtime: {
          image: "gavel/agent:dev",
          pull_policy: "Never",
          env: [
            {
              name: "GAVEL_SCRIPT",
              value: stringify([
                { tool_calls: [{ tool: "remote.echo", args: { text: "hello" }, intent: "echo a greeting" }] },
                { tool_calls: [{ tool: "remote.echo", args: { text: "a forbidden word" }, intent: "echo a forbidden word" }] },
                { final: "remote said: {{result 1}}" },
              ]),
            },
          ],
        },
        task: { instruction: "Echo a greeting through the remote server." },
        tools: ["fs.read"],
        mcp_servers: [{ name: "remote", url, bearer_token_secret: { name: "remote-mcp", key: "token" }, timeout_seconds: 20 }],
        security: { network: { mode: "allow" }, resources: { timeout: "120s" } },
        execution: {
          mode: "one-shot",
          validation: [
            { type: "exit_code", expected: 0 },
            { type: "regex", pattern: "remote said: echo: hello", target: "stdout" },
          ],
        },
      },
    };
    const policy = {
      apiVersion: "100monkeys.ai/v1",
      kind: "GuardPolicy",
      metadata: { name: "remote-tools" },
      spec: {
        mcp_servers: [{ server: "remote", capabilities: { echo: { skip_judge: true } } }],
        adaptive_rules: [{ name: "no-forbidden", match_field: "args", pattern: "forbidden", action: "deny", reason: "no forbidden words" }],
      },
    };
    await runs.apply(
      [
        stringify(policy),
        stringify(agent),
        "apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata:\n  name: remote-run\nspec:\n  agentRef:\n    name: remote-tools\n",
      ].join("---\n"),
    );
    const done = await runs.final("remote-run", 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    const calls = done.status?.iterations?.[0]?.toolCalls?.recent ?? [];
    expect(calls.map(callSummary)).toEqual([
      [1, "remote.echo", "allowed", "", 0],
      [2, "remote.echo", "blocked by guard", "adaptive_rule", 0],
    ]);
    expect(calls.map((c) => c.server)).toEqual(["remote", "remote"]);
    // Only the allowed call reached the server (its log: one line per accepted request).
    const serverLog = await cluster.kubectlOk(["logs", "-n", runs.namespace, "mcp-http"]);
    expect(serverLog).toContain("listening 8080");
    expect(serverLog.split("\n").filter((l) => l.startsWith("tools/call"))).toEqual(["tools/call echo"]);
    expect(serverLog).not.toContain("refused");

    // The worker pod took the token from the Secret: a secretKeyRef, no literal.
    const pods = JSON.parse(
      await cluster.kubectlOk(["get", "pods", "-n", runs.namespace, "-l", "gavel.dev/role=worker", "-o", "json"]),
    ) as {
      items: { spec: { containers: { env?: { name: string; value?: string; valueFrom?: unknown }[] }[] } }[];
    };
    const env = pods.items[0]?.spec.containers[0]?.env ?? [];
    expect(env.find((e) => e.name === "GAVEL_MCP_TOKEN_0")).toEqual({
      name: "GAVEL_MCP_TOKEN_0",
      valueFrom: { secretKeyRef: { name: "remote-mcp", key: "token" } },
    });

    // The token is in nothing gavel shows or keeps.
    const described = await run(GAVEL, ["describe", "ex", "remote-run", "-n", runs.namespace], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath },
    });
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/MCP server:\s+remote/);
    const events = await cluster.kubectlOk(["get", "events", "-n", runs.namespace, "-o", "json"]);
    const workerLog = await eventually(
      async () => {
        const r = await cluster.kubectl(["logs", "-n", runs.namespace, "-l", "gavel.dev/role=worker", "--tail=-1"]);
        return r.code === 0 ? `${r.stdout}${r.stderr} ` : undefined;
      },
      30_000,
      "the worker's log",
    );
    for (const [what, text] of [
      ["the Execution", JSON.stringify(done)],
      ["gavel describe", described.stdout],
      ["the Events", events],
      ["the worker's log", workerLog],
    ] as const) {
      expect(text.includes(TOKEN), `${what} holds the token`).toBe(false);
    }
  }, 420_000);

  it("an MCP server image beside the worker (restricted namespace): the allowed call reaches it, the denied one does not; killed mid-call, the call errs naming server and tool and the run finishes", async () => {
    const ns = runs.namespace;
    await cluster.kubectlOk(["label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted"]);
    const example = (f: string) => readFile(join(REPO_DIR, "examples", "mcp-container", f), "utf8");
    await runs.apply([await example("policy.yaml"), await example("agent.yaml"), await example("execution.yaml")].join("---\n"));
    const selector = "gavel.dev/execution=mcp-container,gavel.dev/role=worker";
    const pod = await eventually(
      async () => {
        const r = await cluster.kubectl(["get", "pods", "-n", ns, "-l", selector, "-o", "jsonpath={.items[0].metadata.name}"]);
        return r.code === 0 && r.stdout !== "" ? r.stdout : undefined;
      },
      120_000,
      "the worker's pod",
    );
    const serverLog = async (previous = false) => {
      const r = await cluster.kubectl(["logs", "-n", ns, pod, "-c", EVERYTHING_CONTAINER, ...(previous ? ["--previous"] : [])]);
      return r.code === 0 ? r.stdout : "";
    };
    // The slow call is the fifth POST: the denied call in between never reached the server.
    // Counted before the kill: the worker waits on the slow call, so nothing else reaches this
    // server before it dies, and its log may be gone later (the kubelet keeps one dead instance
    // per container; the restarted sidecar's end makes it that one). It failed the final CI run at b86ceed.
    const atKill = await eventually(
      async () => {
        const n = POSTS(await serverLog());
        return n >= 5 ? n : undefined;
      },
      120_000,
      "the slow call at the server",
    );
    const killedAt = Date.now();
    // The server's end is its container's (run.sh, PID 1, exits with it), and the kernel then
    // SIGKILLs every process of the container, this exec's shell too when it is still running:
    // 137 says the kill landed as surely as 0 (it failed the final CI run at b86ceed).
    const kill = await cluster.kubectl(["exec", "-n", ns, pod, "-c", EVERYTHING_CONTAINER, "--", "sh", "-c", killAll("node")]);
    expect([0, 137], `kill the server: ${kill.stderr}`).toContain(kill.code);
    const done = await runs.final("mcp-container", 120_000);
    const killToEndMs = Date.now() - killedAt;
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");
    console.log(`server killed mid-call: the Execution was final ${killToEndMs} ms later`);
    // Long before the slow call's own 20 s and its 45 s deadline: the cut stream ended it.
    expect(killToEndMs).toBeLessThan(20_000);
    const calls = done.status?.iterations?.[0]?.toolCalls?.recent ?? [];
    expect(calls.map(callSummary)).toEqual([
      [1, "everything.echo", "allowed", "", 0],
      [2, "everything.echo", "blocked by guard", "adaptive_rule", 0],
      [3, "everything.trigger-long-running-operation", "allowed", "", 0],
    ]);
    expect(calls.map((c) => c.server)).toEqual(["everything", "everything", "everything"]);
    // The killed server had the allowed calls and nothing else; one the kubelet restarted (when the
    // pod lived long enough for it) had nothing: the worker does not call a server that failed it.
    expect(atKill).toBe(5);
    const previous = await serverLog(true);
    const current = POSTS(await serverLog());
    // The current log is the killed instance's (5: not restarted yet) or a restarted one's (0);
    // with both still there, the killed one had the 5 and the restarted one none.
    expect([0, 5]).toContain(current);
    if (previous !== "" && POSTS(previous) > 0) expect([POSTS(previous), current]).toEqual([5, 0]);

    const spec = JSON.parse(await cluster.kubectlOk(["get", "pod", "-n", ns, pod, "-o", "json"])) as {
      spec: { initContainers?: { name: string; image: string; restartPolicy?: string; args?: string[] }[] };
    };
    expect(spec.spec.initContainers?.find((c) => c.name === "mcp-everything")).toMatchObject({
      image: "gavel/mcp-everything:dev",
      restartPolicy: "Always",
      args: ["streamableHttp"],
    });
    const out = await cluster.kubectlOk(["logs", "-n", ns, pod, "-c", MAIN_CONTAINER]);
    expect(out).toContain("everything said: Echo: hello | slow operation: ");
    expect(out).toMatch(
      /slow operation: [^\n]*MCP tool everything\.trigger-long-running-operation: MCP server everything lost its connection/,
    );

    const described = await run(GAVEL, ["describe", "ex", "mcp-container", "-n", ns], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath },
    });
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(
      /step 1  everything\.echo  allowed  \S+\n\s+MCP server:\s+everything\n\s+MCP tool:\s+echo\n\s+Decided by:\s+guard\n/,
    );
    expect(described.stdout).toMatch(
      /step 2  everything\.echo  blocked by guard \(adaptive_rule\)  \S+\n\s+Why:[^\n]*\n\s+MCP server:\s+everything\n\s+MCP tool:\s+echo\n\s+Decided by:\s+guard: adaptive_rule\n/,
    );
  }, 420_000);
});
