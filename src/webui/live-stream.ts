// A page kept current over server-sent events: the first rendering at once, then a new one
// after each change (a burst of changes read once), keep-alive comments while idle, and a
// "gone" event when the Execution is deleted.
import type { IncomingMessage, ServerResponse } from "node:http";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { ChangeFeed } from "./changes.js";
import { esc } from "./html.js";
import { SECURITY_HEADERS } from "./respond.js";

/** One server-sent event; every line of the data gets its own "data:" field (EventSource joins them with \n). */
export function sseEvent(event: string, data: string): string {
  return `event: ${event}\n${data
    .split(/\r\n|\r|\n/)
    .map((l) => `data: ${l}`)
    .join("\n")}\n\n`;
}

/** What a live stream needs of the view's options. */
export interface LiveOptions {
  changes: ChangeFeed;
  logger?: Logger;
  settleMs: number;
  keepAliveMs: number;
}

/** Serves a live stream: `first` now, then `render` again after each change (undefined: the Execution is gone). */
export function live(
  o: LiveOptions,
  req: IncomingMessage,
  res: ServerResponse,
  namespace: string,
  root: string | undefined,
  first: string,
  render: () => Promise<string | undefined>,
): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    "content-type": "text/event-stream; charset=utf-8",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.write(`retry: 2000\n${sseEvent("view", first)}`);
  const stop = new AbortController();
  let last = first;
  let timer: NodeJS.Timeout | undefined;
  let reading = false;
  let again = false;
  /** Renders once and sends what changed; false when the stream is over. */
  const readOnce = async (): Promise<boolean> => {
    try {
      const html = await render();
      if (stop.signal.aborted) return false;
      if (html === undefined) {
        res.end(
          sseEvent(
            "gone",
            `<section class="not-found"><h1>Deleted</h1><p>${esc(`Execution ${root ?? ""} in namespace ${namespace} was deleted.`)}</p></section>`,
          ),
        );
        stop.abort();
        return false;
      }
      if (html !== last) {
        last = html;
        res.write(sseEvent("view", html));
      }
    } catch (err) {
      o.logger?.warn({ namespace, execution: root, err: messageOf(err) }, "web view: reading the view failed; the page keeps the last one");
    }
    return true;
  };
  // One read at a time; a change during a read asks for one more.
  const read = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        if (!(await readOnce())) return;
      } while (again && !stop.signal.aborted);
    } finally {
      reading = false;
    }
  };
  const nudge = (activity?: { time: string; execution: string; type: string }) => {
    if (stop.signal.aborted) return;
    if (activity !== undefined) res.write(sseEvent("activity", JSON.stringify(activity)));
    timer ??= setTimeout(() => {
      timer = undefined;
      void read();
    }, o.settleMs);
  };
  const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), o.keepAliveMs);
  const close = () => {
    stop.abort();
    clearInterval(keepAlive);
    clearTimeout(timer);
  };
  req.on("close", close);
  res.on("close", close);
  o.changes.follow(namespace, root, stop.signal, nudge);
}
