// Issue 23 on the cluster, as a user runs it: gavel installed by its chart, then the manifests
// of examples/mcp-tools and the shipped rule-judge applied with kubectl. The worker pod starts
// the official MCP filesystem server (npm, in gavel/example-mcp-tools:dev, which make images
// builds) beside its runtime; every files.<tool> call is proposed to the controller's gate: the
// secret read through the server's read tool is denied under the same threat class as through
// fs.read, the write is judged by a rule-judge child Execution, the allowed read reaches the
// model (the regex validator reads it in the final answer). Shared lane: it only reads.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyExample, chartRuns } from "../harness/chart-runs.js";
import { eventually, type Cluster } from "../harness/cluster.js";
import { run } from "../harness/exec.js";
import { callSummary, type Executions } from "../harness/executions.js";
import { RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { E2E_JAEGER_QUERY_ENV, jaegerQuery, type JaegerSpan } from "../harness/jaeger.js";
import { REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const SECRET_READ = "secrets: reads files: a secret file";

describe("MCP server tools behind the cluster's gate (examples/mcp-tools, chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let runs: Executions;

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-mcp", { logTail: 6000 }));
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  it("the secret read through files.read_text_file is denied as through fs.read, the MCP write is judged by a rule-judge child, the allowed read reaches the model; kubectl get ex and gavel describe show it", async () => {
    await applyExample(cluster, runs.namespace, "mcp-tools");
    const done = await runs.final("mcp-tools", 300_000);
    expect(done.status?.phase, done.status?.message).toBe("Succeeded");

    const calls = done.status?.iterations?.[0]?.toolCalls;
    expect(calls).toMatchObject({ proposed: 5, allowed: 3, blockedByGuard: 2, blockedByJudge: 0 });
    expect(calls?.recent?.map(callSummary)).toEqual([
      [1, "fs.write", "allowed", "", 1],
      [2, "files.write_file", "allowed", "", 1],
      [3, "files.read_text_file", "blocked by guard", "destructive_pattern", 0],
      [4, "fs.read", "blocked by guard", "destructive_pattern", 0],
      // The operators' policy lets the server's reads skip the judges; the guard still ran.
      [5, "files.read_text_file", "allowed", "", 0],
    ]);
    // Each MCP call names its server in the status (a built-in's does not).
    expect(calls?.recent?.map((c) => c.server ?? "built-in")).toEqual(["built-in", "files", "files", "built-in", "files"]);
    // The same threat class through the MCP tool as through the built-in.
    expect(calls?.recent?.[2]?.reason).toContain(SECRET_READ);
    expect(calls?.recent?.[3]?.reason).toContain(SECRET_READ);
    // The allowed read's result reached the model: its final answer carries the notes, which the regex validator reads.
    expect(done.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["exit_code", true],
      ["regex", true],
    ]);
    // Names and outcomes only: no argument value or file content reaches the status.
    expect(JSON.stringify(done.status)).not.toContain("not-a-real-one");

    // The judged calls' children, the MCP write's among them: rule-judge runs owned by the Execution.
    const judged = (calls?.recent ?? []).flatMap((c) => c.judges ?? []).sort();
    expect(judged).toHaveLength(2);
    const kids = await runs.childrenOf("mcp-tools");
    expect(kids.map((k) => k.metadata.name).sort()).toEqual(judged);
    const mcpJudge = kids.find((k) => k.metadata.name === calls?.recent?.[1]?.judges?.[0]);
    expect(mcpJudge?.spec.parent).toMatchObject({ name: "mcp-tools", purpose: "tool_validation" });
    expect(mcpJudge?.status).toMatchObject({ phase: "Succeeded", verdict: { score: 0.8 } });
    // The judge's payload carries the MCP tool's descriptor as listed (ADR 0051), never the secret.
    const payload = mcpJudge?.spec.input as
      | {
          proposed_tool_call?: {
            tool?: string;
            mcp?: { server?: string; tool?: string; description?: string; input_schema?: unknown; pinned?: boolean };
          };
        }
      | undefined;
    expect(payload?.proposed_tool_call?.tool).toBe("files.write_file");
    expect(payload?.proposed_tool_call?.mcp).toMatchObject({
      server: "files",
      tool: "write_file",
      description: expect.any(String) as unknown,
      input_schema: expect.objectContaining({ type: "object" }) as unknown,
      pinned: true,
    });
    const table = await cluster.kubectlOk(["get", "ex", "-n", runs.namespace]);
    for (const name of ["mcp-tools", ...judged]) expect(table).toContain(name);
    console.log(`kubectl get ex:\n${table}`);

    const described = await run(GAVEL, ["describe", "ex", "mcp-tools", "-n", runs.namespace], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath },
    });
    expect(described.code, described.stderr).toBe(0);
    console.log(described.stdout);
    expect(described.stdout).toContain("Tool calls: 5 proposed, 3 allowed, 2 blocked by the guard, 0 by judges");
    expect(described.stdout).toMatch(/step 3  files\.read_text_file  blocked by guard \(destructive_pattern\)/);
    expect(described.stdout).toMatch(/step 4  fs\.read  blocked by guard \(destructive_pattern\)/);
    expect(described.stdout).toMatch(new RegExp(`rule-judge  ${mcpJudge?.metadata.name ?? "?"}  Succeeded  score 0\\.80`));
    // Each MCP call with its server and tool, and who decided every call.
    expect(described.stdout).toMatch(
      /step 3  files\.read_text_file  blocked by guard \(destructive_pattern\)  \S+\n\s+Why:\s+secrets: reads files: a secret file \[path\]\n\s+MCP server:\s+files\n\s+MCP tool:\s+read_text_file\n\s+Decided by:\s+guard: destructive_pattern\n/,
    );
    expect(described.stdout).toMatch(
      /step 2  files\.write_file  allowed  \S+  judged by:\n\s+MCP server:\s+files\n\s+MCP tool:\s+write_file\n\s+Decided by:\s+judges\n/,
    );
    expect(described.stdout).toMatch(
      /step 5  files\.read_text_file  allowed  \S+\n\s+MCP server:\s+files\n\s+MCP tool:\s+read_text_file\n\s+Decided by:\s+guard\n/,
    );
    expect(described.stdout).not.toContain("not-a-real-one");
  }, 420_000);

  it("the event stream's tree and the controller's traces show each MCP call with its server, decision and judge", async () => {
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const secret = await core.readNamespacedSecret({ name: "gavel-nats-credentials", namespace: RELEASE_NAMESPACE });
    const dir = await mkdtemp(join(tmpdir(), "gavel-e2e-mcp-"));
    try {
      const creds = join(dir, "gavel.creds");
      await writeFile(creds, Buffer.from(secret.data?.["nats.creds"] ?? "", "base64"), { mode: 0o600 });
      const nats = await core.readNamespacedPod({ name: "gavel-nats-0", namespace: RELEASE_NAMESPACE });
      const url = `nats://${nats.status?.podIP ?? ""}:4222`;
      const tree = await eventually(
        async () => {
          const r = await run(GAVEL, ["events", "--nats", url, "--creds", creds, "-n", runs.namespace, "mcp-tools", "-o", "tree"], {
            timeoutMs: 60_000,
          });
          if (r.code !== 0) throw new Error(`gavel events: ${r.stderr}`);
          return r.stdout.includes("Succeeded") ? r.stdout : undefined;
        },
        60_000,
        "the run's tree in the event stream",
      );
      console.log(tree);
      const kids = (await runs.childrenOf("mcp-tools")).map((k) => k.metadata.name);
      for (const line of [
        "tool call 1 fs.write  allowed",
        "tool call 2 files.write_file (MCP server files)  allowed",
        "tool call 3 files.read_text_file (MCP server files)  blocked by guard (destructive_pattern)",
        "tool call 4 fs.read  blocked by guard (destructive_pattern)",
        "tool call 5 files.read_text_file (MCP server files)  allowed",
        ...kids.map((k) => `judge rule-judge (${k}) score 0.80`),
      ])
        expect(tree).toContain(line);
      expect(tree).not.toContain("not-a-real-one");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const jaeger = jaegerQuery(process.env[E2E_JAEGER_QUERY_ENV] ?? "");
    const tags = { "gavel.execution.name": "mcp-tools", "k8s.namespace.name": runs.namespace };
    const [found] = await eventually(
      async () => {
        const t = await jaeger.traces("gavel-controller", tags);
        return t.length > 0 ? t : undefined;
      },
      60_000,
      "the trace of mcp-tools in Jaeger",
    );
    // root, iteration, 2 validators, 5 tool calls, 2 tool judges
    const spans = (await jaeger.trace(found?.traceID ?? "", 11)).spans;
    const tag = (sp: JaegerSpan, key: string): unknown => sp.tags.find((t) => t.key === key)?.value;
    const calls = spans
      .filter((sp) => tag(sp, "gen_ai.operation.name") === "execute_tool")
      .sort((a, b) => Number(tag(a, "gavel.tool.step")) - Number(tag(b, "gavel.tool.step")));
    expect(
      calls.map((c) => [
        tag(c, "gavel.tool.step"),
        tag(c, "gen_ai.tool.name"),
        tag(c, "gavel.mcp.server") ?? null,
        tag(c, "gavel.guard.decision"),
        tag(c, "gavel.guard.decided_by"),
      ]),
    ).toEqual([
      [1, "fs.write", null, "allowed", "judge"],
      [2, "files.write_file", "files", "allowed", "judge"],
      [3, "files.read_text_file", "files", "blocked", "guard"],
      [4, "fs.read", null, "blocked", "guard"],
      [5, "files.read_text_file", "files", "allowed", "guard"],
    ]);
    expect(JSON.stringify(spans)).not.toContain("not-a-real-one");
  }, 180_000);
});
