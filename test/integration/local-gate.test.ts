// Local mode's inner loop on real Docker and a real nats-server (started by gavel run itself):
// the worker runtime image proposes each tool call; the guard blocks a destructive command,
// a tool_validation judge container approves the file write, and the outer loop validates,
// with a judge that checks the iteration's tool_call_history.
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

// Exits 0 only when the judge's tool_call_history is the iteration's two decided calls, in
// step order, with their outcome and no argument values.
const HISTORY_CHECK = `const h=JSON.parse(process.env.GAVEL_INPUT).tool_call_history;const want=[{tool:'fs.write',step:1,allowed:true},{tool:'cmd.run',step:2,allowed:false}];console.log(JSON.stringify(h));process.exit(Array.isArray(h)&&h.length===2&&want.every((w,i)=>h[i].tool===w.tool&&h[i].step===w.step&&h[i].allowed===w.allowed&&!('args' in h[i]))&&/^destruction: /.test(h[1].reason)?0:1)`;

const worker = (network: "allow" | "none") => `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: scripted-agent }
spec:
  runtime: { image: gavel/test-scripted-agent:dev, pull_policy: Never }
  task: { instruction: "write a greeting to /workspace/hello.txt" }
  tools:
    - fs.write
    - name: cmd.run
      allowlist: ["rm", "ls"]
  security: { network: { mode: ${network} }, resources: { timeout: "60s" } }
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
      - type: semantic
        judge_agent: history-judge
        min_score: 1.0
        criteria: |
          run: node -e "${HISTORY_CHECK}"
`;

const HISTORY_JUDGE = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: history-judge, labels: { role: judge } }
spec:
  runtime: { image: gavel/command-judge:dev, pull_policy: Never }
  input_schema:
    type: object
    properties:
      criteria: { type: string }
      worker_mounts: { type: array, items: { type: string } }
      tool_call_history: { type: array }
  tools:
    - name: cmd.run
      allowlist: ["node"]
  security: { network: { mode: none }, resources: { timeout: "60s" } }
  execution: { mode: one-shot }
`;

describe("gavel run with tools: the inner-loop gate in local mode (real Docker, real NATS)", () => {
  let dir: string;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    dir = await mkdtemp(join(tmpdir(), "gavel-local-gate-"));
    await writeFile(join(dir, "script.yaml"), SCRIPT);
    await writeFile(
      join(dir, "Dockerfile"),
      "FROM gavel/agent:dev\nCOPY script.yaml /agent/script.yaml\nENV GAVEL_SCRIPT_FILE=/agent/script.yaml\n",
    );
    await runOk("docker", ["build", "-q", "-t", "gavel/test-scripted-agent:dev", dir]);
    for (const network of ["allow", "none"] as const) await writeFile(join(dir, `worker-${network}.yaml`), worker(network));
    await writeFile(join(dir, "history-judge.yaml"), HISTORY_JUDGE);
  }, 600_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // With network none the container has only loopback: it reaches the gate through the
  // socket gavel run mounts into it (src/local/gate-socket.ts), and nothing else.
  it.each(["allow", "none"])(
    "network %s: the guard blocks rm -rf /, the judge lets the write through, the outer loop sees the file",
    async (network) => {
      const r = await run(join(REPO_DIR, "bin/gavel"), [
        "run",
        "--output",
        "json",
        "-f",
        join(dir, `worker-${network}.yaml`),
        "-f",
        join(REPO_DIR, "judges/rule-judge/agent.yaml"),
        "-f",
        join(dir, "history-judge.yaml"),
      ]);
      expect(r.code, r.stderr).toBe(0);
      const ex = JSON.parse(r.stdout) as Execution;
      expect(ex.status?.phase, JSON.stringify(ex.status?.iterations?.[0]?.validators)).toBe("Succeeded");
      // The third validator's judge got the iteration's calls as tool_call_history (checked inside it).
      expect(ex.status?.iterations?.[0]?.validators?.map((v) => v.passed)).toEqual([true, true, true]);
      // The status holds the gate's summary of the iteration, as on a cluster.
      expect(ex.status?.iterations?.[0]?.toolCalls).toMatchObject({ proposed: 2, allowed: 1, blockedByGuard: 1, blockedByJudge: 0 });
      expect(r.stderr).toMatch(/tool call 1 fs\.write allowed/);
      expect(r.stderr).toMatch(/tool call 2 cmd\.run blocked by guard \(destructive_pattern\)/);
      expect(r.stderr).toMatch(/tool call 1 judge rule-judge started as \S+-i1-t0-s1-rule-judge/);
      expect(r.stderr).toMatch(/tool call 1 fs\.write proposed/);
    },
  );
});
