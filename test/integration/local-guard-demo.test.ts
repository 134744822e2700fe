// What issue 5's "done" shows, on real Docker and a real nats-server: examples/guarded-tools run
// by `gavel run`. The scripted worker's first four calls are blocked by the guard, each by its
// own check; `ls /workspace` passes a rule-judge child; the worker writes its report and the
// Execution Succeeds; the event lines and the tree show every decision.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { run, runOk } from "../harness/exec.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { builtinToolHashes, signedRegistry, staleHash } from "../harness/tool-registry.js";
import { HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin/gavel");
const EXAMPLE = join(REPO_DIR, "examples/guarded-tools");
const AGENT = join(EXAMPLE, "agent.yaml");
const POLICY = join(EXAMPLE, "policy.yaml");
const RULE_JUDGE = join(REPO_DIR, "judges/rule-judge/agent.yaml");

/** A `toolcall.decision` event as `gavel events` prints it. */
interface DecisionEvent {
  type: string;
  execution: string;
  data: {
    iteration: number;
    step: number;
    tool: string;
    allowed: boolean;
    blocked_by: string;
    check?: string;
    reason: string;
    toolCallId: string;
    arg_keys: string[];
    latency_ms: number;
    judges: { judge: string; child: string; passed: boolean; score?: number }[];
  };
}

describe("examples/guarded-tools: the inner loop in local mode (real Docker, real NATS)", () => {
  let tmp: string;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    // The example's worker image: gavel/agent:dev (make images) plus the scripted turns.
    await runOk("docker", ["build", "-q", "-t", "gavel/example-guarded-tools:dev", EXAMPLE]);
    tmp = await mkdtemp(join(tmpdir(), "gavel-guard-demo-"));
  }, 600_000);
  afterAll(async () => {
    if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
  });

  it("blocks the four bad calls by check, judges ls into a passing child, and Succeeds", async () => {
    const r = await run(GAVEL, ["run", "--output", "json", "-f", AGENT, "-f", POLICY, "-f", RULE_JUDGE]);
    expect(r.code, r.stderr).toBe(0);
    const ex = JSON.parse(r.stdout) as Execution;
    const name = ex.metadata.name;
    expect(ex.status?.phase).toBe("Succeeded");
    // The task is done: the report the regex validator reads from the workspace exists.
    expect(ex.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["exit_code", true],
      ["regex", true],
    ]);

    // One event line per decision (stderr carries progress with --output json), in order.
    const decisions = r.stderr.split("\n").filter((l) => /^iteration 1 tool call \d+ \S+ (allowed|blocked)/.test(l));
    expect(decisions).toHaveLength(7);
    expect(decisions[0]).toMatch(
      /^iteration 1 tool call 1 cmd\.run blocked by guard \(destructive_pattern\): secrets: reads files: a secret file \[command\]$/,
    );
    expect(decisions[1]).toMatch(
      /^iteration 1 tool call 2 cmd\.run blocked by guard \(destructive_pattern\): destruction: deletes recursively: a system directory \[command\]$/,
    );
    expect(decisions[2]).toMatch(
      /^iteration 1 tool call 3 http\.post blocked by guard \(capability\): capability_boundary: missing tool:http\.post$/,
    );
    expect(decisions[3]).toMatch(
      /^iteration 1 tool call 4 fs\.write blocked by guard \(sequence_contract\): sequence_contract: read-before-overwrite$/,
    );
    expect(decisions[4]).toBe("iteration 1 tool call 5 cmd.run allowed: rule-judge: passed");
    expect(decisions[5]).toBe("iteration 1 tool call 6 fs.read allowed: approved by the guard (skip_judge)");
    expect(decisions[6]).toBe("iteration 1 tool call 7 fs.write allowed: rule-judge: passed");
    // No argument value reaches the event lines (the key path does not either: only the rule).
    expect(r.stderr).not.toContain("id_rsa");
    expect(r.stderr).not.toContain("example.com");

    // The ls call's judge is a child Execution that ran and approved (score over min_score 0.6).
    const lsChild = `${name}-i1-t0-s5-rule-judge`;
    const toolChildren = (ex.status?.children ?? []).filter((c) => c.purpose === "tool_validation");
    expect(toolChildren.map((c) => [c.name, c.judge, c.phase])).toEqual([
      [lsChild, "rule-judge", "Succeeded"],
      [`${name}-i1-t0-s7-rule-judge`, "rule-judge", "Succeeded"],
    ]);
    expect(toolChildren[0]?.toolCallId).toMatch(/^i1-s5-/);
    const verdict = new RegExp(`^judge rule-judge \\(${lsChild}\\) score (\\d\\.\\d\\d) confidence (\\d\\.\\d\\d)$`, "m").exec(r.stderr);
    expect(verdict, r.stderr).not.toBeNull();
    expect(Number(verdict?.[1])).toBeGreaterThanOrEqual(0.6);
    // Blocked calls never reached a judge: only steps 5 and 7 spawned one.
    expect(r.stderr.match(/judge rule-judge started as/g)).toHaveLength(2);

    // The final tree: each call with its decision, the ls call's judge hung under it.
    const tree = r.stderr.slice(r.stderr.indexOf(`✓ execution ${name}`));
    expect(tree).toContain(`✓ execution ${name} (agent guarded-tools)  Succeeded  score 1.00`);
    expect(tree).toContain("✗ tool call 1 cmd.run  blocked by guard (destructive_pattern)");
    expect(tree).toContain("✗ tool call 2 cmd.run  blocked by guard (destructive_pattern)");
    expect(tree).toContain("✗ tool call 3 http.post  blocked by guard (capability)");
    expect(tree).toContain("✗ tool call 4 fs.write  blocked by guard (sequence_contract)");
    expect(tree).toMatch(new RegExp(`✓ tool call 5 cmd\\.run  allowed\\n.*└─ ✓ judge rule-judge \\(${lsChild}\\) score 0\\.\\d\\d`));
  }, 180_000);

  it("check 2 on the worker container's own code: built-ins registered from `gavel guard tool-hash` pass, one registered from another build is denied", async () => {
    // What an operator does: hash this installation's built-in tools (the build the images carry) and sign the registrations.
    const hashes = await builtinToolHashes();
    expect(Object.keys(hashes).sort()).toEqual(["cmd.run", "fs.list", "fs.read", "fs.write"]);
    const registered = join(tmp, "registry.yaml");
    await writeFile(
      registered,
      JSON.stringify(
        signedRegistry("registry", [
          ["fs.read", hashes["fs.read"] ?? ""],
          ["fs.write", hashes["fs.write"] ?? ""],
          ["cmd.run", staleHash("cmd.run")],
        ]),
      ),
    );
    const r = await run(GAVEL, ["run", "--output", "json", "-f", AGENT, "-f", POLICY, "-f", registered, "-f", RULE_JUDGE]);
    const decisions = r.stderr.split("\n").filter((l) => /^iteration 1 tool call \d+ \S+ (allowed|blocked)/.test(l));
    expect(decisions, r.stderr).toEqual([
      "iteration 1 tool call 1 cmd.run blocked by guard (hash): hash_mismatch: cmd.run",
      "iteration 1 tool call 2 cmd.run blocked by guard (hash): hash_mismatch: cmd.run",
      expect.stringMatching(/^iteration 1 tool call 3 http\.post blocked by guard \(capability\)/) as unknown as string,
      "iteration 1 tool call 4 fs.write blocked by guard (sequence_contract): sequence_contract: read-before-overwrite",
      "iteration 1 tool call 5 cmd.run blocked by guard (hash): hash_mismatch: cmd.run",
      // The worker's fs.* code hashes to what `gavel guard tool-hash` printed: registered and allowed.
      "iteration 1 tool call 6 fs.read allowed: approved by the guard (skip_judge)",
      "iteration 1 tool call 7 fs.write allowed: rule-judge: passed",
    ]);
  }, 180_000);

  it("two runs sharing --nats, with and without the GuardPolicy: each gate decides only its own run's calls", async () => {
    let nats: NatsServer | undefined;
    try {
      nats = await startNats();
      const url = nats.url;
      const stamp = Date.now().toString(36);
      const withPolicy = `guard-demo-a-${stamp}`;
      const without = `guard-demo-b-${stamp}`;
      // Concurrent on one server: a gate listening there would answer the other run's worker.
      const [a, b] = await Promise.all([
        run(GAVEL, ["run", "--output", "json", "--nats", url, "--name", withPolicy, "-f", AGENT, "-f", POLICY, "-f", RULE_JUDGE]),
        run(GAVEL, ["run", "--output", "json", "--nats", url, "--name", without, "-f", AGENT, "-f", RULE_JUDGE]),
      ]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const eventsOf = async (name: string): Promise<DecisionEvent[]> => {
        const ev = await run(GAVEL, ["events", "--nats", url, "-n", "default", name]);
        expect(ev.code, ev.stderr).toBe(0);
        return ev.stdout
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as DecisionEvent);
      };
      const row = (d: DecisionEvent) => [d.data.step, d.data.tool, d.data.allowed, d.data.blocked_by, d.data.check ?? null];
      const evA = await eventsOf(withPolicy);
      const evB = await eventsOf(without);
      const blocked = [
        [1, "cmd.run", false, "guard", "destructive_pattern"],
        [2, "cmd.run", false, "guard", "destructive_pattern"],
        [3, "http.post", false, "guard", "capability"],
      ];
      const rest = [
        [5, "cmd.run", true, "none", null],
        [6, "fs.read", true, "none", null],
        [7, "fs.write", true, "none", null],
      ];
      expect(evA.filter((e) => e.type === "toolcall.decision").map(row)).toEqual([
        ...blocked,
        [4, "fs.write", false, "guard", "sequence_contract"],
        ...rest,
      ]);
      // No sequence contract: the guard lets the early overwrite through to the rule-judge.
      expect(evB.filter((e) => e.type === "toolcall.decision").map(row)).toEqual([
        ...blocked,
        [4, "fs.write", true, "none", null],
        ...rest,
      ]);
      // Each decision carries what the audit keeps: the call's id, argument keys (never values),
      // the gate's latency and the judges that decided it.
      const lsA = evA.find((e) => e.type === "toolcall.decision" && e.data.step === 5)?.data;
      expect(lsA).toMatchObject({
        arg_keys: ["command"],
        judges: [{ judge: "rule-judge", child: `${withPolicy}-i1-t0-s5-rule-judge`, passed: true }],
      });
      expect(lsA?.toolCallId).toMatch(/^i1-s5-/);
      expect(lsA?.latency_ms).toBeGreaterThan(0);
      const sshA = evA.find((e) => e.type === "toolcall.decision" && e.data.step === 1)?.data;
      expect(sshA).toMatchObject({ arg_keys: ["command"], judges: [] });
      expect(JSON.stringify(evA)).not.toContain("id_rsa");
      const judged = (evs: DecisionEvent[]) =>
        evs.filter((e) => e.type === "judge.spawned").map((e) => [e.data.step, (e.data as unknown as { child: string }).child]);
      expect(judged(evA)).toEqual([5, 7].map((s) => [s, `${withPolicy}-i1-t0-s${s}-rule-judge`]));
      expect(judged(evB)).toEqual([4, 5, 7].map((s) => [s, `${without}-i1-t0-s${s}-rule-judge`]));
    } finally {
      await nats?.stop();
    }
  }, 240_000);

  it("refuses a GuardPolicy the guard cannot compile, naming the file and rule, before starting anything", async () => {
    const bad = join(tmp, "bad-policy.yaml");
    await writeFile(
      bad,
      `apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata: { name: backreference }
spec:
  adaptive_rules:
    - { name: repeated-word, match_field: args, pattern: '\\b(\\w+) \\1\\b', action: deny, reason: repeated word }
`,
    );
    const r = await run(GAVEL, ["run", "-f", AGENT, "-f", bad, "-f", RULE_JUDGE]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bad}:doc#1`);
    expect(r.stderr).toMatch(/GuardPolicy backreference: adaptive_rules\[0\] \(repeated-word\).*not supported by RE2/);
  });
});
