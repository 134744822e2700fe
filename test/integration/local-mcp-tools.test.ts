// Issue 23's local slice, on real Docker and a real nats-server: examples/mcp-tools run by
// `gavel run`. The worker runtime starts the official MCP filesystem server (from npm) beside
// itself; every files.<tool> call goes through the gate: a read of a secret file through the
// MCP read tool is denied by the guard under the same threat class as through fs.read, a
// write is judged by a rule-judge child, and an allowed read's result reaches the model.
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { startNats } from "../harness/nats.js";
import type { Execution } from "../../src/api/types.js";
import { run, runOk } from "../harness/exec.js";
import { HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin/gavel");
const EXAMPLE = join(REPO_DIR, "examples/mcp-tools");
const RULE_JUDGE = join(REPO_DIR, "judges/rule-judge/agent.yaml");

describe("examples/mcp-tools: MCP server tools behind the gate in local mode (real Docker, real NATS)", () => {
  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    // gavel/agent:dev (make images) plus the filesystem server from this checkout's node_modules.
    await runOk(join(EXAMPLE, "build-image.sh"), []);
  }, 600_000);

  it("denies the secret read through files.read_text_file as through fs.read, judges the write, returns the allowed read", async () => {
    const r = await run(GAVEL, [
      "run",
      "--output",
      "json",
      "-f",
      join(EXAMPLE, "agent.yaml"),
      "-f",
      join(EXAMPLE, "policy.yaml"),
      "-f",
      RULE_JUDGE,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const ex = JSON.parse(r.stdout) as Execution;
    expect(ex.status?.phase).toBe("Succeeded");
    // The regex validator reads the worker's final answer, which carries the fifth tool result: what the MCP read returned to the model.
    expect(ex.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["exit_code", true],
      ["regex", true],
    ]);

    const decisions = r.stderr.split("\n").filter((l) => /^iteration 1 tool call \d+ \S+ (allowed|blocked)/.test(l));
    expect(decisions, r.stderr).toEqual([
      "iteration 1 tool call 1 fs.write allowed: rule-judge: passed",
      "iteration 1 tool call 2 files.write_file allowed: rule-judge: passed",
      "iteration 1 tool call 3 files.read_text_file blocked by guard (destructive_pattern): secrets: reads files: a secret file [path]",
      "iteration 1 tool call 4 fs.read blocked by guard (destructive_pattern): secrets: reads files: a secret file [path]",
      "iteration 1 tool call 5 files.read_text_file allowed: approved by the guard (skip_judge)",
    ]);
    // The MCP write was judged by a child Execution of the rule-judge; the blocked reads never reached a judge.
    const toolChildren = (ex.status?.children ?? []).filter((c) => c.purpose === "tool_validation");
    expect(toolChildren.map((c) => [c.judge, c.phase, c.toolCallId?.replace(/-[0-9a-f]+$/, "")])).toEqual([
      ["rule-judge", "Succeeded", "i1-s1"],
      ["rule-judge", "Succeeded", "i1-s2"],
    ]);
    // No argument value or file content reaches the event lines.
    expect(r.stderr).not.toContain("not-a-real-one");
  }, 240_000);

  it("puts each MCP call's server, tool and listing digest in its decision event: the digest `gavel guard tool-hash --mcp-server` prints", async () => {
    const nats = await startNats();
    try {
      const name = `mcp-tools-${Date.now().toString(36)}`;
      const r = await run(GAVEL, [
        "run",
        "--output",
        "json",
        "--nats",
        nats.url,
        "--name",
        name,
        "-f",
        join(EXAMPLE, "agent.yaml"),
        "-f",
        join(EXAMPLE, "policy.yaml"),
        "-f",
        RULE_JUDGE,
      ]);
      expect(r.code, r.stderr).toBe(0);
      const ev = await run(GAVEL, ["events", "--nats", nats.url, "-n", "default", name]);
      expect(ev.code, ev.stderr).toBe(0);
      const decisions = ev.stdout
        .trim()
        .split("\n")
        .map(
          (l) =>
            JSON.parse(l) as {
              type: string;
              data: { step: number; tool: string; mcp?: { server: string; tool: string; digest: string; pinned: boolean } };
            },
        )
        .filter((e) => e.type === "toolcall.decision");
      expect(decisions.map((e) => [e.data.step, e.data.tool, e.data.mcp?.server ?? null, e.data.mcp?.pinned ?? null])).toEqual([
        [1, "fs.write", null, null],
        [2, "files.write_file", "files", true],
        [3, "files.read_text_file", "files", true],
        [4, "fs.read", null, null],
        [5, "files.read_text_file", "files", true],
      ]);
      // The same server run on this machine lists the same tool: the operator's digest for tool_registry is the event's.
      const server = join(REPO_DIR, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
      const hashes = await run(GAVEL, ["guard", "tool-hash", "--mcp-server", "files", "--", "node", server, "/tmp"]);
      expect(hashes.code, hashes.stderr).toBe(0);
      const digests = JSON.parse(hashes.stdout) as Record<string, string>;
      expect(decisions[2]?.data.mcp?.digest).toBe(digests["files.read_text_file"]);
      expect(decisions[1]?.data.mcp?.digest).toBe(digests["files.write_file"]);
    } finally {
      await nats.stop();
    }
  }, 240_000);
});
