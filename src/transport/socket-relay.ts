// A byte relay between two stream endpoints (TCP or a Unix socket). Local mode uses it so a
// worker container without any network (security.network.mode none) still reaches its gate:
// gavel listens on a Unix socket in a directory bind-mounted into the container and relays to
// the run's nats-server; inside, the worker runtime relays a loopback port to that socket,
// because the NATS client speaks TCP only. The container gets no route anywhere else.
import { connect, createServer, type Socket } from "node:net";

/** Where a relay listens or connects: a Unix socket path, or a TCP host and port. */
export type Endpoint = { path: string } | { host: string; port: number };

export interface Relay {
  /** The address it listens on (for TCP with port 0: the port the system chose). */
  readonly endpoint: Endpoint;
  /** Stops accepting and closes every relayed connection. */
  close(): Promise<void>;
}

/** The `unix://` URL form local mode hands a worker (GAVEL_NATS_URL), or undefined for any other URL. */
export function unixSocketPath(url: string): string | undefined {
  return url.startsWith("unix://") ? url.slice("unix://".length) : undefined;
}

/**
 * Listens on `listen` and relays each connection to `target` (a new upstream connection per
 * accepted one; either side closing or failing closes both). With `unref`, the relay alone
 * does not keep the process alive.
 */
export async function startRelay(listen: Endpoint, target: Endpoint, opts: { unref?: boolean } = {}): Promise<Relay> {
  const open = new Set<Socket>();
  const server = createServer((down) => {
    const up = connect("path" in target ? { path: target.path } : { host: target.host, port: target.port });
    for (const s of [down, up]) {
      open.add(s);
      s.once("close", () => open.delete(s));
    }
    down.once("error", () => up.destroy());
    up.once("error", () => down.destroy());
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if ("path" in listen) server.listen(listen.path, resolve);
    else server.listen(listen.port, listen.host, resolve);
  });
  if (opts.unref === true) server.unref();
  const addr = server.address();
  const endpoint: Endpoint =
    "path" in listen || addr === null || typeof addr === "string" ? listen : { host: addr.address, port: addr.port };
  return {
    endpoint,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
