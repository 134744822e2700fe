// The controller's HTTP endpoints (controller-runtime's, in small): /healthz and /readyz on
// the probe address, /metrics on the metrics address (one server when both are the same).
// A probe is a list of named checks answered like kube-apiserver's: `ok`, or every check
// with [+]/[-] and why it fails; `?verbose` lists them on success too, `?exclude=NAME`
// leaves one out and /readyz/NAME asks one alone.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { messageOf } from "../../errors.js";

/** A named check: undefined when it passes, else why it fails (said in the probe's body). */
export interface Check {
  name: string;
  check(): string | undefined;
}

/** What an endpoint answers. */
export interface EndpointResponse {
  status: number;
  body: string;
  contentType?: string;
}

/** The answer of probe `probe` (healthz, readyz) over `checks` to a request for `path` with `query`. */
export function probeResponse(probe: string, checks: readonly Check[], path: string, query: URLSearchParams): EndpointResponse {
  const run = (c: Check): string | undefined => {
    try {
      return c.check();
    } catch (err) {
      return `the check threw: ${messageOf(err)}`;
    }
  };
  const one = path.slice(probe.length + 2);
  if (one !== "") {
    const c = checks.find((x) => x.name === one);
    if (c === undefined) return { status: 404, body: `no ${probe} check named ${one}; checks: ${checks.map((x) => x.name).join(", ")}\n` };
    const why = run(c);
    return why === undefined ? { status: 200, body: "ok\n" } : { status: 500, body: `internal server error: ${why}\n` };
  }
  const excluded = new Set(query.getAll("exclude"));
  const lines: string[] = [];
  let failed = false;
  for (const c of checks) {
    if (excluded.has(c.name)) {
      lines.push(`[+]${c.name} excluded: ok`);
      continue;
    }
    const why = run(c);
    failed ||= why !== undefined;
    lines.push(why === undefined ? `[+]${c.name} ok` : `[-]${c.name} failed: ${why}`);
  }
  if (failed) return { status: 500, body: `${lines.join("\n")}\n${probe} check failed\n` };
  if (query.has("verbose")) return { status: 200, body: `${lines.join("\n")}\n${probe} check passed\n` };
  return { status: 200, body: "ok\n" };
}

/** A bind address as controller-runtime's flags take it: ":8081", "127.0.0.1:8081", "[::1]:0"; "0" or "" turns the endpoint off. */
export function parseBindAddress(flag: string, value: string): { host?: string; port: number } | undefined {
  if (value === "" || value === "0") return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  if (m === null || !(port >= 0 && port <= 65535)) throw new Error(`${flag}: "${value}" is not HOST:PORT or :PORT (0 turns it off)`);
  const host = m[1] ?? m[2] ?? "";
  return host === "" ? { port } : { host, port };
}

/** GET handlers by path: exact paths, or a prefix ending in "/" for the path and everything under it. */
export type Routes = Record<string, (path: string, query: URLSearchParams) => EndpointResponse | Promise<EndpointResponse>>;

/** The routes of a probe: /NAME and /NAME/CHECK. */
export function probeRoutes(probe: string, checks: () => readonly Check[]): Routes {
  const handle = (path: string, query: URLSearchParams) => probeResponse(probe, checks(), path, query);
  return { [`/${probe}`]: handle, [`/${probe}/`]: handle };
}

/** One HTTP server answering `routes`; close() stops it. */
export class EndpointServer {
  private constructor(
    private readonly server: Server,
    readonly address: AddressInfo,
  ) {}

  /**
   * Listens on `bind` (port 0: any free one). `mounted` is asked first for every request and
   * answers those it takes (true): a handler that streams, such as the web view's.
   */
  static async listen(
    bind: { host?: string; port: number },
    routes: Routes,
    mounted?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>,
  ): Promise<EndpointServer> {
    const server = createServer(
      (req, res) =>
        void (async () => {
          if (mounted !== undefined && (await mounted(req, res))) return;
          await answer(routes, req, res);
        })(),
    );
    // Probes and scrapes are short; a stuck client must not hold a socket for long.
    server.requestTimeout = 10_000;
    server.headersTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(bind.port, bind.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return new EndpointServer(server, server.address() as AddressInfo);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

async function answer(routes: Routes, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  const path = url.pathname;
  const handler = routes[path] ?? Object.entries(routes).find(([p]) => p.endsWith("/") && path.startsWith(p))?.[1];
  let r: EndpointResponse;
  if (handler === undefined)
    r = {
      status: 404,
      body: `not found: ${path}; try ${Object.keys(routes)
        .filter((p) => !p.endsWith("/"))
        .join(", ")}\n`,
    };
  else if (req.method !== "GET" && req.method !== "HEAD") r = { status: 405, body: `${req.method ?? ""} is not allowed: GET ${path}\n` };
  else {
    try {
      r = await handler(path, url.searchParams);
    } catch (err) {
      r = { status: 500, body: `${messageOf(err)}\n` };
    }
  }
  res.writeHead(r.status, {
    "content-type": r.contentType ?? "text/plain; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  res.end(req.method === "HEAD" ? undefined : r.body);
}
