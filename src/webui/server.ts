// `gavel ui`'s own HTTP server (the web view's handler alone on one address), and the view as
// the controller mounts it on its endpoint server.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Kube } from "../views/kube.js";
import type { Logger } from "../telemetry/logger.js";
import { apiWatchFeed } from "./changes.js";
import { uiHandler, type UiHandler, type UiOptions } from "./handler.js";

/** Host names a loopback-bound view answers to (anything else is a DNS-rebinding attempt). */
export const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]", "::1"];

/** The web view served on its own. */
export class UiServer {
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Listens on host:port (port 0: any free one). */
  static async listen(host: string, port: number, options: UiOptions): Promise<UiServer> {
    const handle = uiHandler(options);
    const server = createServer((req, res) => {
      void handle(req, res).then((answered) => {
        if (!answered) {
          res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
          res.end("not found\n");
        }
      });
    });
    server.headersTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const a = server.address() as AddressInfo;
    const shown = a.family === "IPv6" ? `[${a.address}]` : a.address;
    return new UiServer(server, `http://${shown}:${a.port}${options.base ?? "/"}`);
  }

  /** Stops listening and ends every open page stream. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Where the controller serves the view on its endpoint server. */
export const CONTROLLER_UI_BASE = "/ui/";

/**
 * The view as the controller serves it (chart `ui.enabled`): under /ui/ on its endpoint
 * server, reading with the controller's own credentials, following the API server's watch.
 * It answers only loopback Host names: it is meant for `kubectl port-forward`, and a page of
 * another site must not read it through a developer's forwarded port (DNS rebinding).
 */
export function controllerWebView(kube: Kube, logger?: Logger): UiHandler {
  return uiHandler({
    kube,
    namespace: kube.namespace,
    changes: apiWatchFeed(kube, logger),
    base: CONTROLLER_UI_BASE,
    hosts: LOOPBACK_HOSTS,
    ...(logger !== undefined ? { logger } : {}),
  });
}
