// Traces of a local run, read back from a real OTLP receiver (Jaeger, built from the Go module
// proxy): gavel run with OTEL_EXPORTER_OTLP_ENDPOINT set exports one trace per Execution whose
// tree is the run's: iteration, validators, the validation judge, and each tool call's
// execute_tool span under the iteration (the worker's TRACEPARENT crossed NATS in the proposal's
// header), a judged call with its judge's invoke_agent span; never an argument value.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { eventually } from "../harness/eventually.js";
import { run, runOk } from "../harness/exec.js";
import { startJaeger, type Jaeger, type JaegerSpan } from "../harness/jaeger.js";
import { HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

// Argument values that must never reach a span, an attribute or an event.
const CONTENT = "traced-content-q7x9";
const PATH = "/workspace/traced-note-k3v8.txt";
const COMMAND = "rm -rf /";

const SCRIPT = `- say: "writing the note, then cleaning up"
  tool_calls:
    - tool: fs.write
      args: { path: ${PATH}, content: "${CONTENT}" }
      intent: write the note
    - tool: cmd.run
      args: { command: "${COMMAND}" }
      intent: clean up
- final: "wrote the note"
`;

const WORKER = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: traced-agent }
spec:
  runtime: { image: gavel/test-traced-agent:dev, pull_policy: Never }
  task: { instruction: "write a note to the workspace" }
  tools:
    - fs.write
    - name: cmd.run
      allowlist: ["rm", "ls"]
  security: { resources: { timeout: "60s" } }
  execution:
    mode: one-shot
    tool_validation:
      - type: semantic
        judge_agent: rule-judge
        min_score: 0.5
    validation:
      - type: exit_code
      - type: semantic
        judge_agent: rule-judge
        min_score: 0.5
        criteria: |
          contains: wrote
`;

const tag = (s: JaegerSpan, key: string): unknown => s.tags.find((t) => t.key === key)?.value;
const parentOf = (s: JaegerSpan): string | undefined => s.references.find((r) => r.refType === "CHILD_OF")?.spanID;
const evaluations = (s: JaegerSpan) =>
  s.logs
    .filter((l) => l.fields.some((f) => f.key === "event" && f.value === "gen_ai.evaluation.result"))
    .map((l) => Object.fromEntries(l.fields.map((f) => [f.key, f.value])));

describe("traces of a local run (gavel run -> OTLP -> real Jaeger)", () => {
  let dir: string;
  let jaeger: Jaeger;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "build-jaeger.sh"), []);
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    jaeger = await startJaeger();
    dir = await mkdtemp(join(tmpdir(), "gavel-traces-"));
    await writeFile(join(dir, "script.yaml"), SCRIPT);
    await writeFile(
      join(dir, "Dockerfile"),
      "FROM gavel/agent:dev\nCOPY script.yaml /agent/script.yaml\nENV GAVEL_SCRIPT_FILE=/agent/script.yaml\n",
    );
    await runOk("docker", ["build", "-q", "-t", "gavel/test-traced-agent:dev", dir]);
    await writeFile(join(dir, "worker.yaml"), WORKER);
  }, 900_000);
  afterAll(async () => {
    await jaeger?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("one trace per Execution: iteration, validators, judges as invoke_agent, tool calls as execute_tool under the iteration, verdicts as evaluation events", async () => {
    const service = `gavel-traces-${process.pid}`;
    const r = await run(
      join(REPO_DIR, "bin/gavel"),
      ["run", "--output", "json", "-f", join(dir, "worker.yaml"), "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")],
      {
        env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_SERVICE_NAME: service },
      },
    );
    expect(r.code, r.stderr).toBe(0);
    const ex = JSON.parse(r.stdout) as Execution;
    expect(ex.status?.phase).toBe("Succeeded");

    // gavel run flushes before it exits: the trace is there (Jaeger indexes it within moments).
    const [found, ...more] = await eventually(
      async () => ((await jaeger.traces(service)).length > 0 ? jaeger.traces(service) : undefined),
      30_000,
      `a trace of ${service}`,
    );
    expect(more).toHaveLength(0);
    // root, iteration, 2 validators, 2 judges, 2 tool calls
    const trace = await jaeger.trace(found?.traceID ?? "", 8);
    const spans = trace.spans;
    const byName = (n: string) => spans.filter((s) => s.operationName === n);

    const [root, ...roots] = spans.filter((s) => parentOf(s) === undefined);
    expect(roots).toHaveLength(0);
    expect(root?.operationName).toBe("invoke_agent traced-agent");
    expect(tag(root as JaegerSpan, "gen_ai.operation.name")).toBe("invoke_agent");
    expect(tag(root as JaegerSpan, "gen_ai.agent.name")).toBe("traced-agent");
    expect(tag(root as JaegerSpan, "gavel.execution.name")).toBe(ex.metadata.name);
    expect(tag(root as JaegerSpan, "gavel.execution.phase")).toBe("Succeeded");

    const [iteration, ...iterations] = byName("iteration");
    expect(iterations).toHaveLength(0);
    expect(parentOf(iteration as JaegerSpan)).toBe(root?.spanID);
    expect(tag(iteration as JaegerSpan, "gavel.iteration")).toBe(1);
    expect(tag(iteration as JaegerSpan, "gavel.iteration.outcome")).toBe("passed");

    // Validators under the iteration, the validation judge under its validator.
    const exitCode = byName("validate exit_code");
    const semantic = byName("validate semantic");
    expect(exitCode.map(parentOf)).toEqual([iteration?.spanID]);
    expect(semantic.map(parentOf)).toEqual([iteration?.spanID]);
    const judges = byName("invoke_agent rule-judge");
    const validationJudge = judges.filter((s) => tag(s, "gavel.judge.purpose") === "validation");
    expect(validationJudge.map(parentOf)).toEqual([semantic[0]?.spanID]);
    expect(tag(validationJudge[0] as JaegerSpan, "gen_ai.operation.name")).toBe("invoke_agent");

    // Each verdict of the outer loop is an evaluation event on the iteration it judged.
    const evals = evaluations(iteration as JaegerSpan);
    expect(evals.map((e) => e["gen_ai.evaluation.name"]).sort()).toEqual(["exit_code", "rule-judge", "semantic"]);
    expect(evals.find((e) => e["gen_ai.evaluation.name"] === "semantic")).toMatchObject({ "gen_ai.evaluation.score.label": "pass" });

    // Tool calls: execute_tool spans under the iteration (context crossed NATS in the header).
    const write = byName("execute_tool fs.write");
    const cmd = byName("execute_tool cmd.run");
    expect(write.map(parentOf)).toEqual([iteration?.spanID]);
    expect(cmd.map(parentOf)).toEqual([iteration?.spanID]);
    expect(
      Object.fromEntries(
        ["gen_ai.operation.name", "gen_ai.tool.name", "gavel.guard.decision", "gavel.guard.decided_by", "gavel.guard.check"].map((k) => [
          k,
          tag(write[0] as JaegerSpan, k),
        ]),
      ),
    ).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "fs.write",
      "gavel.guard.decision": "allowed",
      "gavel.guard.decided_by": "judge",
      "gavel.guard.check": "none",
    });
    expect(tag(write[0] as JaegerSpan, "gen_ai.tool.call.id")).toEqual(expect.any(String));
    expect(
      Object.fromEntries(
        ["gavel.guard.decision", "gavel.guard.decided_by", "gavel.guard.check"].map((k) => [k, tag(cmd[0] as JaegerSpan, k)]),
      ),
    ).toEqual({
      "gavel.guard.decision": "blocked",
      "gavel.guard.decided_by": "guard",
      "gavel.guard.check": "destructive_pattern",
    });
    // The judged call's judge under its span, its verdict an evaluation event on the call.
    const toolJudge = judges.filter((s) => tag(s, "gavel.judge.purpose") === "tool_validation");
    expect(toolJudge.map(parentOf)).toEqual([write[0]?.spanID]);
    expect(evaluations(write[0] as JaegerSpan)).toEqual([
      expect.objectContaining({ "gen_ai.evaluation.name": "rule-judge", "gen_ai.evaluation.score.label": "pass" }),
    ]);

    // Never an argument value: not in a name, an attribute or an event.
    const text = JSON.stringify(trace);
    for (const value of [CONTENT, PATH, COMMAND]) expect(text).not.toContain(value);
  });
});
