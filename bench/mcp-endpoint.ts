// The in-pod MCP endpoint's added latency (ADR 0061): an agent on the official SDK's client
// calls server-everything's `echo` through gavel's endpoint (the worker runtime in endpoint
// mode as a process, a guard-only decision by the real gate over a real nats-server, the server
// over stdio behind it) against calling the same server directly over Streamable HTTP, in
// interleaved rounds of the same run. Target: p50 ratio <= 2 (published MCP proxies add about
// twice a direct hop).
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mcpConformanceKit, startEndpointProcess, startEverythingHttp, startGatedNats } from "../test/harness/mcp-endpoint.js";
import { REPO_DIR } from "../test/harness/paths.js";
import { percentile } from "./load.js";
import type { BenchResult, BenchSuite } from "./types.js";

const CALLS = Number(process.env.GAVEL_BENCH_MCP_CALLS ?? "200");
const ROUNDS = Number(process.env.GAVEL_BENCH_MCP_ROUNDS ?? "5");
const TARGET = 2;

/** One client session on `url`, and `n` sequential echo calls timed in µs. */
async function session(url: string, tool: string): Promise<{ calls(n: number): Promise<number[]>; close(): Promise<void> }> {
  const client = new Client({ name: "gavel-bench", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return {
    async calls(n) {
      const samples: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        const r = await client.callTool({ name: tool, arguments: { message: `call ${i}` } });
        samples.push((performance.now() - t) * 1000);
        if (r.isError === true) throw new Error(`${tool} failed: ${JSON.stringify(r.content)}`);
      }
      return samples;
    },
    close: () => client.close(),
  };
}

async function run(): Promise<BenchResult[]> {
  const kit = await mcpConformanceKit();
  const mcpServers = [{ name: "everything", command: ["node", kit.everything, "stdio"], tools: ["echo"] }];
  const nats = await startGatedNats({ spec: { tools: [], mcp_servers: mcpServers } });
  // The compiled worker runtime of `make build` (dist/src/agent/main.js), as the image runs it.
  const dist = { dir: join(REPO_DIR, "dist"), run: () => Promise.reject(new Error("unused")), remove: () => Promise.resolve() };
  const endpoint = await startEndpointProcess(dist, { nats, namespace: "bench", execution: "mcp-endpoint", mcpServers });
  const direct = await startEverythingHttp(kit);
  try {
    const viaGavel = await session(endpoint.url, "everything.echo");
    const straight = await session(direct.url, "echo");
    // Warm both paths (JIT, connections, the gate's store) before measuring.
    await viaGavel.calls(50);
    await straight.calls(50);
    const g: number[] = [];
    const d: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      d.push(...(await straight.calls(CALLS)));
      g.push(...(await viaGavel.calls(CALLS)));
    }
    await viaGavel.close();
    await straight.close();
    const decided = nats.proposals.length;
    const notes = `mcp endpoint: ${ROUNDS} interleaved rounds of ${CALLS} sequential tools/call (echo) each way, one session each; through gavel every call is proposed to the gate (guard only, no judge: ${decided} decisions) over nats-server, then sent to server-everything over stdio; directly it goes to server-everything over Streamable HTTP`;
    const result = (name: string, p: number): BenchResult => {
      const value = percentile(g, p);
      const baseline = percentile(d, p);
      const ratio = value / baseline;
      return {
        name: `mcp endpoint tools/call ${name}`,
        baselineName: "the same server called directly",
        baseline,
        value,
        unit: "µs",
        ratio,
        target: p === 50 ? `ratio <= ${TARGET}` : "reported",
        met: p === 50 ? ratio <= TARGET : true,
        notes,
      };
    };
    return [result("p50", 50), result("p99", 99)];
  } finally {
    await direct.stop();
    await endpoint.stop();
    await nats.stop();
  }
}

export const suite: BenchSuite = { name: "mcp-endpoint", needs: ["nats"], run };
