// How the cluster gate waits for a tool judge's child Execution to end: a watch of the judge
// children (an informer with its cache, on every replica), whose changes wake the waiting
// call, instead of reading the child from the API server again and again.
import type * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import type { Execution } from "../api/types.js";
import { CHILD_LABELS } from "../children/workloads.js";
import type { JudgeOutcome } from "../engine/gradient.js";
import { outcomeOfStatus } from "../engine/phases.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { customResource, Informer, objectKey } from "./runtime/informer.js";

export interface JudgeChildWatchOptions {
  kc: k8s.KubeConfig;
  /** Namespaces to watch (the controller's); all when undefined. */
  namespaces?: readonly string[];
  /** Only objects of the namespaces this admits (--namespace-selector, ADR 0081); all when undefined. */
  scope?: NamespaceFilter;
  logger?: Logger;
}

/** What a change of a watched child says: the child as it is now, or undefined once it is deleted. */
type Waiter = (child: Execution | undefined) => void;

/** The judge children this replica can wait on, kept by list + watch. */
export class JudgeChildWatch {
  private readonly informer: Informer<Execution>;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly logger: Logger | undefined;

  constructor(opts: JudgeChildWatchOptions) {
    this.logger = opts.logger;
    this.informer = new Informer<Execution>({
      kc: opts.kc,
      // Judge children only (validation and tool judges): the gate waits on nothing else.
      resource: customResource<Execution>(opts.kc, "judge execution", "executions", `${CHILD_LABELS.role}=judge`),
      ...(opts.namespaces !== undefined ? { namespaces: opts.namespaces } : {}),
      ...(opts.scope !== undefined ? { scope: opts.scope } : {}),
      ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    });
    this.informer.on((event, child) => {
      const key = objectKey(child);
      const waiting = key === undefined ? undefined : this.waiters.get(key);
      if (waiting !== undefined) for (const w of [...waiting]) w(event === "delete" ? undefined : child);
    });
  }

  private started = false;

  /** Stops watching. */
  async stop(): Promise<void> {
    await this.informer.stop();
  }

  /**
   * Resolves with how the child ended: its status's outcome once it is final, `cancelled`
   * once it is deleted, `timed_out` at `giveUpAt` (epoch ms). `read` reads it from the API
   * server once at the start: the watch may not have seen a child created a moment ago.
   */
  outcome(namespace: string, name: string, giveUpAt: number, read: () => Promise<Execution | undefined>): Promise<JudgeOutcome> {
    const key = `${namespace}/${name}`;
    // Started by the first wait, so that a cluster without tool judges has no watch for them;
    // it lists and watches in the background (a list that fails is tried again with backoff).
    if (!this.started) {
      this.started = true;
      void this.informer.start();
    }
    return new Promise<JudgeOutcome>((resolve) => {
      let done = false;
      const finish = (o: JudgeOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        unwatch();
        resolve(o);
      };
      const see: Waiter = (child) => {
        if (child === undefined) return finish({ ok: false, rejection: "cancelled", detail: `judge child ${name} was deleted` });
        const o = outcomeOfStatus(child.status);
        if (o !== undefined) finish(o);
      };
      const waiting = this.waiters.get(key) ?? new Set<Waiter>();
      this.waiters.set(key, waiting.add(see));
      const unwatch = () => {
        waiting.delete(see);
        if (waiting.size === 0 && this.waiters.get(key) === waiting) this.waiters.delete(key);
      };
      const timer = setTimeout(
        () => {
          const cached = this.informer.get(name, namespace);
          if (cached !== undefined) see(cached);
          finish({ ok: false, rejection: "timed_out", detail: `judge child ${name} did not finish` });
        },
        Math.max(0, giveUpAt - Date.now()),
      );
      // A controller that stops leaves its waits to the replica that takes the claim over: they hold no exit.
      timer.unref();
      // Not a rejection: the watch still says when the child ends (a relist after a broken watch included).
      read().then(see, (err: unknown) =>
        this.logger?.warn({ child: key, err: messageOf(err) }, "reading a judge child failed; waiting on its watch"),
      );
    });
  }
}
