// Issue 23 on the cluster, as a user runs it: gavel installed by its chart, then the manifests
// of examples/mcp-tools and the shipped rule-judge applied with kubectl. The worker pod starts
// the official MCP filesystem server (npm, in gavel/example-mcp-tools:dev, which make images
// builds) beside its runtime; every files.<tool> call is proposed to the controller's gate: the
// secret read through the server's read tool is denied under the same threat class as through
// fs.read, the write is judged by a rule-judge child Execution, the allowed read reaches the
// model (the regex validator reads it in the final answer). Shared lane: it only reads.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useCluster, type Cluster } from "../harness/cluster.js";
import { run } from "../harness/exec.js";
import { callSummary, executionsIn, type Executions } from "../harness/executions.js";
import { ChartController } from "../harness/gavel-chart.js";
import { REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const example = (file: string) => join(REPO_DIR, "examples", "mcp-tools", file);
const SECRET_READ = "secrets: reads files: a secret file";

describe("MCP server tools behind the cluster's gate (examples/mcp-tools, chart-installed controller and NATS)", () => {
  let cluster: Cluster;
  let controller: ChartController;
  let runs: Executions;

  const kubectlOk = async (args: string[]): Promise<string> => {
    const r = await cluster.kubectl(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  beforeAll(async () => {
    cluster = await useCluster();
    controller = new ChartController(cluster);
    await controller.ready();
    const ns = await cluster.createNamespace("e2e-mcp");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${(await controller.log()).slice(-6000)}`);
  }, 300_000);

  afterAll(async () => {
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
  });

  it("the secret read through files.read_text_file is denied as through fs.read, the MCP write is judged by a rule-judge child, the allowed read reaches the model; kubectl get ex and gavel describe show it", async () => {
    await kubectlOk(["apply", "-n", runs.namespace, "-f", example("agent.yaml"), "-f", example("policy.yaml"), "-f", join(REPO_DIR, "judges", "rule-judge", "agent.yaml")]);
    await kubectlOk(["apply", "-n", runs.namespace, "-f", example("execution.yaml")]);
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
    // The same threat class through the MCP tool as through the built-in.
    expect(calls?.recent?.[2]?.reason).toContain(SECRET_READ);
    expect(calls?.recent?.[3]?.reason).toContain(SECRET_READ);
    // The allowed read's result reached the model: its final answer carries the notes, which the regex validator reads.
    expect(done.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([["exit_code", true], ["regex", true]]);
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
    const payload = mcpJudge?.spec.input as { proposed_tool_call?: { tool?: string; mcp?: { server?: string; tool?: string; description?: string; input_schema?: unknown; pinned?: boolean } } } | undefined;
    expect(payload?.proposed_tool_call?.tool).toBe("files.write_file");
    expect(payload?.proposed_tool_call?.mcp).toMatchObject({ server: "files", tool: "write_file", description: expect.any(String) as unknown, input_schema: expect.objectContaining({ type: "object" }) as unknown, pinned: true });
    const table = await kubectlOk(["get", "ex", "-n", runs.namespace]);
    for (const name of ["mcp-tools", ...judged]) expect(table).toContain(name);
    console.log(`kubectl get ex:\n${table}`);

    const described = await run(GAVEL, ["describe", "ex", "mcp-tools", "-n", runs.namespace], { env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath } });
    expect(described.code, described.stderr).toBe(0);
    console.log(described.stdout);
    expect(described.stdout).toContain("Tool calls: 5 proposed, 3 allowed, 2 blocked by the guard, 0 by judges");
    expect(described.stdout).toMatch(/step 3  files\.read_text_file  blocked by guard \(destructive_pattern\)/);
    expect(described.stdout).toMatch(/step 4  fs\.read  blocked by guard \(destructive_pattern\)/);
    expect(described.stdout).toMatch(new RegExp(`rule-judge  ${mcpJudge?.metadata.name ?? "?"}  Succeeded  score 0\\.80`));
    expect(described.stdout).not.toContain("not-a-real-one");
  }, 420_000);

});
