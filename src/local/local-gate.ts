// The inner-loop gate in local mode: the same gate as the controller's (guard, then the
// agent's tool_validation judges) answering the worker's proposals over NATS, with judge
// containers run by the LocalRun and decisions shown in the live tree.
import type { NatsConnection } from "@nats-io/transport-node";
import type { Agent } from "../api/types.js";
import { createGate } from "../gate/gate.js";
import { PolicyStore } from "../gate/guard/policy-store.js";
import { ToolCallService } from "../transport/tool-call-service.js";
import type { LocalRun } from "./local-run.js";

/** A running local gate. */
export interface LocalGate {
  stop(): Promise<void>;
}

/** Starts the gate for one local run's worker on `nc`; the built-in guard policy applies. */
export async function startLocalGate(nc: NatsConnection, agent: Agent, run: LocalRun): Promise<LocalGate> {
  const gate = createGate({
    policyStore: new PolicyStore(),
    agent,
    judgeRunner: (entry, proposal, violations, index) => run.runToolJudge(entry, proposal, violations, index),
    audit: {
      record(r) {
        run.publish("toolcall.decision", {
          iteration: r.iteration,
          step: r.step,
          tool: r.tool,
          allowed: r.allowed,
          blocked_by: r.blocked_by,
          ...(r.check !== undefined ? { check: r.check } : {}),
          reason: r.guard_reason ?? (r.judges.length > 0 ? r.judges.map((j) => `${j.judge}: ${j.passed ? "passed" : "failed"}`).join(", ") : r.allowed ? "approved" : "blocked"),
        });
      },
    },
  });
  // Local runs keep no decision history: nothing outlives the process.
  const service = await ToolCallService.start(nc, { decide: (p) => gate.decide(p), durable: false });
  return { stop: () => service.stop() };
}
