// Local mode's inner loop on real Docker and a real nats-server (started by gavel run itself):
// the worker runtime image proposes each tool call; the guard blocks a destructive command,
// a tool_validation judge container approves the file write, and the outer loop validates.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { run, runOk } from "../harness/exec.js";
import { HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

const SCRIPT = `- say: "writing the file, then cleaning up"
  tool_calls:
    - tool: fs.write
      args: { path: /workspace/hello.txt, content: "hi there" }
      intent: write the greeting file
    - tool: cmd.run
      args: { command: "rm -rf /" }
      intent: clean up
- final: "wrote hello.txt"
`;

const WORKER = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: scripted-agent }
spec:
  runtime: { image: gavel/test-scripted-agent:dev, pull_policy: Never }
  task: { instruction: "write a greeting to /workspace/hello.txt" }
  tools:
    - fs.write
    - name: cmd.run
      allowlist: ["rm", "ls"]
  security: { network: { mode: allow }, resources: { timeout: "60s" } }
  execution:
    mode: one-shot
    tool_validation:
      - type: semantic
        judge_agent: rule-judge
        min_score: 0.5
    validation:
      - type: exit_code
      - type: regex
        pattern: "hi there"
        target: /workspace/hello.txt
`;

describe("gavel run with tools: the inner-loop gate in local mode (real Docker, real NATS)", () => {
  let dir: string;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    dir = await mkdtemp(join(tmpdir(), "gavel-local-gate-"));
    await writeFile(join(dir, "script.yaml"), SCRIPT);
    await writeFile(join(dir, "Dockerfile"), "FROM gavel/agent:dev\nCOPY script.yaml /agent/script.yaml\nENV GAVEL_SCRIPT_FILE=/agent/script.yaml\n");
    await runOk("docker", ["build", "-q", "-t", "gavel/test-scripted-agent:dev", dir]);
    await writeFile(join(dir, "worker.yaml"), WORKER);
  }, 600_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("the guard blocks rm -rf /, the judge lets the write through, the outer loop sees the file", async () => {
    const r = await run(join(REPO_DIR, "bin/gavel"), ["run", "--output", "json", "-f", join(dir, "worker.yaml"), "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")]);
    expect(r.code, r.stderr).toBe(0);
    const ex = JSON.parse(r.stdout) as Execution;
    expect(ex.status?.phase).toBe("Succeeded");
    expect(ex.status?.iterations?.[0]?.validators?.map((v) => v.passed)).toEqual([true, true]);
    expect(r.stderr).toMatch(/tool call 1 fs\.write allowed/);
    expect(r.stderr).toMatch(/tool call 2 cmd\.run blocked by guard \(destructive_pattern\)/);
    expect(r.stderr).toMatch(/tool call 1 judge rule-judge started as \S+-i1-t0-s1-rule-judge/);
    expect(r.stderr).toMatch(/tool call 1 fs\.write proposed/);
  });
});
