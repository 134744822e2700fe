// The web view's pages: a namespace's Executions, one Execution's tree (each a whole page or a
// live stream of it) and an Execution's view model as JSON, read from the API server.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Agent, Execution } from "../api/types.js";
import { NotFoundError } from "../errors.js";
import { buildExecutionView, type ExecutionView } from "../views/execution-view.js";
import { childrenOf, findObject, getObject, listObjects, type Kube } from "../views/kube.js";
import { AGENTS, EXECUTIONS } from "../views/resources.js";
import { executionPath, namespacePath, renderExecutionFragment, renderListFragment, renderNotFound, renderPage } from "./html.js";
import { live, type LiveOptions } from "./live-stream.js";
import { send } from "./respond.js";
import type { Route } from "./routes.js";

/** The Execution's tree as the view shows it, read from the API server; NotFoundError when it does not exist. */
export async function readExecutionView(kube: Kube, namespace: string, name: string): Promise<ExecutionView> {
  const ex = await getObject<Execution>(kube, EXECUTIONS, namespace, name);
  const [children, agent] = await Promise.all([
    childrenOf(kube, namespace, name),
    findObject<Agent>(kube, AGENTS, namespace, ex.spec.agentRef.name),
  ]);
  return buildExecutionView(ex, children, agent);
}

/** Serves one route kind's page. */
type Serve<K extends Route["kind"]> = (req: IncomingMessage, res: ServerResponse, route: Extract<Route, { kind: K }>) => Promise<void>;

/** The pages of a view served under `base`. */
export interface Pages {
  list: Serve<"list">;
  execution: Serve<"execution">;
  json: Serve<"json">;
}

/** The view's pages, read through `kube`, with links under `base`. */
export function viewPages(kube: Kube, base: string, liveOptions: LiveOptions): Pages {
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
    else
      send(
        res,
        req,
        200,
        "text/html; charset=utf-8",
        renderPage(`Executions in ${route.namespace}`, base, html, `${base}stream/${namespacePath("", route.namespace)}`),
      );
  }

  async function serveExecution(req: IncomingMessage, res: ServerResponse, route: Extract<Route, { kind: "execution" }>): Promise<void> {
    const html = await executionFragment(route.namespace, route.name);
    if (html === undefined)
      send(res, req, 404, "text/html; charset=utf-8", renderNotFound(base, `No Execution ${route.name} in namespace ${route.namespace}.`));
    else if (route.stream)
      live(liveOptions, req, res, route.namespace, route.name, html, () => executionFragment(route.namespace, route.name));
    else
      send(
        res,
        req,
        200,
        "text/html; charset=utf-8",
        renderPage(route.name, base, html, `${base}stream/${executionPath("", route.namespace, route.name)}`),
      );
  }

  async function serveJson(req: IncomingMessage, res: ServerResponse, route: Extract<Route, { kind: "json" }>): Promise<void> {
    const view = await readExecutionView(kube, route.namespace, route.name).catch((err: unknown) => {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    });
    if (view === undefined)
      send(
        res,
        req,
        404,
        "application/json",
        `${JSON.stringify({ error: `no Execution ${route.name} in namespace ${route.namespace}` })}\n`,
      );
    else send(res, req, 200, "application/json", `${JSON.stringify(view)}\n`);
  }

  return { list: serveList, execution: serveExecution, json: serveJson };
}
