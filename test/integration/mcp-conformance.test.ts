// The official MCP conformance suite (@modelcontextprotocol/conformance, from the npm registry,
// on Node 22) against the reference server @modelcontextprotocol/server-everything directly
// and behind gavel's in-pod MCP endpoint (the worker runtime in endpoint mode, a real process,
// every call through the real gate over a real nats-server): every scenario that applies to
// a tools server passes through gavel as it does directly (docs/mcp-endpoint.md lists the
// others and why they do not apply).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAgent, type AgentBuild } from "../harness/agent-build.js";
import { run } from "../harness/exec.js";
import {
  mcpConformanceKit,
  startEndpointProcess,
  startEverythingHttp,
  startGatedNats,
  type EndpointProcess,
  type GatedNats,
  type McpConformanceKit,
} from "../harness/mcp-endpoint.js";

/** The scenarios of a tools server: the endpoint serves tools, and only tools (ADR 0061). */
const TOOLS_SERVER_SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "tools-call-simple-text",
  "tools-call-error",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

/** Scenarios that test what a tools server does not offer: resources, prompts, completion, logging, sampling and elicitation (server-to-client requests). */
const NOT_A_TOOLS_SERVER = [
  "logging-set-level",
  "completion-complete",
  "resources-list",
  "resources-read-text",
  "resources-read-binary",
  "resources-templates-read",
  "resources-subscribe",
  "resources-unsubscribe",
  "prompts-list",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-embedded-resource",
  "prompts-get-with-image",
];

/** Scenarios whose tools (test_image_content, ...) only the suite's own fixture server has: they fail against server-everything directly, so they say nothing here. */
const FIXTURE_TOOLS = [
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-with-logging",
  "tools-call-with-progress",
  "tools-call-sampling",
  "tools-call-elicitation",
  "elicitation-sep1034-defaults",
  "elicitation-sep1330-enums",
];

interface ScenarioResult {
  passed: number;
  failed: number;
  warnings: number;
}

/** Runs the suite's server scenarios against `url`; the summary lines, per scenario. */
async function conformance(kit: McpConformanceKit, url: string): Promise<Map<string, ScenarioResult>> {
  const out = await mkdtemp(join(tmpdir(), "gavel-mcp-conformance-"));
  try {
    const r = await run(kit.node22, [kit.conformance, "server", "--url", url, "-o", out], { timeoutMs: 300_000, cwd: kit.dir });
    const results = new Map<string, ScenarioResult>();
    for (const m of r.stdout.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$/gmu))
      results.set(m[1] ?? "", { passed: Number(m[2]), failed: Number(m[3]), warnings: Number(m[4] ?? 0) });
    if (results.size === 0)
      throw new Error(`no summary from the conformance suite (exit ${r.code}):\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
    return results;
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

describe("the MCP conformance suite through gavel's in-pod endpoint (real gate, real NATS)", () => {
  let kit: McpConformanceKit;
  let build: AgentBuild;
  let nats: GatedNats;
  let endpoint: EndpointProcess;
  let direct: Awaited<ReturnType<typeof startEverythingHttp>>;

  beforeAll(async () => {
    kit = await mcpConformanceKit();
    build = await buildAgent("mcp-conformance");
    const mcpServers = [{ name: "everything", command: ["node", kit.everything, "stdio"] }];
    nats = await startGatedNats({ spec: { tools: [], mcp_servers: mcpServers } });
    endpoint = await startEndpointProcess(build, { nats, namespace: "team", execution: "conformance", mcpServers });
    direct = await startEverythingHttp(kit);
  }, 600_000);
  afterAll(async () => {
    await direct?.stop();
    await endpoint?.stop();
    await nats?.stop();
    await build?.remove();
  });

  it("passes every tools-server scenario through gavel that server-everything passes directly", async () => {
    const directly = await conformance(kit, direct.url);
    const through = await conformance(kit, endpoint.url);
    // For the record of a run: both summaries side by side.
    console.log(JSON.stringify({ direct: Object.fromEntries(directly), throughGavel: Object.fromEntries(through) }));
    // The suite's list is what these lists cover: a new scenario has to be placed in one.
    expect([...through.keys()].sort()).toEqual([...TOOLS_SERVER_SCENARIOS, ...NOT_A_TOOLS_SERVER, ...FIXTURE_TOOLS].sort());
    for (const s of TOOLS_SERVER_SCENARIOS) {
      const d = directly.get(s);
      const g = through.get(s);
      // Every check that passes directly passes through gavel, and gavel fails none of its own.
      expect(g?.passed, `${s}: direct ${JSON.stringify(d)}, through gavel ${JSON.stringify(g)}`).toBeGreaterThanOrEqual(d?.passed ?? 0);
      expect(g?.failed, `${s}: through gavel ${JSON.stringify(g)}\n${endpoint.stderr().slice(-2000)}`).toBe(0);
    }
    // Every call the suite made through gavel was decided by the gate first, under the worker's identity.
    expect(nats.proposals.length).toBeGreaterThan(0);
    expect(nats.proposals.every((p) => p.namespace === "team" && p.execution === "conformance")).toBe(true);
  }, 600_000);
});
