// The judge child's engine: what both drivers (the controller from a pod, local mode from a
// container) decide for one judge child, from its status and what they observed.
import { describe, expect, it } from "vitest";
import type { Agent, Execution } from "../api/types.js";
import { JUDGE_GRACE_SECONDS, judgeRunStep, stoppedByParent, type JudgeRunContext } from "./judge-run.js";

const T0 = Date.parse("2026-11-25T20:00:00Z");
const judge: Agent = {
  apiVersion: "100monkeys.ai/v1",
  kind: "Agent",
  metadata: { name: "rule-judge", labels: { role: "judge" } },
  spec: { runtime: { image: "gavel/rule-judge:dev" } },
};
const VERDICT = '{"score": 0.8, "confidence": 0.9, "reasoning": "fine"}';

function child(status?: Execution["status"], timeoutSeconds = 30): Execution {
  return {
    apiVersion: "100monkeys.ai/v1",
    kind: "Execution",
    metadata: { name: "ex1-i1-v0-rule-judge", namespace: "team" },
    spec: {
      agentRef: { name: "rule-judge" },
      timeoutSeconds,
      parent: { name: "ex1", uid: "u-1", purpose: "validation", iteration: 1, validatorIndex: 0, depth: 1 },
    },
    ...(status !== undefined ? { status } : {}),
  };
}
const running = { phase: "Running" as const, startTime: new Date(T0).toISOString() };
const ctx = (c: Execution, ...j: [Agent | undefined] | []): JudgeRunContext => ({ child: c, judge: j.length === 0 ? judge : j[0] });

describe("judgeRunStep", () => {
  it("starts a child that has not started: Running from now, looked at again past its deadline and the grace", () => {
    const step = judgeRunStep(ctx(child()), {}, T0);
    expect(step).toEqual({ type: "run", status: running, deadlineMs: T0 + (30 + JUDGE_GRACE_SECONDS) * 1000 });
  });

  it("keeps a started child's start time and status while its workload runs", () => {
    const step = judgeRunStep(ctx(child({ ...running, message: "kept" })), {}, T0 + 5000);
    expect(step).toEqual({ type: "run", status: { ...running, message: "kept" }, deadlineMs: T0 + 40_000 });
  });

  it("turns an ended workload's output into a verdict with the raw output kept", () => {
    const step = judgeRunStep(
      ctx(child(running)),
      { end: { exitCode: 0, stdout: `thinking\n${VERDICT}\n`, stderr: "warn", timedOut: false } },
      T0 + 3000,
    );
    expect(step.type).toBe("finish");
    if (step.type !== "finish") return;
    expect(step.outcome).toEqual({ ok: true, result: { score: 0.8, confidence: 0.9, reasoning: "fine" } });
    expect(step.status).toMatchObject({
      phase: "Succeeded",
      score: 0.8,
      startTime: running.startTime,
      completionTime: new Date(T0 + 3000).toISOString(),
    });
    expect(step.status.rawOutput).toMatchObject({ exitCode: 0, stderr: "warn", truncated: false });
  });

  it("rejects a workload killed at its deadline, a cancelled one and a crashed one, each with its reason", () => {
    const end = { exitCode: 137, stdout: VERDICT, timedOut: false };
    const outcome = (e: typeof end & { timedOut: boolean; cancelled?: boolean }) => {
      const s = judgeRunStep(ctx(child(running)), { end: e }, T0 + 1000);
      return s.type === "finish" ? s.outcome : undefined;
    };
    expect(outcome({ ...end, timedOut: true })).toMatchObject({ ok: false, rejection: "timed_out" });
    expect(outcome({ ...end, cancelled: true })).toMatchObject({ ok: false, rejection: "cancelled" });
    expect(outcome(end)).toEqual({ ok: false, rejection: "failed", detail: "the judge exited with code 137" });
  });

  it("fails a child with the problem the driver found, verbatim, before anything else", () => {
    const step = judgeRunStep(ctx(child(), undefined), { problem: "spec.input: the judge payload is 9000000 bytes", parent: "gone" }, T0);
    expect(step).toMatchObject({
      type: "finish",
      outcome: { ok: false, rejection: "failed", detail: "spec.input: the judge payload is 9000000 bytes" },
      status: { phase: "Failed" },
    });
  });

  it("fails a child whose judge Agent does not exist, naming spec.agentRef.name", () => {
    const step = judgeRunStep(ctx(child(), undefined), {}, T0);
    expect(step).toMatchObject({
      type: "finish",
      outcome: { rejection: "failed", detail: 'spec.agentRef.name: judge Agent "rule-judge" not found in namespace team' },
    });
  });

  it("cancels a child whose parent is gone or has ended, even when its workload printed a verdict", () => {
    const end = { exitCode: 0, stdout: VERDICT, timedOut: false };
    expect(judgeRunStep(ctx(child(running)), { parent: "gone", end }, T0)).toMatchObject({
      outcome: { rejection: "cancelled", detail: "the parent Execution is gone" },
      status: { phase: "Cancelled" },
    });
    expect(judgeRunStep(ctx(child(running)), { parent: "Succeeded", end }, T0)).toMatchObject({
      outcome: { rejection: "cancelled", detail: "the parent Execution has ended (Succeeded)" },
    });
    expect(judgeRunStep(ctx(child(running)), { parent: "Validating" as never }, T0).type).toBe("run");
  });

  it("times a child out past its deadline and the grace while its workload has not ended; a stuck one fails before that", () => {
    const late = T0 + (30 + JUDGE_GRACE_SECONDS) * 1000;
    expect(judgeRunStep(ctx(child(running)), { stuck: "the judge pod cannot start: ErrImagePull" }, late)).toMatchObject({
      outcome: { rejection: "timed_out", detail: "the judge did not finish within 30s" },
      status: { phase: "TimedOut" },
    });
    expect(judgeRunStep(ctx(child(running)), { stuck: "the judge pod cannot start: ErrImagePull" }, late - 1)).toMatchObject({
      outcome: { rejection: "failed", detail: "the judge pod cannot start: ErrImagePull" },
    });
  });

  it("takes the verdict of a workload that ended by itself however late it is read (a driver back from a crash); one its deadline stopped times out", () => {
    const muchLater = T0 + (30 + JUDGE_GRACE_SECONDS) * 1000 + 60_000;
    const end = { exitCode: 0, stdout: VERDICT, stderr: "", timedOut: false };
    expect(judgeRunStep(ctx(child(running)), { end }, muchLater)).toMatchObject({
      type: "finish",
      outcome: { ok: true, result: { score: 0.8 } },
      status: { phase: "Succeeded" },
    });
    expect(judgeRunStep(ctx(child(running)), { end: { ...end, exitCode: 137, stdout: "", timedOut: true } }, muchLater)).toMatchObject({
      outcome: { ok: false, rejection: "timed_out" },
      status: { phase: "TimedOut" },
    });
  });

  it("runs the judge again when its pod was deleted or evicted before it ended, within the same deadline; past it, times out (issue 24 item 6)", () => {
    const lost = { reason: "EvictionByEvictionAPI: Eviction API: evicting", id: "uid-1" };
    // A judge that printed a verdict as it was stopped still runs again: it did not end by itself.
    const end = { exitCode: 143, stdout: VERDICT, timedOut: false, lost };
    expect(judgeRunStep(ctx(child(running)), { end }, T0 + 5000)).toEqual({ type: "run", status: running, deadlineMs: T0 + 40_000, lost });
    const late = judgeRunStep(ctx(child(running)), { end }, T0 + 40_000);
    expect(late.type === "finish" && late.outcome).toEqual({
      ok: false,
      rejection: "timed_out",
      detail: "the judge did not finish within 30s (its pod was stopped: EvictionByEvictionAPI: Eviction API: evicting)",
    });
  });

  it("fails a judge its memory limit killed, naming the OOM kill and the limit, its output kept", () => {
    const small: Agent = { ...judge, spec: { ...judge.spec, security: { resources: { memory: "16Mi" } } } };
    const step = judgeRunStep(
      ctx(child(running), small),
      { end: { exitCode: 137, stdout: "", timedOut: false, oomKilled: true } },
      T0 + 3000,
    );
    expect(step.type === "finish" && step.outcome).toEqual({
      ok: false,
      rejection: "failed",
      detail: "the judge was OOM-killed: it went past its memory limit (security.resources.memory 16Mi) (exit code 137)",
    });
    expect(step.type === "finish" && step.status.rawOutput?.exitCode).toBe(137);
  });

  it("takes the deadline from the judge's own timeout when the child sets none", () => {
    const own: Agent = { ...judge, spec: { ...judge.spec, security: { resources: { timeout: "5s" } } } };
    const c = child(running);
    delete c.spec.timeoutSeconds;
    expect(judgeRunStep(ctx(c, own), {}, T0)).toMatchObject({ type: "run", deadlineMs: T0 + (5 + JUDGE_GRACE_SECONDS) * 1000 });
  });
});

describe("stoppedByParent", () => {
  it("says which way the parent stopped the child", () => {
    expect(stoppedByParent("cancelled")).toEqual({ ok: false, rejection: "cancelled", detail: "the parent Execution was cancelled" });
    expect(stoppedByParent("timed_out")).toEqual({
      ok: false,
      rejection: "timed_out",
      detail: "the parent Execution ran past its deadline",
    });
  });
});
