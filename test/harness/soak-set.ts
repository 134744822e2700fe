// What the soak (issue 24 item 5, docs/soak.md) runs and how it compares two runs of it: the
// set of Executions (the guarded-tools example's worker, whose calls the guard blocks or the
// rule judge judges, validated by a judged `semantic` validator that passes, or by one that
// fails twice and ends the run Failed), and each Execution's outcome in a form that compares
// well: phase, score, iterations, validators, every call's decision, every judge child.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import type { Agent, Execution, ValidatorSpec } from "../../src/api/types.js";
import type { ToolCallRecord } from "../../src/gate/tool-call.js";
import { callSummary } from "./executions.js";
import { REPO_DIR } from "./paths.js";

const example = (file: string) => join(REPO_DIR, "examples", "guarded-tools", file);

/** The Agents of the set: the example's worker with a judged validator that passes, and one whose judged validator never can. */
export const SOAK_AGENTS = { pass: "soak-pass", fail: "soak-fail" } as const;

/** The Agent of Execution `index`: every third fails its judged validator (two iterations, then Failed). */
export const agentOf = (index: number): string => (index % 3 === 2 ? SOAK_AGENTS.fail : SOAK_AGENTS.pass);

/** The name of Execution `index` of the set. */
export const soakName = (index: number): string => `soak-${index}`;

/** One soak Agent: examples/guarded-tools' worker, cold judges, a deadline that outlasts the kills, and a rule-judge `semantic` validator. */
function soakAgent(name: string, passes: boolean): Agent {
  const agent = parse(readFileSync(example("agent.yaml"), "utf8")) as Agent;
  agent.metadata = {
    name,
    // Tool-call judges in pods of their own: a warm pod's call is run again after a controller
    // dies (ADR 0070, at least once by design), and "one judge pod per step" is what the soak counts.
    annotations: { "gavel.dev/warm-judges": "0" },
  };
  const spec = agent.spec;
  // The worker waits for the gate through every restart; its iteration deadline must not be what ends it.
  spec.security = { ...spec.security, resources: { ...spec.security?.resources, timeout: "900s" } };
  spec.execution = {
    ...spec.execution,
    ...(passes ? { mode: "one-shot" } : { mode: "iterative", max_iterations: 2 }),
    validation: [
      ...((spec.execution?.validation ?? []) as ValidatorSpec[]),
      {
        type: "semantic",
        judge_agent: "rule-judge",
        criteria: `file_contains: report.md :: ${passes ? "status: done" : "status: shipped"}`,
        min_score: 1,
        timeout_seconds: 600,
      },
    ],
  } as Agent["spec"]["execution"];
  return agent;
}

/** The manifests a soak namespace gets before its Executions: both Agents, the example's GuardPolicy and the shipped rule judge. */
export function soakSetupYaml(): string {
  return [
    stringify(soakAgent(SOAK_AGENTS.pass, true)),
    stringify(soakAgent(SOAK_AGENTS.fail, false)),
    readFileSync(example("policy.yaml"), "utf8"),
    readFileSync(join(REPO_DIR, "judges", "rule-judge", "agent.yaml"), "utf8"),
  ].join("\n---\n");
}

/** The set's N Executions, created with one apply. */
export function soakExecutionsYaml(n: number): string {
  return Array.from({ length: n }, (_, i) =>
    stringify({
      apiVersion: "100monkeys.ai/v1",
      kind: "Execution",
      metadata: { name: soakName(i) },
      spec: { agentRef: { name: agentOf(i) } },
    }),
  ).join("\n---\n");
}

/** One Execution's outcome, without names of runs, times or uids: what must be the same with and without faults. */
export interface Outcome {
  phase?: string;
  score?: number;
  iteration?: number;
  iterations: unknown[];
  children: unknown[];
  /** Every call's last record in the store: [iteration, step, tool, allowed, blocked_by, judges' children and scores]. */
  decisions: unknown[];
}

/** The outcome of `ex`, its judge children (all Executions of the namespace are passed) and its calls' last records. */
export function outcomeOf(ex: Execution, all: Execution[], records: ToolCallRecord[]): Outcome {
  const s = ex.status;
  const children = all
    .filter((c) => c.spec.parent?.name === ex.metadata.name)
    .map((c) => [c.metadata.name, c.spec.parent?.purpose, c.status?.phase, c.status?.verdict?.score ?? null, c.status?.rejection ?? null])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  const decisions = records
    .map((r) =>
      r.kind === "decision"
        ? [
            r.iteration,
            r.step,
            r.tool,
            r.decision.allowed,
            r.decision.blocked_by,
            r.decision.judges.map((j) => [j.child, j.passed, j.result?.score ?? null]),
          ]
        : [r.iteration, r.step, r.tool, "claim, never decided"],
    )
    .sort((a, b) => Number(a[0]) - Number(b[0]) || Number(a[1]) - Number(b[1]));
  return {
    phase: s?.phase,
    score: s?.score,
    iteration: s?.iteration,
    iterations: (s?.iterations ?? []).map((it) => ({
      number: it.number,
      phase: it.phase,
      exitCode: it.exitCode,
      validators: (it.validators ?? []).map((v) => [v.index, v.type, v.passed, v.score, v.children ?? []]),
      toolCalls: it.toolCalls === undefined ? undefined : { ...it.toolCalls, recent: it.toolCalls.recent?.map(callSummary) },
    })),
    children,
    decisions,
  };
}
