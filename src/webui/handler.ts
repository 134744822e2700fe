// The web view's HTTP handler, for `gavel ui`'s own server and for the controller's endpoint
// server (under /ui/): read-only pages of a namespace's Executions and of one Execution's
// live tree, kept current over server-sent events. It only ever reads (GET and HEAD; any
// other method is 405), shows no spec.input and no tool-call argument values (the view
// model carries none), and answers 404 for an Execution that does not exist.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Agent, Execution } from "../api/types.js";
import { buildExecutionView, type ExecutionView } from "../views/execution-view.js";
import { childrenOf, findObject, getObject, listObjects, type Kube } from "../views/kube.js";
import { AGENTS, EXECUTIONS } from "../views/resources.js";
import { messageOf, NotFoundError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { UI_CSS, UI_JS } from "./assets.js";
import type { ChangeFeed } from "./changes.js";
import { esc, executionPath, namespacePath, renderExecutionFragment, renderListFragment, renderNotFound, renderPage } from "./html.js";

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

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const SECURITY_HEADERS = {
  // Everything the page loads is its own; no inline script or style, no frames, no forms.
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** The Execution's tree as the view shows it, read from the API server; NotFoundError when it does not exist. */
export async function readExecutionView(kube: Kube, namespace: string, name: string): Promise<ExecutionView> {
  const ex = await getObject<Execution>(kube, EXECUTIONS, namespace, name);
  const [children, agent] = await Promise.all([childrenOf(kube, namespace, name), findObject<Agent>(kube, AGENTS, namespace, ex.spec.agentRef.name)]);
  return buildExecutionView(ex, children, agent);
}

/** What a request path names, relative to the base. */
type Route =
  | { kind: "root" }
  | { kind: "asset"; file: "ui.js" | "ui.css" }
  | { kind: "list"; namespace: string; stream: boolean }
  | { kind: "execution"; namespace: string; name: string; stream: boolean }
  | { kind: "json"; namespace: string; name: string }
  | { kind: "unknown" };

/** Parses a path under the base: namespaces/NS/executions[/NAME], the same under stream/ (events) or api/ (JSON). */
export function routeOf(rel: string): Route {
  if (rel === "") return { kind: "root" };
  if (rel === "assets/ui.js" || rel === "assets/ui.css") return { kind: "asset", file: rel.slice("assets/".length) as "ui.js" | "ui.css" };
  let parts: string[];
  try {
    parts = rel.split("/").map((p) => decodeURIComponent(p));
  } catch {
    return { kind: "unknown" };
  }
  const prefix = parts[0] === "stream" || parts[0] === "api" ? parts.shift() : undefined;
  const [n, ns, e, name, ...rest] = parts;
  if (n !== "namespaces" || ns === undefined || !DNS_LABEL.test(ns) || ns.length > 63 || e !== "executions" || rest.length > 0) return { kind: "unknown" };
  if (name === undefined || name === "") return prefix === "api" ? { kind: "unknown" } : { kind: "list", namespace: ns, stream: prefix === "stream" };
  if (!DNS_SUBDOMAIN.test(name) || name.length > 253) return { kind: "unknown" };
  return prefix === "api" ? { kind: "json", namespace: ns, name } : { kind: "execution", namespace: ns, name, stream: prefix === "stream" };
}

function send(res: ServerResponse, req: IncomingMessage, status: number, contentType: string, body: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": contentType, "content-length": String(Buffer.byteLength(body)), ...extra });
  res.end(req.method === "HEAD" ? undefined : body);
}

/** One server-sent event; every line of the data gets its own "data:" field (EventSource joins them with \n). */
export function sseEvent(event: string, data: string): string {
  return `event: ${event}\n${data.split(/\r\n|\r|\n/).map((l) => `data: ${l}`).join("\n")}\n\n`;
}

/** What a live stream needs of the view's options. */
type LiveOptions = Pick<UiOptions, "changes" | "logger"> & { settleMs: number; keepAliveMs: number };

/** Serves a live stream: `first` now, then `render` again after each change (undefined: the Execution is gone). */
function live(o: LiveOptions, req: IncomingMessage, res: ServerResponse, namespace: string, root: string | undefined, first: string, render: () => Promise<string | undefined>): void {
  res.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream; charset=utf-8", connection: "keep-alive", "x-accel-buffering": "no" });
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
        res.end(sseEvent("gone", `<section class="not-found"><h1>Deleted</h1><p>${esc(`Execution ${root ?? ""} in namespace ${namespace} was deleted.`)}</p></section>`));
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

/** Answers what the view refuses of a request under its base: a Host it does not answer (403), a method other than GET and HEAD (405). True when it answered. */
function refused(options: UiOptions, req: IncomingMessage, res: ServerResponse): boolean {
  if (options.hosts !== undefined) {
    const host = (req.headers.host ?? "").replace(/:\d+$/, "");
    if (!options.hosts.includes(host)) {
      send(res, req, 403, "text/plain; charset=utf-8", `host ${JSON.stringify(host)} is not one this view answers (${options.hosts.join(", ")})\n`);
      return true;
    }
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, req, 405, "text/plain; charset=utf-8", `${req.method ?? ""} is not allowed: the web view is read-only\n`, { allow: "GET, HEAD" });
    return true;
  }
  return false;
}

/** The view's handler. */
export function uiHandler(options: UiOptions): UiHandler {
  const base = options.base ?? "/";
  const { kube, logger } = options;
  const bare = base.replace(/\/$/, "");
  const liveOptions: LiveOptions = { changes: options.changes, ...(logger !== undefined ? { logger } : {}), settleMs: options.settleMs ?? 100, keepAliveMs: options.keepAliveMs ?? 15_000 };

  async function listFragment(namespace: string): Promise<string> {
    const { items } = await listObjects<Execution>(kube, EXECUTIONS, namespace);
    return renderListFragment(namespace, items, base, Date.now());
  }

  async function executionFragment(namespace: string, name: string): Promise<string | undefined> {
    try {
      return renderExecutionFragment(await readExecutionView(kube, namespace, name), base, Date.now());
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  async function serveList(req: IncomingMessage, res: ServerResponse, route: Extract<Route, { kind: "list" }>): Promise<void> {
    const html = await listFragment(route.namespace);
    if (route.stream) live(liveOptions, req, res, route.namespace, undefined, html, () => listFragment(route.namespace));
    else send(res, req, 200, "text/html; charset=utf-8", renderPage(`Executions in ${route.namespace}`, base, html, `${base}stream/${namespacePath("", route.namespace)}`));
  }

  async function serveExecution(req: IncomingMessage, res: ServerResponse, route: Extract<Route, { kind: "execution" }>): Promise<void> {
    const html = await executionFragment(route.namespace, route.name);
    if (html === undefined) send(res, req, 404, "text/html; charset=utf-8", renderNotFound(base, `No Execution ${route.name} in namespace ${route.namespace}.`));
    else if (route.stream) live(liveOptions, req, res, route.namespace, route.name, html, () => executionFragment(route.namespace, route.name));
    else send(res, req, 200, "text/html; charset=utf-8", renderPage(route.name, base, html, `${base}stream/${executionPath("", route.namespace, route.name)}`));
  }

  async function serveJson(req: IncomingMessage, res: ServerResponse, route: Extract<Route, { kind: "json" }>): Promise<void> {
    const view = await readExecutionView(kube, route.namespace, route.name).catch((err: unknown) => {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    });
    if (view === undefined) send(res, req, 404, "application/json", `${JSON.stringify({ error: `no Execution ${route.name} in namespace ${route.namespace}` })}\n`);
    else send(res, req, 200, "application/json", `${JSON.stringify(view)}\n`);
  }

  async function serve(req: IncomingMessage, res: ServerResponse, route: Route, path: string): Promise<void> {
    switch (route.kind) {
      case "root": {
        const to = namespacePath(base, options.namespace);
        send(res, req, 302, "text/plain; charset=utf-8", `see ${to}\n`, { location: to });
        return;
      }
      case "asset":
        send(res, req, 200, route.file === "ui.js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8", route.file === "ui.js" ? UI_JS : UI_CSS);
        return;
      case "list":
        return serveList(req, res, route);
      case "execution":
        return serveExecution(req, res, route);
      case "json":
        return serveJson(req, res, route);
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
      if (!res.headersSent) send(res, req, 502, "text/html; charset=utf-8", renderPage("error", base, `<section class="error"><h1>The API server could not be read</h1><p>${esc(messageOf(err))}</p></section>`, ""));
      else res.end();
    }
    return true;
  };
}
