// Tests of the outer loop state machine: iterations, validator order, feedback, judges,
// timeouts and cancellation, driven by hand-made observations (no runtime involved).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { Agent, Execution, ValidatorSpec } from "../api/types.js";
import {
  agentPlan,
  decide,
  fileKey,
  initialState,
  nextDeadline,
  observeFile,
  observeJudge,
  observeWorker,
  requestCancel,
  type AgentPlan,
  type EngineAction,
  type EngineContext,
  type EngineState,
} from "./outer-loop.js";
import { parseDurationSeconds, runLimits } from "./durations.js";
import { judgeChildName } from "./child-names.js";

const T0 = Date.parse("2026-01-01T00:00:00Z");

function agent(validation: ValidatorSpec[], extra: Partial<Agent["spec"]["execution"]> = {}, timeout?: string): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "worker" },
    spec: {
      execution: { mode: "iterative", max_iterations: 3, validation, ...extra },
      ...(timeout ? { security: { resources: { timeout } } } : {}),
    },
  };
}
function judge(name: string, network: "none" | "allow" = "none"): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, labels: { role: "judge" } },
    spec: { execution: { mode: "one-shot" }, security: { network: { mode: network }, resources: { timeout: "60s" } } },
  };
}
function execution(name = "ex1", extra: Partial<Execution["spec"]> = {}): Execution {
  return { apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { name }, spec: { agentRef: { name: "worker" }, ...extra } };
}
/** What the engine is handed for a run of `a`: the Agent's part (its plan) and the run's context. */
function runOf(a: Agent, judges: Agent[] = [], ex = execution()): { plan: AgentPlan; ctx: EngineContext } {
  return { plan: agentPlan(a, new Map(judges.map((j) => [j.metadata.name, j])), runLimits(ex, a)), ctx: { execution: ex } };
}
const ofType = <T extends EngineAction["type"]>(actions: EngineAction[], type: T) =>
  actions.filter((a): a is Extract<EngineAction, { type: T }> => a.type === type);
const events = (actions: EngineAction[]) => ofType(actions, "event").map((e) => e.event);

function worker(state: EngineState, exitCode: number, stdout = "", stderr = "") {
  observeWorker(state, { iteration: state.status.iteration ?? 0, exitCode, stdout, stderr, timedOut: false, cancelled: false });
}
const verdict = (score: number, confidence = 1, reasoning = "r") => ({ ok: true as const, result: { score, confidence, reasoning } });

describe("outer loop", () => {
  it("starts iteration 1 with no feedback and a deterministic worker name", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }]));
    const s = initialState();
    const actions = decide(plan, ctx, s, T0);
    expect(events(actions)).toEqual(["execution.started", "execution.phase", "iteration.started"]);
    const start = ofType(actions, "start_worker");
    expect(start).toEqual([{ type: "start_worker", name: "ex1-i1", iteration: 1, timeoutSeconds: 300 }]);
    expect(s.status.phase).toBe("Running");
    expect(decide(plan, ctx, s, T0 + 1)).toEqual([]); // nothing new, nothing to do
  });

  it("succeeds in one iteration when every validator passes; score is the lowest", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }, { type: "regex", pattern: "done" }]));
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0, "all done\n");
    const actions = decide(plan, ctx, s, T0 + 1000);
    expect(ofType(actions, "finish")).toEqual([
      { type: "finish", phase: "Succeeded", score: 1, message: "iteration 1 passed every validator" },
    ]);
    expect(s.status.iterations?.[0]).toMatchObject({ number: 1, phase: "Passed", exitCode: 0 });
    expect(s.status.iterations?.[0]?.validators?.map((v) => v.passed)).toEqual([true, true]);
    expect(decide(plan, ctx, s, T0 + 2000)).toEqual([]);
  });

  it("stops at the first failing validator and hands its reasoning and signals to the next iteration", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }, { type: "regex", pattern: "done" }, { type: "exit_code", expected: 0 }]));
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0, "not finished");
    const actions = decide(plan, ctx, s, T0 + 1000);
    const rec = s.status.iterations?.[0];
    expect(rec?.phase).toBe("Refining");
    expect(rec?.validators?.map((v) => v.index)).toEqual([0, 1]); // validator 2 never ran
    const start = ofType(actions, "start_worker")[0];
    expect(start?.iteration).toBe(2);
    expect(start?.name).toBe("ex1-i2");
    expect(start?.feedback).toContain("Iteration 1 failed validator 1 (regex)");
    expect(start?.feedback).toContain("stdout does not match /done/");
    expect(start?.feedback).toContain("Signals:\n- regex (0.00)");
    expect(s.status.phase).toBe("Refining");
    expect(s.status.iterations?.[1]?.feedback).toBe(start?.feedback);
    expect(s.status.score).toBe(0);
    // iteration 2 passes
    worker(s, 0, "done");
    decide(plan, ctx, s, T0 + 2000);
    expect(s.status.phase).toBe("Succeeded");
    expect(s.status.iteration).toBe(2);
    expect(s.status.score).toBe(1);
  });

  it("fails when max_iterations is exhausted, and one-shot means a single iteration", () => {
    for (const [extra, n] of [
      [{ max_iterations: 2 }, 2],
      [{ mode: "one-shot" as const, max_iterations: 5 }, 1],
    ] as const) {
      const { plan, ctx } = runOf(agent([{ type: "exit_code" }], extra));
      const s = initialState();
      decide(plan, ctx, s, T0);
      for (let i = 0; i < 10 && s.status.phase !== "Failed"; i++) {
        worker(s, 1, "", "boom");
        decide(plan, ctx, s, T0 + i);
      }
      expect(s.status.phase).toBe("Failed");
      expect(s.status.iterations).toHaveLength(n);
      expect(s.status.message).toContain(`max_iterations ${n}`);
      expect(s.status.message).toContain("exit code 1, expected 0");
    }
  });

  it("reads workspace and image files for json_schema and file regex, once, and validates their content", () => {
    const a = agent([
      { type: "json_schema", target_path: "/workspace/out.json", schema_path: "/agent/schema.json" },
      { type: "regex", pattern: "^ok", target: "/workspace/log.txt" },
    ]);
    const { plan, ctx } = runOf(a);
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0);
    const a1 = decide(plan, ctx, s, T0 + 1);
    expect(ofType(a1, "read_files")).toEqual([
      {
        type: "read_files",
        iteration: 1,
        validatorIndex: 0,
        files: [
          { key: "workspace:/workspace/out.json", path: "/workspace/out.json", from: "workspace" },
          { key: "image:/agent/schema.json", path: "/agent/schema.json", from: "image" },
        ],
      },
    ]);
    expect(decide(plan, ctx, s, T0 + 2)).toEqual([]); // not asked twice
    observeFile(s, fileKey("workspace", "/workspace/out.json"), { ok: true, content: '{"n": 1}' });
    observeFile(s, fileKey("image", "/agent/schema.json"), { ok: true, content: '{"type":"object","required":["n"]}' });
    const a2 = decide(plan, ctx, s, T0 + 3);
    expect(ofType(a2, "read_files")[0]?.files.map((f) => f.path)).toEqual(["/workspace/log.txt"]);
    observeFile(s, fileKey("workspace", "/workspace/log.txt"), { ok: false, reason: "missing", detail: "" });
    decide(plan, ctx, s, T0 + 4);
    expect(s.status.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([
      ["json_schema", true],
      ["regex", false],
    ]);
    expect(s.status.iterations?.[1]?.feedback).toContain("/workspace/log.txt does not exist");
  });

  it("spawns a semantic judge child with a deterministic name, its network and deadline, then applies thresholds", () => {
    const { plan, ctx } = runOf(agent([{ type: "semantic", judge_agent: "quality", min_score: 0.8, min_confidence: 0.7 }]), [
      judge("quality"),
    ]);
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0, "output");
    const a1 = decide(plan, ctx, s, T0 + 1);
    const spawn = ofType(a1, "spawn_judge");
    expect(spawn).toHaveLength(1);
    expect(spawn[0]?.child).toMatchObject({ name: "ex1-i1-v0-quality", judge: "quality", depth: 1, timeoutSeconds: 60, network: "none" });
    expect(s.status.children).toEqual([
      { name: "ex1-i1-v0-quality", purpose: "validation", iteration: 1, validatorIndex: 0, judge: "quality", phase: "Running" },
    ]);
    observeJudge(s, "ex1-i1-v0-quality", verdict(0.9, 0.6, "unsure"));
    const a2 = decide(plan, ctx, s, T0 + 2);
    expect(events(a2)).toContain("judge.finished");
    const v = s.status.iterations?.[0]?.validators?.[0];
    expect(v).toMatchObject({ passed: false, score: 0.9, confidence: 0.6, children: ["ex1-i1-v0-quality"] });
    expect(v?.reasoning).toContain("confidence 0.60 is below min_confidence 0.70");
    expect(s.status.children?.[0]?.phase).toBe("Succeeded");
    // iteration 2 gets a new child with a new name
    worker(s, 0, "better");
    const a3 = decide(plan, ctx, s, T0 + 3);
    expect(ofType(a3, "spawn_judge")[0]?.child.name).toBe("ex1-i2-v0-quality");
    observeJudge(s, "ex1-i2-v0-quality", verdict(0.85, 0.9));
    decide(plan, ctx, s, T0 + 4);
    expect(s.status.phase).toBe("Succeeded");
    expect(s.status.score).toBe(0.85);
  });

  it("treats each judge rejection as a failing score, even with zero thresholds", () => {
    for (const rejection of ["malformed_output", "failed", "cancelled", "timed_out"] as const) {
      const { plan, ctx } = runOf(agent([{ type: "semantic", judge_agent: "j", min_score: 0, min_confidence: 0 }], { max_iterations: 1 }), [
        judge("j"),
      ]);
      const s = initialState();
      decide(plan, ctx, s, T0);
      worker(s, 0);
      decide(plan, ctx, s, T0 + 1);
      observeJudge(s, "ex1-i1-v0-j", { ok: false, rejection, detail: "d" });
      decide(plan, ctx, s, T0 + 2);
      expect(s.status.phase).toBe("Failed");
      const v = s.status.iterations?.[0]?.validators?.[0];
      expect(v).toMatchObject({ passed: false, score: 0, confidence: 0 });
      expect(v?.reasoning).toContain(rejection);
      expect(s.status.children?.[0]?.phase).toBe(
        rejection === "timed_out" ? "TimedOut" : rejection === "cancelled" ? "Cancelled" : "Failed",
      );
    }
  });

  it("runs multi_judge children in parallel and waits for all before aggregating", () => {
    const { plan, ctx } = runOf(agent([{ type: "multi_judge", judges: ["a", "b"], min_score: 0.5 }]), [judge("a"), judge("b", "allow")]);
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0);
    const spawns = ofType(decide(plan, ctx, s, T0 + 1), "spawn_judge");
    expect(spawns.map((x) => [x.child.name, x.child.network])).toEqual([
      ["ex1-i1-v0-a", "none"],
      ["ex1-i1-v0-b", "allow"],
    ]);
    observeJudge(s, "ex1-i1-v0-a", verdict(0.4));
    decide(plan, ctx, s, T0 + 2);
    expect(s.status.iterations?.[0]?.validators).toEqual([]);
    observeJudge(s, "ex1-i1-v0-b", verdict(0.8));
    decide(plan, ctx, s, T0 + 3);
    expect(s.status.phase).toBe("Succeeded");
    expect(s.status.iterations?.[0]?.validators?.[0]?.children).toEqual(["ex1-i1-v0-a", "ex1-i1-v0-b"]);
  });

  it("uses the injected consensus and counts an unknown judge as a failed vote", () => {
    let seen: unknown;
    const { plan: base, ctx } = runOf(agent([{ type: "multi_judge", judges: ["a", "ghost"] }], { max_iterations: 1 }), [judge("a")]);
    const plan: AgentPlan = {
      ...base,
      aggregate: (_spec, votes) => {
        seen = votes;
        return { score: 0.3, confidence: 1, reasoning: "custom", signals: [], passed: false };
      },
    };
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0);
    const spawns = ofType(decide(plan, ctx, s, T0 + 1), "spawn_judge");
    expect(spawns.map((x) => x.child.judge)).toEqual(["a"]);
    observeJudge(s, "ex1-i1-v0-a", verdict(1));
    decide(plan, ctx, s, T0 + 2);
    expect(seen).toEqual([
      { judge: "a", result: { score: 1, confidence: 1, reasoning: "r" } },
      { judge: "ghost", rejection: "failed" },
    ]);
    expect(s.status).toMatchObject({ phase: "Failed", score: 0.3 });
  });

  it("refuses judges deeper than 3", () => {
    const parent = { name: "p", uid: "u", purpose: "validation" as const, iteration: 1, validatorIndex: 0, depth: 3 };
    const { plan, ctx } = runOf(
      agent([{ type: "semantic", judge_agent: "j" }], { max_iterations: 1 }),
      [judge("j")],
      execution("deep", { parent }),
    );
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0);
    const actions = decide(plan, ctx, s, T0 + 1);
    expect(ofType(actions, "spawn_judge")).toEqual([]);
    expect(s.status.message).toContain("limited to a depth of 3");
  });

  it("a worker killed at its deadline fails the iteration with that reason as feedback", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }], {}, "30s"));
    const s = initialState();
    expect(ofType(decide(plan, ctx, s, T0), "start_worker")[0]?.timeoutSeconds).toBe(30);
    observeWorker(s, { iteration: 1, exitCode: 137, stdout: "", stderr: "", timedOut: true, cancelled: false });
    const actions = decide(plan, ctx, s, T0 + 30_000);
    expect(ofType(actions, "start_worker")[0]?.feedback).toContain("ran past its iteration deadline of 30s");
  });

  it("a worker that exits 75 with its gate_unreachable line fails the iteration as an unreachable gate, not through its validators", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }], { max_iterations: 2 }));
    const s = initialState();
    decide(plan, ctx, s, T0);
    const line = JSON.stringify({
      component: "gavel-agent",
      event: "gate_unreachable",
      seconds: 27,
      detail: "NATS at nats://gavel-nats:4222: connection refused (9 attempt(s))",
    });
    worker(s, 75, "", `{"event":"start"}\n${line}\n`);
    const actions = decide(plan, ctx, s, T0 + 27_000);
    const finished = ofType(actions, "event").find((e) => e.event === "worker.finished");
    expect(finished?.data.gateUnreachable).toMatch(
      /^the tool-call gate could not be reached for 27 s \(NATS at nats:\/\/gavel-nats:4222: connection refused/,
    );
    expect(events(actions)).not.toContain("validator.started");
    const feedback = ofType(actions, "start_worker")[0]?.feedback ?? "";
    expect(feedback).toContain("could not be reached for 27 s");
    expect(feedback).not.toContain("exit code 75, expected 0");
    // The last iteration's outcome is the Execution's message.
    worker(s, 75, "", line);
    decide(plan, ctx, s, T0 + 60_000);
    expect(s.status.phase).toBe("Failed");
    expect(s.status.message).toMatch(/last the tool-call gate could not be reached for 27 s/);
  });

  it("exit 75 without the gate_unreachable line is the agent's own exit code, judged by its validators", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }], { max_iterations: 1 }));
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 75, "", "my own tempfail\n");
    const actions = decide(plan, ctx, s, T0 + 1);
    expect(events(actions)).toContain("validator.started");
    expect(s.status.message).toContain("exit code 75, expected 0");
  });

  it("declares a silent worker timed out itself past the deadline plus grace, and stops it", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }], {}, "30s"));
    const s = initialState();
    decide(plan, ctx, s, T0);
    expect(nextDeadline(plan, s)).toBe(T0 + 40_000);
    expect(decide(plan, ctx, s, T0 + 39_999)).toEqual([]);
    const actions = decide(plan, ctx, s, T0 + 40_000);
    expect(ofType(actions, "stop")).toEqual([{ type: "stop", names: ["ex1-i1"], reason: "timed_out" }]);
    expect(s.status.iteration).toBe(2);
    // a late report of iteration 1 is ignored
    observeWorker(s, { iteration: 1, exitCode: 0, stdout: "", stderr: "", timedOut: false, cancelled: false });
    expect(s.worker).toBeUndefined();
  });

  it("times the whole execution out, stopping the worker and running judges", () => {
    const { plan, ctx } = runOf(agent([{ type: "semantic", judge_agent: "j" }]), [judge("j")], execution("ex1", { timeoutSeconds: 5 }));
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 0);
    decide(plan, ctx, s, T0 + 1000);
    expect(nextDeadline(plan, s)).toBe(T0 + 5000);
    const actions = decide(plan, ctx, s, T0 + 5000);
    expect(ofType(actions, "stop")).toEqual([{ type: "stop", names: ["ex1-i1-v0-j"], reason: "timed_out" }]);
    expect(s.status.phase).toBe("TimedOut");
    expect(s.status.children?.[0]?.phase).toBe("TimedOut");
    expect(s.status.iterations?.[0]?.phase).toBe("Failed");
    expect(decide(plan, ctx, s, T0 + 6000)).toEqual([]);
  });

  it("cancels: stops the running worker and finishes Cancelled", () => {
    const { plan, ctx } = runOf(agent([{ type: "exit_code" }]));
    const s = initialState();
    decide(plan, ctx, s, T0);
    requestCancel(s);
    const actions = decide(plan, ctx, s, T0 + 1);
    expect(ofType(actions, "stop")).toEqual([{ type: "stop", names: ["ex1-i1"], reason: "cancelled" }]);
    expect(ofType(actions, "finish")[0]?.phase).toBe("Cancelled");
    expect(events(actions)).toEqual(["iteration.finished", "execution.phase"]);
    expect(s.status.iterations?.[0]?.phase).toBe("Failed");
    const s2 = initialState();
    requestCancel(s2);
    expect(ofType(decide(plan, ctx, s2, T0), "start_worker")).toEqual([]);
    expect(s2.status.phase).toBe("Cancelled");
  });

  it("with no validators the first iteration succeeds", () => {
    const { plan, ctx } = runOf(agent([]));
    const s = initialState();
    decide(plan, ctx, s, T0);
    worker(s, 3);
    decide(plan, ctx, s, T0 + 1);
    expect(s.status).toMatchObject({ phase: "Succeeded", score: 1 });
  });
});

describe("durations and names", () => {
  it("parses Kubernetes-style durations", () => {
    expect(parseDurationSeconds("60s")).toBe(60);
    expect(parseDurationSeconds("1h30m")).toBe(5400);
    expect(parseDurationSeconds("1.5m")).toBe(90);
    expect(parseDurationSeconds("500ms")).toBe(0.5);
    expect(parseDurationSeconds("45")).toBe(45);
    expect(parseDurationSeconds(12)).toBe(12);
    expect(parseDurationSeconds("soon")).toBeUndefined();
    expect(parseDurationSeconds("10x")).toBeUndefined();
    expect(parseDurationSeconds("0s")).toBeUndefined();
  });
  it("names judge children <exec>-i<N>-v<k>-<judge>, DNS-safe", () => {
    expect(judgeChildName("Ex_1", 2, 0, "Code.Quality")).toBe("ex-1-i2-v0-code-quality");
  });
});

describe("outer loop properties", () => {
  // Each iteration: exit code, then per validator a score the simulated judge returns.
  const scenario = fc.record({
    max: fc.integer({ min: 1, max: 5 }),
    minScores: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 4 }),
    runs: fc.array(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 4, maxLength: 4 }), { minLength: 5, maxLength: 5 }),
  });

  it("ends Succeeded iff some iteration passes all validators; never exceeds max; score is the lowest recorded", () => {
    fc.assert(
      fc.property(scenario, ({ max, minScores, runs }) => {
        const specs: ValidatorSpec[] = minScores.map((m, i) => ({ type: "semantic", judge_agent: `j${i}`, min_score: m }));
        const { plan, ctx } = runOf(
          agent(specs, { max_iterations: max }),
          minScores.map((_, i) => judge(`j${i}`)),
        );
        const s = initialState();
        let t = T0;
        let pending = decide(plan, ctx, s, t);
        for (let guard = 0; guard < 100 && !["Succeeded", "Failed"].includes(s.status.phase ?? ""); guard++) {
          const n = s.status.iteration ?? 1;
          const scores = runs[n - 1] as number[];
          if (ofType(pending, "start_worker").length > 0) worker(s, 0);
          for (const sp of ofType(pending, "spawn_judge"))
            observeJudge(s, sp.child.name, verdict(scores[sp.child.validatorIndex] as number));
          pending = decide(plan, ctx, s, ++t);
        }
        const iterations = s.status.iterations ?? [];
        expect(iterations.length).toBeLessThanOrEqual(max);
        const expectedPass = runs.slice(0, max).findIndex((scores) => minScores.every((m, i) => (scores[i] as number) >= m));
        if (expectedPass >= 0) {
          expect(s.status.phase).toBe("Succeeded");
          expect(iterations).toHaveLength(expectedPass + 1);
        } else {
          expect(s.status.phase).toBe("Failed");
          expect(iterations).toHaveLength(max);
        }
        const last = iterations[iterations.length - 1];
        const recorded = last?.validators ?? [];
        expect(s.status.score).toBe(Math.min(1, ...recorded.map((v) => v.score)));
        // stops at the first failure: only the last recorded validator may have failed
        expect(recorded.slice(0, -1).every((v) => v.passed)).toBe(true);
        // every iteration after the first carries feedback naming the previous one
        iterations.slice(1).forEach((it, i) => expect(it.feedback).toContain(`Iteration ${i + 1} failed`));
        // every child name is unique and deterministic
        const names = (s.status.children ?? []).map((c) => c.name);
        expect(new Set(names).size).toBe(names.length);
      }),
      { numRuns: 300 },
    );
  });
});
