// The web view's HTTP handler, for `gavel ui`'s own server and for the controller's endpoint
// server (under /ui/): read-only pages of a namespace's Executions and of one Execution's
// live tree, kept current over server-sent events. It only ever reads (GET and HEAD; any
// other method is 405), shows no spec.input and no tool-call argument values (the view
// model carries none), and answers 404 for an Execution that does not exist.
import type { IncomingMessage, ServerResponse } from "node:http";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { Kube } from "../views/kube.js";
import { UI_CSS, UI_JS } from "./assets.js";
import type { ChangeFeed } from "./changes.js";
import { esc, namespacePath, renderNotFound, renderPage } from "./html.js";
import { viewPages } from "./pages.js";
import { send } from "./respond.js";
import { routeOf, type Route } from "./routes.js";

/** What the view reads, where it is served, and how its streams pace themselves. */
export interface UiOptions {
  kube: Kube;
  /** The namespace the root page shows. */
  namespace: string;
  /** What keeps the pages live: an API-server watch or the event stream. */
  changes: ChangeFeed;
  /** The path the view is served under, ending in "/" ("/" for `gavel ui`, "/ui/" in the controller). */
  base?: string;
  /** Host names (Host header, without the port) the view answers; others get 403 (DNS rebinding). Any when absent. */
  hosts?: readonly string[];
  logger?: Logger;
  /** How long a page's stream waits after a change before reading again, gathering a burst into one read. */
  settleMs?: number;
  /** Comment lines on an idle stream, so proxies (kubectl port-forward) keep it open. */
  keepAliveMs?: number;
}

/** Answers a request when it is the view's (true), else leaves it alone (false). */
export type UiHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** Answers what the view refuses of a request under its base: a Host it does not answer (403), a method other than GET and HEAD (405). True when it answered. */
function refused(options: UiOptions, req: IncomingMessage, res: ServerResponse): boolean {
  if (options.hosts !== undefined) {
    const host = (req.headers.host ?? "").replace(/:\d+$/, "");
    if (!options.hosts.includes(host)) {
      send(
        res,
        req,
        403,
        "text/plain; charset=utf-8",
        `host ${JSON.stringify(host)} is not one this view answers (${options.hosts.join(", ")})\n`,
      );
      return true;
    }
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, req, 405, "text/plain; charset=utf-8", `${req.method ?? ""} is not allowed: the web view is read-only\n`, {
      allow: "GET, HEAD",
    });
    return true;
  }
  return false;
}

/** The view's handler. */
export function uiHandler(options: UiOptions): UiHandler {
  const base = options.base ?? "/";
  const { kube, logger } = options;
  const bare = base.replace(/\/$/, "");
  const pages = viewPages(kube, base, {
    changes: options.changes,
    ...(logger !== undefined ? { logger } : {}),
    settleMs: options.settleMs ?? 100,
    keepAliveMs: options.keepAliveMs ?? 15_000,
  });

  async function serve(req: IncomingMessage, res: ServerResponse, route: Route, path: string): Promise<void> {
    switch (route.kind) {
      case "root": {
        const to = namespacePath(base, options.namespace);
        send(res, req, 302, "text/plain; charset=utf-8", `see ${to}\n`, { location: to });
        return;
      }
      case "asset":
        send(
          res,
          req,
          200,
          route.file === "ui.js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8",
          route.file === "ui.js" ? UI_JS : UI_CSS,
        );
        return;
      case "list":
        return pages.list(req, res, route);
      case "execution":
        return pages.execution(req, res, route);
      case "json":
        return pages.json(req, res, route);
      case "unknown":
        send(res, req, 404, "text/html; charset=utf-8", renderNotFound(base, `Nothing at ${path}.`));
    }
  }

  return async (req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path === bare && bare !== "") {
      send(res, req, 308, "text/plain; charset=utf-8", `see ${base}\n`, { location: base });
      return true;
    }
    if (!path.startsWith(base)) return false;
    if (refused(options, req, res)) return true;
    try {
      await serve(req, res, routeOf(path.slice(base.length)), path);
    } catch (err) {
      logger?.warn({ path, err: messageOf(err) }, "web view: a request failed");
      if (!res.headersSent)
        send(
          res,
          req,
          502,
          "text/html; charset=utf-8",
          renderPage(
            "error",
            base,
            `<section class="error"><h1>The API server could not be read</h1><p>${esc(messageOf(err))}</p></section>`,
            "",
          ),
        );
      else res.end();
    }
    return true;
  };
}
