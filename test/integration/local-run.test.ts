// Local mode on the real Docker engine: the outer loop with real worker and judge containers.
// Each validator type fails in iteration 1 and passes in iteration 2 (refined by feedback);
// judges that time out, crash, print garbage or try to write the workspace are rejected.
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withDefaults } from "../../src/api/defaults.js";
import type { Agent, ConsensusStrategy, Execution, ValidatorSpec } from "../../src/api/types.js";
import { LocalRun, runLocal, type LocalRunResult } from "../../src/local/local-run.js";
import { DockerWorkloads } from "../../src/runtime/docker/docker-workloads.js";
import { run, runOk } from "../harness/exec.js";
import { BASE_IMAGE, HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

const WORKER_IMAGE = "gavel/test-scripted-worker:dev";
const JUDGE_IMAGE = "gavel/test-scripted-judge:dev";

// The worker runs the JavaScript in its input's `script`; the judge the one in its criteria
// (a judge without input_schema receives {content, intent: criteria}).
const WORKER_RUN = `const input = JSON.parse(process.env.GAVEL_INPUT || "{}");\neval(input.script);\n`;
const JUDGE_RUN = `const p = JSON.parse(require("fs").readFileSync(0, "utf8"));\neval(p.intent);\n`;
const SCHEMA = { type: "object", required: ["answer"], properties: { answer: { type: "integer" } } };

async function buildImage(tag: string, files: Record<string, string>, cmd: string[]): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-img-"));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    const copies = Object.keys(files)
      .map((f) => `COPY ${f} /agent/${f}`)
      .join("\n");
    // ENTRYPOINT, as every image gavel ships has: the schema_path reader must still run its own command.
    await writeFile(join(dir, "Dockerfile"), `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\n${copies}\nENTRYPOINT ${JSON.stringify(cmd)}\n`);
    await runOk("docker", ["build", "-q", "--build-arg", `BASE_IMAGE=${BASE_IMAGE}`, "-t", tag, dir]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function worker(validation: ValidatorSpec[], maxIterations = 2): Agent {
  return withDefaults({
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "scripted" },
    spec: {
      runtime: { image: WORKER_IMAGE, pull_policy: "Never" },
      security: { network: { mode: "none" }, resources: { timeout: "60s" } },
      execution: { mode: "iterative", max_iterations: maxIterations, validation },
    },
  });
}

function judge(name: string): Agent {
  return withDefaults({
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, labels: { role: "judge" } },
    spec: {
      runtime: { image: JUDGE_IMAGE, pull_policy: "Never" },
      security: { network: { mode: "none" }, resources: { timeout: "60s" } },
      execution: { mode: "one-shot" },
    },
  });
}

let counter = 0;
function scriptedExecution(agent: Agent, script: string, extra: Partial<Execution["spec"]> = {}): Execution {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: { name: `it-${process.pid}-${counter++}` },
    spec: { agentRef: { name: agent.metadata.name }, input: { script }, ...extra },
  };
}

async function runScripted(
  agent: Agent,
  script: string,
  judges: Agent[] = [],
  extra: Partial<Execution["spec"]> = {},
): Promise<LocalRunResult> {
  const execution = scriptedExecution(agent, script, extra);
  const workloads = new DockerWorkloads();
  try {
    return await runLocal({ execution, agent, judges: new Map(judges.map((j) => [j.metadata.name, j])), workloads });
  } finally {
    await workloads.removeAll();
  }
}

/** A verdict-printing judge script. */
const verdict = (score: string, reasoning: string) =>
  `console.log(JSON.stringify({ score: ${score}, confidence: 1, reasoning: ${reasoning} }));`;

describe("local mode on Docker", () => {
  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    await runOk(join(HARNESS_DIR, "base-image.sh"), []);
    await buildImage(WORKER_IMAGE, { "run.js": WORKER_RUN, "schema.json": JSON.stringify(SCHEMA) }, ["node", "/agent/run.js"]);
    await buildImage(JUDGE_IMAGE, { "run.js": JUDGE_RUN }, ["node", "/agent/run.js"]);
  }, 600_000);

  afterAll(async () => {
    // Nothing a run started may be left behind.
    const left = await runOk("docker", [
      "ps",
      "-aq",
      "--filter",
      "label=gavel.dev/managed-by=gavel-docker-runtime",
      "--filter",
      `label=gavel.dev/owner-pid=${process.pid}`,
    ]);
    expect(left.trim()).toBe("");
  });

  it("make demo's example: refined once by the command judge's feedback, then Succeeded (gavel run --output json)", async () => {
    await runOk("docker", [
      "build",
      "-q",
      "--build-arg",
      `BASE_IMAGE=${BASE_IMAGE}`,
      "-t",
      "gavel/example-sum-writer:dev",
      join(REPO_DIR, "examples/refine-once"),
    ]);
    const r = await run(
      join(REPO_DIR, "bin/gavel"),
      [
        "run",
        "--output",
        "json",
        "-f",
        "examples/refine-once/agent.yaml",
        "-f",
        "judges/command-judge/agent.yaml",
        "-f",
        "judges/rule-judge/agent.yaml",
      ],
      { cwd: REPO_DIR },
    );
    expect(r.code, r.stderr).toBe(0);
    const ex = JSON.parse(r.stdout) as Execution;
    const st = ex.status;
    expect(st?.phase).toBe("Succeeded");
    expect(st?.score).toBe(1);
    expect(st?.iterations?.map((i) => i.phase)).toEqual(["Refining", "Passed"]);
    const failed = st?.iterations?.[0]?.validators?.at(-1);
    expect(failed).toMatchObject({ index: 3, type: "semantic", passed: false, score: 0.5 });
    expect(failed?.children?.[0]).toMatch(/-i1-v3-command-judge$/);
    expect(st?.iterations?.[1]?.feedback).toContain("not ok");
    expect(st?.children?.map((c) => [c.judge, c.iteration, c.phase])).toEqual([
      ["command-judge", 1, "Succeeded"],
      ["command-judge", 2, "Succeeded"],
      ["rule-judge", 2, "Succeeded"],
    ]);
    expect(r.stderr).toContain("iteration 2 passed");
  });

  it("exit_code: fails on exit 3 with stderr's tail, passes on exit 0", async () => {
    const r = await runScripted(
      worker([{ type: "exit_code" }]),
      `if (process.env.GAVEL_ITERATION === "1") { console.error("kaput: disk on fire"); process.exit(3); }`,
    );
    const st = r.execution.status;
    expect(st?.phase).toBe("Succeeded");
    expect(st?.iterations?.[0]).toMatchObject({ exitCode: 3, phase: "Refining" });
    expect(st?.iterations?.[0]?.validators?.[0]?.reasoning).toContain("exit code 3, expected 0");
    expect(st?.iterations?.[1]?.feedback).toContain("kaput: disk on fire");
    expect(st?.iterations?.[1]?.exitCode).toBe(0);
  });

  it("json_schema: the workspace file is read by a reader container; inline and image schema both fail then pass", async () => {
    const r = await runScripted(
      worker([
        { type: "json_schema", target_path: "/workspace/out.json", schema: SCHEMA },
        { type: "json_schema", target_path: "/workspace/out.json", schema_path: "/agent/schema.json" },
      ]),
      `const fs = require("fs");
       const second = process.env.GAVEL_ITERATION === "2";
       fs.writeFileSync("/workspace/out.json", JSON.stringify(second ? { answer: 42 } : { answer: "forty-two" }));
       // the worker's own claims do not count: only the file does
       console.log(JSON.stringify({ answer: 42 }));`,
    );
    const st = r.execution.status;
    expect(st?.phase).toBe("Succeeded");
    const first = st?.iterations?.[0]?.validators ?? [];
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ type: "json_schema", passed: false });
    expect(first[0]?.reasoning).toContain("/answer: must be integer");
    expect(st?.iterations?.[1]?.validators?.map((v) => v.passed)).toEqual([true, true]);
  });

  it("regex: stdout and a workspace file, failing then passing; a missing file is named", async () => {
    const r = await runScripted(
      worker(
        [
          { type: "regex", pattern: "^status: ok$" },
          { type: "regex", pattern: "(?m)^done$", target: "/workspace/log.txt" },
        ],
        3,
      ),
      `const n = process.env.GAVEL_ITERATION;
       console.log(n === "1" ? "status: broken" : "status: ok");
       if (n === "3") require("fs").writeFileSync("/workspace/log.txt", "step 1\\ndone\\n");`,
    );
    const st = r.execution.status;
    expect(st?.phase).toBe("Succeeded");
    expect(st?.iterations?.[0]?.validators?.[0]).toMatchObject({ passed: false });
    expect(st?.iterations?.[0]?.validators?.[0]?.reasoning).toContain("stdout does not match");
    expect(st?.iterations?.[1]?.validators?.[1]?.reasoning).toBe("/workspace/log.txt does not exist");
    expect(st?.iterations?.[2]?.validators?.map((v) => v.passed)).toEqual([true, true]);
  });

  it("semantic: a judge container scores the output low, then high", async () => {
    const r = await runScripted(
      worker([
        {
          type: "semantic",
          judge_agent: "grader",
          min_score: 0.8,
          criteria: verdict('p.content.includes("good") ? 0.9 : 0.2', '"saw: " + p.content.trim()'),
        },
      ]),
      `console.log(process.env.GAVEL_ITERATION === "1" ? "bad work" : "good work");`,
      [judge("grader")],
    );
    const st = r.execution.status;
    expect(st?.phase).toBe("Succeeded");
    expect(st?.score).toBe(0.9);
    expect(st?.iterations?.[0]?.validators?.[0]).toMatchObject({ passed: false, score: 0.2 });
    expect(st?.iterations?.[1]?.feedback).toContain("saw: bad work");
    expect(r.children.map((c) => [c.metadata.name.replace(/^it-\d+-\d+-/, ""), c.status?.verdict?.score])).toEqual([
      ["i1-v0-grader", 0.2],
      ["i2-v0-grader", 0.9],
    ]);
  });

  it("a 4 MiB worker output reaches its judge intact on stdin (SHA-256 checked inside the judge), as on the cluster (e2e judge-payloads)", async () => {
    const line = `é→${"x".repeat(58)}\n`;
    const output = line.repeat(65536);
    const sha = createHash("sha256").update(output).digest("hex");
    const r = await runScripted(
      worker(
        [
          {
            type: "semantic",
            judge_agent: "hasher",
            min_score: 1,
            criteria: verdict(
              `require("crypto").createHash("sha256").update(p.content).digest("hex") === "${sha}" ? 1 : 0`,
              '"bytes: " + Buffer.byteLength(p.content)',
            ),
          },
        ],
        1,
      ),
      `process.stdout.write(${JSON.stringify(line)}.repeat(65536));`,
      [judge("hasher")],
    );
    expect(r.execution.status?.phase, JSON.stringify(r.children[0]?.status?.verdict)).toBe("Succeeded");
    expect(r.children[0]?.status?.verdict?.reasoning).toBe(`bytes: ${4 * 1024 * 1024}`);
  });

  it("multi_judge: three judges in parallel under each consensus mode", async () => {
    const judges = [
      ["high", "0.9"],
      ["mid", "0.6"],
      ["low", "0.3"],
    ].map(([name]) => judge(name as string));
    const scores: Record<string, string> = { high: "0.9", mid: "0.6", low: "0.3" };
    // One judge image; each judge Agent's name picks its score (validation_context is not sent without input_schema).
    const criteria = verdict(
      `({ "-high": 0.9, "-mid": 0.6, "-low": 0.3 })[process.env.GAVEL_EXECUTION.slice(process.env.GAVEL_EXECUTION.lastIndexOf("-"))]`,
      '"fixed"',
    );
    const expected: Record<ConsensusStrategy, boolean> = { weighted_average: true, majority: true, unanimous: false, best_of_n: true };
    for (const mode of Object.keys(expected) as ConsensusStrategy[]) {
      const r = await runScripted(
        worker([{ type: "multi_judge", judges: ["high", "mid", "low"], consensus: mode, min_score: 0.5, criteria }], 1),
        `console.log("output");`,
        judges,
      );
      expect(r.children.map((c) => c.status?.verdict?.score)).toEqual(["high", "mid", "low"].map((n) => Number(scores[n])));
      const v = r.execution.status?.iterations?.[0]?.validators?.[0];
      expect(v?.passed, `${mode}: ${v?.reasoning ?? ""}`).toBe(expected[mode]);
      expect(r.execution.status?.phase).toBe(expected[mode] ? "Succeeded" : "Failed");
    }
  });

  it("judges that time out (killed), crash, print garbage, or try to write the workspace are each rejected", async () => {
    const script = `
      const name = process.env.GAVEL_EXECUTION;
      if (name.endsWith("-sleeper")) setInterval(() => {}, 1000);
      else if (name.endsWith("-crasher")) { console.error("segfault, sort of"); process.exit(139); }
      else if (name.endsWith("-babbler")) console.log("I am quite sure it is fine. {score: high} ]]");
      else if (name.endsWith("-vandal")) {
        let reasoning;
        try { require("fs").writeFileSync("/workspace/pwned", "x"); reasoning = "wrote the workspace"; }
        catch (e) { reasoning = "write refused: " + e.code; }
        console.log(JSON.stringify({ score: 0, confidence: 1, reasoning }));
      }`;
    const names = ["sleeper", "crasher", "babbler", "vandal"];
    const started = Date.now();
    const r = await runScripted(
      worker(
        [
          // min_score 0: the vandal's (valid) verdict passes it, so the next validator looks for its file.
          // 10 s: each judge's container must start and answer inside it; with 3 s the crasher's
          // start alone ran past it at load 10+ (final CI run at 5d3548a: TimedOut, not Failed).
          { type: "multi_judge", judges: names, min_score: 0, timeout_seconds: 10, criteria: script },
          { type: "regex", pattern: "x", target: "/workspace/pwned" },
        ],
        1,
      ),
      `console.log("output");`,
      names.map(judge),
    );
    const byJudge = Object.fromEntries(r.children.map((c) => [c.spec.agentRef.name, c.status]));
    expect(byJudge.sleeper).toMatchObject({ phase: "TimedOut", rejection: "timed_out" });
    expect(byJudge.crasher).toMatchObject({ phase: "Failed", rejection: "failed" });
    expect(byJudge.babbler).toMatchObject({ phase: "Failed", rejection: "malformed_output" });
    expect(byJudge.vandal?.verdict?.reasoning).toBe("write refused: EROFS");
    const [multi, regex] = r.execution.status?.iterations?.[0]?.validators ?? [];
    expect(multi?.passed).toBe(true);
    expect(regex?.reasoning).toBe("/workspace/pwned does not exist");
    // The sleeper was killed at its 10 s deadline, not waited for.
    expect(Date.now() - started).toBeLessThan(60_000);
    const left = await runOk("docker", [
      "ps",
      "-aq",
      "--filter",
      `label=gavel.dev/execution=${r.children.find((c) => c.spec.agentRef.name === "sleeper")?.metadata.name ?? "?"}`,
    ]);
    expect(left.trim()).toBe("");
  });

  it("the whole Execution times out: the running judge is killed and the phase is TimedOut", async () => {
    const started = Date.now();
    const r = await runScripted(
      worker([{ type: "semantic", judge_agent: "slowpoke", criteria: "setInterval(() => {}, 1000);" }], 1),
      `console.log("done");`,
      [judge("slowpoke")],
      { timeoutSeconds: 4 },
    );
    expect(r.execution.status?.phase).toBe("TimedOut");
    expect(r.execution.status?.message).toContain("deadline of 4s");
    expect(r.execution.status?.children?.[0]?.phase).toBe("TimedOut");
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("cancel kills the running worker container and ends Cancelled", async () => {
    const agent = worker([{ type: "exit_code" }], 1);
    const execution = scriptedExecution(agent, `setInterval(() => {}, 1000);`);
    const workloads = new DockerWorkloads();
    try {
      const lr = new LocalRun({ execution, agent, judges: new Map(), workloads });
      const done = lr.run();
      // Wait until the worker container is really running, then cancel.
      for (let i = 0; i < 100; i++) {
        const ps = await runOk("docker", ["ps", "-q", "--filter", `label=gavel.dev/execution=${execution.metadata.name}`]);
        if (ps.trim() !== "") break;
        await new Promise((res) => setTimeout(res, 200));
      }
      lr.cancel();
      const r = await done;
      expect(r.execution.status?.phase).toBe("Cancelled");
      const left = await runOk("docker", ["ps", "-aq", "--filter", `label=gavel.dev/execution=${execution.metadata.name}`]);
      expect(left.trim()).toBe("");
    } finally {
      await workloads.removeAll();
    }
  });

  it("a worker past its iteration deadline is killed and the Execution fails with that reason", async () => {
    const agent = worker([{ type: "exit_code" }], 1);
    agent.spec.security = { network: { mode: "none" }, resources: { timeout: "2s" } };
    const started = Date.now();
    const r = await runScripted(agent, `setInterval(() => {}, 1000);`);
    expect(r.execution.status?.phase).toBe("Failed");
    expect(r.execution.status?.message).toContain("ran past its iteration deadline of 2s and was killed");
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
