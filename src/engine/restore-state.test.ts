// The Kubernetes driver keeps no memory between reconciles: these tests run the outer loop
// once with the engine's state kept (as local mode does) and once rebuilt with restoreState
// from a JSON copy of the status at every step (as a restarted controller would), and compare.
import { describe, expect, it } from "vitest";
import type { Agent, Execution, ExecutionStatus, ValidatorSpec } from "../api/types.js";
import { validationJudgeChild } from "../children/child-executions.js";
import { ownerMarks } from "../children/workloads.js";
import type { JudgeOutcome } from "./gradient.js";
import {
  agentPlan,
  decide,
  fileKey,
  initialState,
  isTerminal,
  observeFile,
  observeJudge,
  observeWorker,
  restoreState,
  type AgentPlan,
  type EngineAction,
  type WorkerObservation,
} from "./outer-loop.js";
import { runLimits } from "./durations.js";
import { judgeStatus, outcomeOfStatus } from "./phases.js";

const T0 = Date.parse("2026-11-23T10:00:00Z");

function agent(validation: ValidatorSpec[], max = 3): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name: "worker" },
    spec: { execution: { mode: "iterative", max_iterations: max, validation } },
  };
}
function judge(name: string): Agent {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name, labels: { role: "judge" } },
    spec: { runtime: { image: `gavel/${name}:dev` }, execution: { mode: "one-shot" } },
  };
}
const execution: Execution = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Execution",
  metadata: { name: "ex1", namespace: "ns", uid: "u-1" },
  spec: { agentRef: { name: "worker" } },
};

/** What the world does: the worker of iteration N and the outcome of each judge child. */
interface World {
  worker(iteration: number): Omit<WorkerObservation, "iteration">;
  judge(child: string, iteration: number): JudgeOutcome;
  file(key: string, iteration: number): string | undefined;
}

const VALIDATORS: ValidatorSpec[] = [
  { type: "exit_code" },
  { type: "json_schema", target_path: "/workspace/report.json", schema: { type: "object", required: ["ok"] } },
  { type: "semantic", judge_agent: "rule-judge", criteria: "file_exists: sum.js", min_score: 1 },
  { type: "multi_judge", judges: ["rule-judge", "command-judge"], consensus: "unanimous", min_score: 0.8 },
];
const JUDGES = new Map([judge("rule-judge"), judge("command-judge")].map((j) => [j.metadata.name, j]));

// Iteration 1 fails its multi_judge (command-judge says 0.3), iteration 2 passes everything.
const world: World = {
  worker: (n) => ({ exitCode: 0, stdout: `iteration ${n}\n`, stderr: "", timedOut: false, cancelled: false }),
  judge: (child, n) =>
    child.endsWith("command-judge") && n === 1
      ? { ok: true, result: { score: 0.3, confidence: 0.9, reasoning: "1 of 2 tests fail" } }
      : { ok: true, result: { score: 1, confidence: 1, reasoning: "fine" } },
  file: (key) => (key === fileKey("workspace", "/workspace/report.json") ? '{"ok":true}' : undefined),
};

interface Run {
  status: ExecutionStatus;
  started: string[];
  spawned: string[];
}

function perform(state: ReturnType<typeof initialState>, a: EngineAction, w: World, t: { started: string[]; spawned: string[] }): boolean {
  if (a.type === "start_worker") t.started.push(a.name);
  if (a.type === "spawn_judge") t.spawned.push(a.child.name);
  if (a.type === "read_files") {
    for (const f of a.files) {
      const text = w.file(f.key, a.iteration);
      observeFile(
        state,
        f.key,
        text === undefined ? { ok: false, reason: "missing", detail: "no such file" } : { ok: true, content: text },
      );
    }
    return true;
  }
  return false;
}

/** Local-mode style: one state, observations folded in as they come. */
/** What the engine is handed for a run of `a` with the shared judges: its plan, and the Agent the judge payload names. */
function planOf(a: Agent): { plan: AgentPlan; agent: Agent } {
  return { plan: agentPlan(a, JUDGES, runLimits(execution, a)), agent: a };
}

function runKept({ plan }: { plan: AgentPlan }, w: World): Run {
  const ctx = { execution };
  const state = initialState();
  const t = { started: [] as string[], spawned: [] as string[] };
  let now = T0;
  const pendingJudges: { name: string; iteration: number }[] = [];
  let pendingWorker: number | undefined;
  for (let step = 0; step < 200 && !isTerminal(state.status.phase); step++) {
    if (pendingWorker !== undefined) observeWorker(state, { iteration: pendingWorker, ...w.worker(pendingWorker) });
    pendingWorker = undefined;
    for (const j of pendingJudges.splice(0)) observeJudge(state, j.name, w.judge(j.name, j.iteration));
    for (let again = true; again;) {
      again = false;
      for (const a of decide(plan, ctx, state, now)) {
        again = perform(state, a, w, t) || again;
        if (a.type === "start_worker") pendingWorker = a.iteration;
        if (a.type === "spawn_judge") pendingJudges.push({ name: a.child.name, iteration: a.child.iteration });
      }
    }
    now += 1000;
  }
  return { status: state.status, ...t };
}

/** Controller style: nothing kept but the status (as JSON), the stored worker results and the child objects. */
function runRebuilt({ plan, agent }: { plan: AgentPlan; agent: Agent }, w: World): Run {
  let status: ExecutionStatus | undefined;
  const results = new Map<number, WorkerObservation>();
  const children = new Map<string, Execution>();
  const t = { started: [] as string[], spawned: [] as string[] };
  let now = T0;
  for (let step = 0; step < 200 && !isTerminal(status?.phase); step++) {
    const ex: Execution = {
      ...execution,
      ...(status !== undefined ? { status: JSON.parse(JSON.stringify(status)) as ExecutionStatus } : {}),
    };
    const worker = status?.iteration === undefined ? undefined : results.get(status.iteration);
    const judges = new Map([...children].map(([name, child]) => [name, outcomeOfStatus(child.status) ?? null]));
    const { state, respawn } = restoreState(plan, { execution: ex }, { ...(worker !== undefined ? { worker } : {}), judges });
    expect(respawn).toEqual([]);
    for (let again = true; again;) {
      again = false;
      for (const a of decide(plan, { execution: ex }, state, now)) {
        again = perform(state, a, w, t) || again;
        // The pod and the child run between reconciles; their results are what the next one finds.
        if (a.type === "start_worker") results.set(a.iteration, { iteration: a.iteration, ...w.worker(a.iteration) });
        if (a.type === "spawn_judge") {
          const { execution: child } = validationJudgeChild({
            parent: ex,
            owner: ownerMarks(ex),
            worker: agent,
            judge: plan.judges.get(a.child.judge),
            request: a.child,
            output: "",
            workerMounts: [],
          });
          child.status = judgeStatus(undefined, w.judge(a.child.name, a.child.iteration), new Date(now));
          children.set(a.child.name, child);
        }
      }
    }
    status = state.status;
    now += 1000;
  }
  return { status: status ?? {}, ...t };
}

describe("restoreState: the status is the controller's whole memory", () => {
  it("a run rebuilt from its status at every step ends exactly as one that kept its state, starting nothing twice", () => {
    const run = planOf(agent(VALIDATORS));
    const kept = runKept(run, world);
    const rebuilt = runRebuilt(run, world);

    expect(kept.status.phase).toBe("Succeeded");
    expect(kept.status.iterations?.map((i) => i.phase)).toEqual(["Refining", "Passed"]);
    expect(rebuilt.status).toEqual(kept.status);
    expect(rebuilt.started).toEqual(["ex1-i1", "ex1-i2"]);
    expect(rebuilt.spawned).toEqual(kept.spawned);
    expect(new Set(rebuilt.spawned).size).toBe(rebuilt.spawned.length);
    expect(rebuilt.spawned).toEqual([
      "ex1-i1-v2-rule-judge",
      "ex1-i1-v3-rule-judge",
      "ex1-i1-v3-command-judge",
      "ex1-i2-v2-rule-judge",
      "ex1-i2-v3-rule-judge",
      "ex1-i2-v3-command-judge",
    ]);
    // The feedback of iteration 2 came from the failing multi_judge of iteration 1
    expect(rebuilt.status.iterations?.[1]?.feedback).toMatch(/multi_judge/);
  });

  it("a failing run ends Failed after max_iterations either way", () => {
    const failing: World = { ...world, judge: () => ({ ok: false, rejection: "malformed_output", detail: "no JSON" }) };
    const run = planOf(agent(VALIDATORS.slice(0, 3), 2));
    const kept = runKept(run, failing);
    const rebuilt = runRebuilt(run, failing);
    expect(kept.status.phase).toBe("Failed");
    expect(rebuilt.status).toEqual(kept.status);
    expect(rebuilt.status.children?.map((c) => c.phase)).toEqual(["Failed", "Failed"]);
  });

  it("reports recorded Running children whose objects are missing, and folds an unknown judge without an object", () => {
    const { plan } = planOf(agent([{ type: "multi_judge", judges: ["rule-judge", "ghost"], min_judges_required: 1 }]));
    const ctx = { execution };
    const state = initialState();
    decide(plan, ctx, state, T0);
    observeWorker(state, { iteration: 1, exitCode: 0, stdout: "", stderr: "", timedOut: false, cancelled: false });
    const actions = decide(plan, ctx, state, T0 + 1);
    expect(actions.filter((a) => a.type === "spawn_judge")).toHaveLength(1);
    const ex: Execution = { ...execution, status: JSON.parse(JSON.stringify(state.status)) as ExecutionStatus };
    const { state: again, respawn } = restoreState(
      plan,
      { execution: ex },
      { worker: { iteration: 1, exitCode: 0, stdout: "", stderr: "", timedOut: false, cancelled: false }, judges: new Map() },
    );
    // The engine hands back the request of the recorded child whose object is missing, as it made it the first time.
    expect(respawn).toEqual(actions.filter((a) => a.type === "spawn_judge").map((a) => a.child));
    expect(respawn[0]).toMatchObject({
      name: "ex1-i1-v0-rule-judge",
      judge: "rule-judge",
      iteration: 1,
      validatorIndex: 0,
      depth: 1,
      network: "none",
    });
    expect(again.judgeResults.get("ex1-i1-v0-ghost")).toMatchObject({ ok: false, rejection: "failed" });
    // Nothing is spawned again by decide; the driver recreates the missing object from `respawn`.
    expect(decide(plan, { execution: ex }, again, T0 + 2).filter((a) => a.type === "spawn_judge")).toEqual([]);
  });

  it("a validator whose files arrive a reconcile later (a reader pod) is started once, not once per reconcile", () => {
    const { plan } = planOf(agent(VALIDATORS.slice(0, 2)));
    const ctx = { execution };
    const worker: WorkerObservation = { iteration: 1, exitCode: 0, stdout: "", stderr: "", timedOut: false, cancelled: false };
    const started = (actions: EngineAction[]) =>
      actions.flatMap((a) => (a.type === "event" && a.event === "validator.started" ? [a.data.index] : []));
    const rebuilt = (status: ExecutionStatus) =>
      restoreState(
        plan,
        { execution: { ...execution, status: JSON.parse(JSON.stringify(status)) as ExecutionStatus } },
        { worker, judges: new Map() },
      ).state;
    const first = initialState();
    decide(plan, ctx, first, T0);
    // The worker ended: exit_code passes, json_schema asks for its file and waits.
    const second = rebuilt(first.status);
    const reading = decide(plan, ctx, second, T0 + 1000);
    expect(started(reading)).toEqual([0, 1]);
    expect(reading.filter((a) => a.type === "read_files")).toHaveLength(1);
    // The next reconciles, the reader still running: the read is asked again (level-triggered), the start is not told again.
    const third = rebuilt(second.status);
    const again = decide(plan, ctx, third, T0 + 2000);
    expect(started(again)).toEqual([]);
    expect(again.filter((a) => a.type === "read_files")).toHaveLength(1);
    // The reader's content arrives: the validator ends, still without a second start.
    const fourth = rebuilt(third.status);
    observeFile(fourth, fileKey("workspace", "/workspace/report.json"), { ok: true, content: '{"ok":true}' });
    const done = decide(plan, ctx, fourth, T0 + 3000);
    expect(started(done)).toEqual([]);
    expect(fourth.status.phase).toBe("Succeeded");
  });

  it("a fresh Execution rebuilds to the initial state", () => {
    const { state } = restoreState(planOf(agent(VALIDATORS)).plan, { execution }, { judges: new Map() });
    expect(state.status).toEqual({ phase: "Pending" });
    expect(state.startedAtMs).toBeUndefined();
  });
});
