// The inner-loop gate on a cluster: every `gavel controller` replica answers the tool-call
// proposals of every worker pod (NATS queue group), deciding each call with the Execution's
// Agent and the GuardPolicies the controller watches. The tool-call service makes each
// call decided once across replicas; this module is the Kubernetes side of it: which
// Execution and Agent a proposal belongs to, the tool-judge children, the events, and the
// tool-call summary the reconciler writes into the Execution's status.
import * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { withDefaults } from "../api/defaults.js";
import type { ToolCallDecision, ToolCallProposal } from "../api/protocol.js";
import type { Agent, Execution, ExecutionStatus, SemanticValidatorSpec, ToolApproval } from "../api/types.js";
import { isTerminal } from "../engine/outer-loop.js";
import { messageOf } from "../errors.js";
import { decisionEvent } from "../gate/audit.js";
import { toolJudgeChild, type ToolJudgeChild } from "../children/child-executions.js";
import { judgeToolCall } from "../children/tool-judge.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { createGate, decidedBy, decidingCheck, type Gate, type JudgeRunResult, type PolicySource } from "../gate/gate.js";
import { EventStream } from "../transport/event-stream.js";
import {
  parseDecisionSubject,
  ToolCallRefusal,
  ToolCallService,
  type CallLogOptions,
  type ToolCallStoreOptions,
} from "../gate/tool-call.js";
import type { EngineEvent } from "./execution-events.js";
import { GateEventOutbox } from "./gate-event-outbox.js";
import { ToolApprovals, type ExecutionCache } from "./tool-approvals.js";
import { workspaceMounts } from "./execution-pods.js";
import { JudgeChildWatch } from "./judge-child-watch.js";
import { toolCallNote } from "./kubernetes-events.js";
import { EventRecorder, type EventNote } from "./runtime/event-recorder.js";
import type { ApprovalWebhook } from "./approval-webhook.js";
import { GavelResources } from "./gavel-resources.js";
import { applySummary, RECENT_TOOL_CALLS } from "../gate/tool-call-summary.js";
import { gateMetrics, Registry, type GateMetrics } from "../telemetry/metrics.js";
import type { Tracing } from "../telemetry/tracing.js";

export interface ClusterGateOptions {
  kc: k8s.KubeConfig;
  nc: NatsConnection;
  /** The controller's PolicyStore (GuardPolicy hot reload). */
  policies: PolicySource & { hasPolicies?(namespace: string): boolean };
  /** This replica's name in claims (the pod name). */
  gateId: string;
  /** Namespaces whose tool-judge children the gate watches (the controller's); all when undefined. */
  namespaces?: readonly string[];
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  /** Publish decisions and tool-judge events to the event stream (`gavel events`); default true. */
  publishEvents?: boolean;
  /** Called when a decision of an Execution is stored by any replica (the reconciler folds it into the status). */
  onToolCall?: (namespace: string, execution: string) => void;
  store?: ToolCallStoreOptions;
  /** Where pending approvals are announced (a JSON POST each, retried; never waited on); none when undefined. */
  approvalWebhook?: ApprovalWebhook;
  /** Record decided calls with their proposals for `gavel replay` (GAVEL_CALLS, ADR 0076); off when undefined. */
  callLog?: CallLogOptions;
  claimLeaseMs?: number;
  maxProposalBytes?: number;
  /** How long an Execution or Agent read from the API answers proposals before it is read again; default 2 s. */
  cacheMs?: number;
  logger?: Logger;
  /** Where the decisions stored by this gate and the guard's latency are counted; default its own. */
  metrics?: Registry;
  /** Traces of the decided calls (execute_tool spans, invoke_agent per tool judge); none when undefined. */
  tracing?: Tracing;
  /**
   * The controller's Execution cache (its informer), when it has one: a cached read of an
   * Execution whose uid the cache no longer shows (deleted and created again under the same
   * name) is read again before any call is decided with it; a call waiting for a person stops when its run ends.
   */
  executions?: ExecutionCache;
}

/** One read of the Execution a proposal names: what decides its calls, or why none may be decided. */
interface Target {
  /** The Execution's uid (the run its calls belong to); undefined when there is none of that name. */
  uid?: string;
  execution?: Execution;
  /** Why its calls are refused, not decided: it is gone, has ended, or is a judge child. */
  refusal?: ToolCallRefusal;
  /** Why its calls are denied (fail closed): its Agent cannot be read. */
  problem?: Error;
  agent?: Agent;
  gate?: Gate;
}

/** A read in the cache: `settled` once it resolved. */
interface CachedTarget {
  at: number;
  target: Promise<Target>;
  settled?: Target;
  refreshing: boolean;
}

/** The gate of this controller replica. */
export class ClusterGate {
  private readonly resources: GavelResources;
  private readonly kubeEvents: EventRecorder;
  private readonly targets = new Map<string, CachedTarget>();
  private readonly outbox: GateEventOutbox;
  private readonly approvals: ToolApprovals;
  private service: ToolCallService | undefined;
  /** The tool-judge children this gate waits on, as the watch shows them. */
  private readonly judgeChildren: JudgeChildWatch;
  private events: EventStream | undefined;
  readonly metrics: GateMetrics;

  private constructor(private readonly opts: ClusterGateOptions) {
    this.resources = new GavelResources(opts.kc);
    this.kubeEvents = new EventRecorder(opts.kc.makeApiClient(k8s.CoreV1Api), "gavel-gate", opts.logger);
    this.metrics = gateMetrics(opts.metrics ?? new Registry());
    this.outbox = new GateEventOutbox(() => this.events, this.metrics, opts.logger);
    const notices = {
      event: (ex: Execution, note: EventNote) => this.kubeEvents.record(ex, note),
      publish: this.publish.bind(this),
      ...(opts.approvalWebhook !== undefined ? { announce: (a: ToolApproval) => opts.approvalWebhook?.announce(a) } : {}),
    };
    this.approvals = new ToolApprovals(opts, notices);
    this.judgeChildren = new JudgeChildWatch({
      kc: opts.kc,
      ...(opts.namespaces !== undefined ? { namespaces: opts.namespaces } : {}),
      ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
      ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    });
  }

  /** Opens the tool-call store (replaying it) and starts answering proposals. */
  static async start(opts: ClusterGateOptions): Promise<ClusterGate> {
    const gate = new ClusterGate(opts);
    if (opts.publishEvents ?? true) gate.events = await EventStream.open(opts.nc);
    gate.service = await ToolCallService.start(opts.nc, {
      decide: (p, ctx) => gate.decide(p, ctx),
      runOf: (p) => gate.runOf(p),
      onDecided: (p, d) => gate.decided(p, d),
      gateId: opts.gateId,
      ...(opts.store !== undefined ? { store: opts.store } : {}),
      ...(opts.callLog !== undefined ? { callLog: opts.callLog } : {}),
      ...(opts.claimLeaseMs !== undefined ? { claimLeaseMs: opts.claimLeaseMs } : {}),
      ...(opts.maxProposalBytes !== undefined ? { maxProposalBytes: opts.maxProposalBytes } : {}),
      ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    });
    // Decisions stored by any replica reach every mirror: the leader's writes the status.
    gate.service.store.onRecord((subject, r) => {
      const call = parseDecisionSubject(subject);
      if (call !== undefined && r.record.kind === "decision") opts.onToolCall?.(call.namespace, call.execution);
    });
    return gate;
  }

  /** The tool-call service (its counters and store). */
  get toolCalls(): ToolCallService | undefined {
    return this.service;
  }

  /** Why no tool call can be decided now, or undefined when the gate serves. */
  unavailable(): string | undefined {
    if (this.service === undefined) return "the tool-call gate has not started";
    if (this.opts.nc.isClosed()) return "the tool-call gate's NATS connection is closed";
    if (!this.service.serving) return "the tool-call gate is stopping";
    if (!this.service.store.live) return "the tool-call gate cannot reach NATS (reconnecting)";
    return undefined;
  }

  /** Writes the tool calls decided so far into a status about to be written (counts and the last few per iteration). */
  annotate(execution: Execution, status: ExecutionStatus): void {
    if (this.service === undefined) return;
    const uid = execution.metadata.uid;
    if (uid === undefined || uid === "") return;
    const tallies = this.service.store.summaryOf(
      { namespace: execution.metadata.namespace ?? "default", execution: execution.metadata.name, run: uid },
      RECENT_TOOL_CALLS,
    );
    if (tallies.size === 0) return;
    applySummary(status, tallies);
  }

  /** Stops answering (running decides finish or are taken over by another replica). */
  async stop(graceMs?: number): Promise<void> {
    await this.service?.stop(graceMs);
    await Promise.all([this.judgeChildren.stop(), this.approvals.stop()]);
    await this.outbox.drained();
  }

  // ------------------------------------------------------------------ deciding

  private decide(p: ToolCallProposal, ctx: Parameters<Gate["decide"]>[1]) {
    return this.target(p).then((t) => {
      if (t.refusal !== undefined) throw t.refusal;
      if (t.gate === undefined) throw t.problem ?? new Error(`Execution ${p.namespace}/${p.execution} has no gate`);
      // The synchronous part of a decide is the guard; judges run later, in `judged`.
      const started = performance.now();
      const outcome = t.gate.decide(p, ctx);
      this.metrics.guardSeconds.observe({}, (performance.now() - started) / 1000);
      return outcome;
    });
  }

  /**
   * The Execution a proposal belongs to (it must be running), its Agent and its gate, read
   * through a cache. An entry older than cacheMs is read again in the background while calls
   * go on being decided with the one they have (so no call waits on the API server after the
   * first of its Execution); the new one replaces it once read, as does a refusal (the
   * Execution gone or ended), which calls see one read later; an API failure keeps the old.
   */
  private target(p: ToolCallProposal): Promise<Target> {
    const key = `${p.namespace}/${p.execution}`;
    let cached = this.targets.get(key);
    const now = Date.now();
    if (cached?.settled !== undefined && this.replaced(p, cached.settled.uid)) {
      // Another run of that name: nothing of the last read (its gate, its refusal) may answer its calls.
      this.targets.delete(key);
      cached = undefined;
    }
    if (cached !== undefined && (now - cached.at < (this.opts.cacheMs ?? 2000) || cached.refreshing)) return cached.target;
    const target = this.load(p.namespace, p.execution);
    if (cached?.settled !== undefined) {
      // Stale but usable: read again meanwhile.
      const stale = cached;
      stale.refreshing = true;
      const replace = (t: Target) => this.targets.set(key, { at: Date.now(), target, settled: t, refreshing: false });
      const keep = () => Object.assign(stale, { at: Date.now(), refreshing: false });
      // A new read replaces it (a refusal too: the Execution is gone, ended, or a judge child); an API failure keeps the last good read.
      target.then((t) => (t.problem === undefined ? replace(t) : keep()), keep);
      return stale.target;
    }
    const entry: CachedTarget = { at: now, target, refreshing: false };
    this.targets.set(key, entry);
    const forget = () => this.targets.get(key) === entry && this.targets.delete(key);
    // Not kept: an API failure, or a read whose Agent could not be read (the next call reads again).
    target.then((t) => (t.problem === undefined ? (entry.settled = t) : forget()), forget);
    if (this.targets.size > 10_000) this.targets.delete(this.targets.keys().next().value as string);
    return target;
  }

  /** True when the controller's cache shows an Execution of that name under another uid than the read's (re-created). */
  private replaced(p: ToolCallProposal, uid: string | undefined): boolean {
    const current = this.opts.executions?.get(p.namespace, p.execution);
    return current !== undefined && current.metadata.uid !== uid;
  }

  /** The run (uid) of the Execution a proposal names; refuses one that is gone, ended or a judge child. */
  private async runOf(p: ToolCallProposal): Promise<string> {
    const t = await this.target(p);
    if (t.refusal !== undefined) throw t.refusal;
    if (t.uid === undefined || t.uid === "") throw new Error(`Execution ${p.namespace}/${p.execution} has no uid`);
    return t.uid;
  }

  private async load(namespace: string, name: string): Promise<Target> {
    const execution = await this.resources.execution(namespace, name);
    if (execution === undefined) {
      return {
        refusal: new ToolCallRefusal(
          "forbidden",
          "/execution",
          `there is no Execution ${namespace}/${name}: only the worker of a running Execution may propose tool calls`,
        ),
      };
    }
    const uid = execution.metadata.uid;
    if (execution.spec.parent !== undefined) {
      return {
        uid,
        execution,
        refusal: new ToolCallRefusal("forbidden", "/execution", `${namespace}/${name} is a judge child; judges make no gated tool calls`),
      };
    }
    if (isTerminal(execution.status?.phase)) {
      return {
        uid,
        execution,
        refusal: new ToolCallRefusal(
          "forbidden",
          "/execution",
          `Execution ${namespace}/${name} has ended (${execution.status?.phase ?? ""})`,
        ),
      };
    }
    // Not a refusal: the call is denied (fail closed) with the reason, and the worker goes on.
    const raw = await this.resources
      .agent(namespace, execution.spec.agentRef.name)
      .catch((err: unknown) => (err instanceof Error ? err : new Error(messageOf(err))));
    if (raw instanceof Error) return { uid, execution, problem: raw };
    if (raw === undefined)
      return { uid, execution, problem: new Error(`Agent ${namespace}/${execution.spec.agentRef.name} of Execution ${name} is not found`) };
    const agent = withDefaults(raw);
    // The calls of this Execution already shown as proposed (a call judged by several entries is shown once).
    const announced = new Set<string>();
    const gate = createGate({
      policyStore: this.opts.policies,
      agent,
      judgeRunner: (entry, proposal, violations, index) =>
        this.runToolJudge(execution, agent, { entry, proposal, violations, index }, announced),
      audit: { record: (r) => this.publish(execution, [{ event: "toolcall.decision", data: decisionEvent(r) }]) },
      approver: this.approvals.approver(execution),
      ...(this.opts.logger !== undefined ? { logger: this.opts.logger } : {}),
      ...(this.opts.tracing !== undefined ? { tracing: this.opts.tracing } : {}),
    });
    return { uid, execution, agent, gate };
  }

  /**
   * One tool_validation judge on the cluster: the children module's child Execution (the
   * reference payload, the worker's volumes read-only at the same paths, its deadline) is
   * created — or adopted, when a replica that died while judging created it — and the
   * leader's reconciler runs it like any judge child. The gate waits on its status through
   * the watch of judge children (judge-child-watch.ts).
   */
  private async runToolJudge(
    execution: Execution,
    worker: Agent,
    call: { entry: SemanticValidatorSpec; proposal: ToolCallProposal; violations: readonly string[]; index: number },
    announced: Set<string>,
  ): Promise<JudgeRunResult> {
    const { entry, proposal, violations, index } = call;
    const namespace = execution.metadata.namespace ?? "default";
    const judgeRaw = await this.resources.agent(namespace, entry.judge_agent);
    const t = toolJudgeChild({
      parent: execution,
      worker,
      judge: judgeRaw === undefined ? undefined : withDefaults(judgeRaw),
      entry,
      index,
      proposal,
      policyViolations: violations,
      workerMounts: workspaceMounts(execution.metadata.name, worker, true),
      // A pod's payload travels in env GAVEL_INPUT or ConfigMap parts (an attached stdin cannot be re-sent to an adopted pod).
      stdin: false,
    });
    return judgeToolCall(t, proposal, {
      publish: (events) => this.publish(execution, events),
      announced,
      run: (child) => this.awaitJudgeChild(namespace, child, proposal),
    });
  }

  /**
   * Creates the tool judge's child Execution, or adopts it when a replica that died while
   * judging this call created it (names are deterministic), and waits for it to end.
   */
  private async awaitJudgeChild(namespace: string, t: ToolJudgeChild, proposal: ToolCallProposal): Promise<JudgeOutcome> {
    if (!(await this.resources.createJudgeChild(t.execution))) {
      const existing = await this.resources.execution(namespace, t.name);
      if (existing !== undefined && existing.spec.parent?.toolCallId !== proposal.toolCallId) {
        return {
          ok: false,
          rejection: "failed",
          detail: `judge child ${t.name} already judges another call (${existing.spec.parent?.toolCallId ?? "none"}) of this step`,
        };
      }
    }
    // The reconciler ends the child by its deadline; the gate gives up a little later still.
    const giveUp = Date.now() + ((t.execution.spec.timeoutSeconds ?? 300) + 60) * 1000;
    return this.judgeChildren.outcome(namespace, t.name, giveUp, () => this.resources.execution(namespace, t.name));
  }

  // Once per stored decision: the audit (the event stream), a Kubernetes Event for calls
  // worth a look (blocked or judged), and a nudge to the reconciler for the status.
  private decided(p: ToolCallProposal, d: ToolCallDecision): void {
    const by = decidedBy(d);
    this.metrics.toolCalls.inc({ decision: d.allowed ? "allowed" : "blocked", decided_by: by, check: decidingCheck(d) });
    this.metrics.decisionSeconds.observe({ decided_by: by }, d.latencyMs / 1000);
    void this.target(p).then(
      async (t) => {
        await t.gate?.record(p, d);
        if (t.execution === undefined) return;
        const note = toolCallNote(p, d);
        if (note !== undefined) await this.kubeEvents.record(t.execution, note);
      },
      (err: unknown) => this.opts.logger?.warn({ toolCallId: p.toolCallId, err: messageOf(err) }, "decision not recorded"),
    );
  }

  /** Publishes events of an Execution in order (gate-event-outbox.ts). */
  publish(execution: Execution, events: EngineEvent[]): Promise<void> {
    return this.outbox.publish(execution, events);
  }
}
