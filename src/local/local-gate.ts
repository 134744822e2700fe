// The inner-loop gate in local mode: the same gate as the controller's (guard, then the
// agent's tool_validation judges) answering the worker's proposals over NATS, with judge
// containers run by the LocalRun and decisions shown in the live tree.
import type { NatsConnection } from "@nats-io/transport-node";
import type { Agent } from "../api/types.js";
import { decisionEvent } from "../gate/audit.js";
import { createGate } from "../gate/gate.js";
import { RECENT_TOOL_CALLS } from "../gate/tool-call-summary.js";
import { compilePolicy, precompileBuiltinPatterns, type CompiledPolicy } from "../gate/guard.js";
import type { Tracing } from "../telemetry/tracing.js";
import { LOCAL_RUN, ToolCallService } from "../gate/tool-call.js";
import type { LocalRun } from "./local-run.js";

/** A running local gate. */
export interface LocalGate {
  stop(): Promise<void>;
}

export interface LocalGateOptions {
  /** The GuardPolicies given to the run, merged and compiled; default the built-in tables only. */
  policy?: CompiledPolicy;
  /** Traces of the decided calls (execute_tool spans), when tracing is on. */
  tracing?: Tracing;
}

/**
 * Starts the gate for one local run's worker on `nc`. A local run is one namespace, so one
 * compiled policy answers for every namespace a proposal names.
 */
export async function startLocalGate(nc: NatsConnection, agent: Agent, run: LocalRun, opts: LocalGateOptions = {}): Promise<LocalGate> {
  precompileBuiltinPatterns();
  const policy = opts.policy ?? compilePolicy([]);
  const gate = createGate({
    policyStore: { get: () => policy, version: 1 },
    agent,
    judgeRunner: (entry, proposal, violations, index) => run.runToolJudge(entry, proposal, violations, index),
    // What the audit keeps (key paths, never values), so the event stream is the audit.
    audit: { record: (r) => run.publish("toolcall.decision", decisionEvent(r)) },
    ...(opts.tracing !== undefined ? { tracing: opts.tracing } : {}),
  });
  // The same store as on a cluster, on the run's own nats-server (gone with it).
  const service = await ToolCallService.start(nc, { decide: (p, ctx) => gate.decide(p, ctx), onDecided: (p, d) => void gate.record(p, d) });
  run.useToolCalls((namespace, execution) => service.store.summaryOf({ namespace, execution, run: LOCAL_RUN }, RECENT_TOOL_CALLS));
  return { stop: () => service.stop() };
}
