// How a call waiting for a person learns that something happened (ADR 0067): a watch of the
// ToolApprovals (an informer on every replica) wakes it when its approval changes or is deleted,
// and the controller's Execution cache wakes it when its run ends (cancelled, ended, deleted).
// Nothing is read from the API server in a loop; the waiting itself stays in the API server.
import type * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import type { Execution, ToolApproval } from "../api/types.js";
import { isTerminal } from "../engine/outer-loop.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { CANCEL_ANNOTATION } from "./execution-pods.js";
import { customResource, Informer, objectKey, type InformerEvent } from "./runtime/informer.js";

/** The controller's Execution cache, as the approvals read it: every replica keeps one (leader or not). */
export interface ExecutionCache {
  get(namespace: string, name: string): Execution | undefined;
  /** Adds a change handler; events before the call are not heard. */
  on(handler: (event: InformerEvent, execution: Execution) => void): void;
}

/** What woke a waiting call. */
export type ApprovalChange =
  | { kind: "changed"; approval: ToolApproval }
  | { kind: "deleted" }
  | { kind: "run-ended"; why: string }
  | { kind: "deadline" }
  /** The watch has not listed the approvals (yet, or cannot: RBAC without list/watch): read the approval again. */
  | { kind: "unwatched" };

/** How long a wait lasts while the watch cannot see the approvals, before the approval is read directly. */
const UNWATCHED_READ_MS = 5000;

export interface ApprovalWatchOptions {
  kc: k8s.KubeConfig;
  /** Namespaces to watch (the controller's); all when undefined. */
  namespaces?: readonly string[];
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  /** The controller's Execution cache; without it a run's end reaches the wait only when its approval is garbage-collected. */
  executions?: ExecutionCache;
  logger?: Logger;
}

type Waiter = (change: ApprovalChange) => void;

/** Why an Execution's pending calls should stop waiting, or undefined while it runs. */
export function runEnded(execution: Execution | undefined, uid: string): string | undefined {
  if (execution === undefined) return "the Execution was deleted";
  if (execution.metadata.uid !== uid) return "the Execution was deleted (another of that name exists)";
  if (execution.metadata.deletionTimestamp !== undefined) return "the Execution is being deleted";
  if (isTerminal(execution.status?.phase)) return `the run ended (${execution.status?.phase ?? ""})`;
  if (execution.metadata.annotations?.[CANCEL_ANNOTATION] !== undefined) return "the run was cancelled";
  return undefined;
}

/** The ToolApprovals this replica's gate waits on, and the runs they belong to, kept by list + watch. */
export class ApprovalWatch {
  private readonly informer: Informer<ToolApproval>;
  /** Waiters by approval key (namespace/name). */
  private readonly byApproval = new Map<string, Set<Waiter>>();
  /** Waiters by Execution key, with the run (uid) each waits for. */
  private readonly byExecution = new Map<string, Map<Waiter, string>>();
  private started: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: ApprovalWatchOptions) {
    this.informer = new Informer<ToolApproval>({
      kc: opts.kc,
      resource: customResource<ToolApproval>(opts.kc, "toolapproval", "toolapprovals"),
      ...(opts.namespaces !== undefined ? { namespaces: opts.namespaces } : {}),
      ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
      ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    });
    this.informer.on((event, a) => {
      const key = objectKey(a);
      const waiting = key === undefined ? undefined : this.byApproval.get(key);
      if (waiting !== undefined)
        for (const w of [...waiting]) w(event === "delete" ? { kind: "deleted" } : { kind: "changed", approval: a });
    });
  }

  /** Stops watching; waits still running end at their deadline or the next change they are told of. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }

  /**
   * The standing decision (gavel approve|deny --for-execution) of this run that covers a call
   * with this repeatDigest, once the watch has listed the approvals (so a restarted controller
   * finds what was decided before it); undefined when there is none, or the first list takes
   * longer than `listWaitMs` (then the person is asked: the safe side).
   */
  async standing(namespace: string, executionUID: string, repeatDigest: string, listWaitMs = 10_000): Promise<ToolApproval | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const listed = await Promise.race([
      this.start().then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), listWaitMs))),
    ]);
    clearTimeout(timer);
    if (!listed || !this.informer.synced) return undefined;
    return this.informer.list(namespace).find((a) => {
      const d = a.status?.decision;
      return (
        a.spec.executionUID === executionUID &&
        a.spec.repeatDigest === repeatDigest &&
        d?.forExecution === true &&
        d.digest === a.spec.digest
      );
    });
  }

  /**
   * Resolves at the first of: the approval as the watch shows it differs from `seen` (another
   * resourceVersion), it is deleted, its run ends (the Execution cache), or `until` (epoch ms).
   */
  next(seen: ToolApproval, execution: { namespace: string; name: string; uid: string }, until: number): Promise<ApprovalChange> {
    void this.start();
    const key = `${seen.metadata.namespace ?? "default"}/${seen.metadata.name}`;
    const exKey = `${execution.namespace}/${execution.name}`;
    return new Promise<ApprovalChange>((resolve) => {
      let done = false;
      const finish = (c: ApprovalChange) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        forget();
        resolve(c);
      };
      const see: Waiter = (c) => {
        if (c.kind !== "changed" || c.approval.metadata.resourceVersion !== seen.metadata.resourceVersion) finish(c);
      };
      const approvals = this.byApproval.get(key) ?? new Set<Waiter>();
      this.byApproval.set(key, approvals.add(see));
      const runs = this.byExecution.get(exKey) ?? new Map<Waiter, string>();
      this.byExecution.set(exKey, runs.set(see, execution.uid));
      const forget = () => {
        approvals.delete(see);
        if (approvals.size === 0 && this.byApproval.get(key) === approvals) this.byApproval.delete(key);
        runs.delete(see);
        if (runs.size === 0 && this.byExecution.get(exKey) === runs) this.byExecution.delete(exKey);
      };
      // While the watch has not listed (a list refused, e.g. a cluster whose RBAC lacks list/watch on
      // toolapprovals), the wait falls back to reading the approval every few seconds: slower, never stuck.
      const blind = !this.informer.synced && until - Date.now() > UNWATCHED_READ_MS;
      const timer = setTimeout(
        () => finish(blind ? { kind: "unwatched" } : { kind: "deadline" }),
        Math.max(0, blind ? UNWATCHED_READ_MS : until - Date.now()),
      );
      // A controller that stops leaves its waits to the replica that takes the claim over: they hold no exit.
      timer.unref();
      // What the caches hold already (a change the watch delivered before this wait began).
      const cached = this.informer.get(seen.metadata.name, seen.metadata.namespace);
      if (cached !== undefined) see({ kind: "changed", approval: cached });
      const run = this.opts.executions?.get(execution.namespace, execution.name);
      // Absent from the cache is not "deleted" here (it may not have synced yet); a delete event says so.
      const ended = run === undefined ? undefined : runEnded(run, execution.uid);
      if (ended !== undefined) see({ kind: "run-ended", why: ended });
    });
  }

  // Started by the first wait, so that a cluster without approvals has no watch for them; the
  // informer lists and watches in the background (a failed list is tried again with backoff).
  private start(): Promise<void> {
    if (this.started !== undefined) return this.started;
    this.started = this.informer
      .start()
      .catch((err: unknown) => this.opts.logger?.warn({ err: messageOf(err) }, "watching ToolApprovals failed"));
    this.opts.executions?.on((event, ex) => {
      if (this.stopped) return;
      const key = objectKey(ex);
      const runs = key === undefined ? undefined : this.byExecution.get(key);
      if (runs === undefined) return;
      for (const [w, uid] of [...runs]) {
        const why = event === "delete" ? (ex.metadata.uid === uid ? "the Execution was deleted" : undefined) : runEnded(ex, uid);
        if (why !== undefined) w({ kind: "run-ended", why });
      }
    });
    return this.started;
  }
}
