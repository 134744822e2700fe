// What tells the web view that an Execution's tree may have changed: an API-server watch of
// the namespace's Executions, or (with NATS) the durable event stream of gavel events. Either
// is only a nudge: the view is then read again from the API server and built by
// buildExecutionView, so the page and `gavel describe` draw one model of the tree.
import type { Logger } from "../telemetry/logger.js";
import type { Execution } from "../api/types.js";
import { messageOf } from "../errors.js";
import type { Kube } from "../views/kube.js";
import { EXECUTIONS } from "../views/resources.js";
import { watchObjects } from "../views/watch.js";
import type { EventStream } from "../transport/event-stream.js";

/** One gavel event as the page's activity list shows it: when, which Execution, what (never its data). */
export interface Activity {
  time: string;
  execution: string;
  type: string;
}

/** A source of change nudges for a namespace, or for one Execution tree (root) in it. */
export interface ChangeFeed {
  /** Calls `onChange` whenever something in the tree may have changed, until the signal aborts. */
  follow(namespace: string, root: string | undefined, signal: AbortSignal, onChange: (activity?: Activity) => void): void;
  /** What the page says updates it. */
  readonly name: string;
}

/** True when `ex` belongs to the tree of `root` (it is root, or judges it). */
function inTree(ex: Execution, root: string | undefined): boolean {
  return root === undefined || ex.metadata.name === root || ex.spec.parent?.name === root;
}

/** Nudges from an API-server watch of the namespace's Executions. */
export function apiWatchFeed(kube: Kube, logger?: Logger): ChangeFeed {
  return {
    name: "API-server watch",
    follow(namespace, root, signal, onChange) {
      void watchObjects(kube.kc, EXECUTIONS, namespace, {
        allNamespaces: false,
        resourceVersion: "",
        signal,
        onEvent: (_type, obj) => {
          if (inTree(obj as Execution, root)) onChange();
        },
        onError: (err) =>
          logger?.warn({ namespace, execution: root, err: messageOf(err) }, "web view: the Execution watch failed; reopening"),
      });
    },
  };
}

/**
 * Nudges from the event stream: every event of the namespace or tree published from now on,
 * and one every `resyncMs`, as some status changes publish no event (the tool-call counts the
 * reconciler folds in).
 */
export function eventStreamFeed(stream: EventStream, logger?: Logger, resyncMs = 10_000): ChangeFeed {
  return {
    name: "event stream",
    follow(namespace, root, signal, onChange) {
      const resync = setInterval(() => onChange(), resyncMs);
      signal.addEventListener("abort", () => clearInterval(resync), { once: true });
      void (async () => {
        while (!signal.aborted) {
          try {
            for await (const e of stream.read({ namespace, ...(root !== undefined ? { root } : {}), onlyNew: true, signal })) {
              onChange({ time: e.time, execution: e.execution, type: e.type });
            }
          } catch (err) {
            if (signal.aborted) return;
            logger?.warn({ namespace, execution: root, err: messageOf(err) }, "web view: reading the event stream failed; retrying");
          }
          if (!signal.aborted) {
            // Something may have been missed while it was down: a nudge re-reads the view.
            await new Promise((resolve) => setTimeout(resolve, 1000));
            onChange();
          }
        }
      })();
    },
  };
}
