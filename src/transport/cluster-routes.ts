// The routes between the servers of the chart's JetStream cluster: their password, derived
// from the operator seed so that every server's bootstrap computes the same one without a
// Secret of its own (ADR 0073), and cluster.conf, which nats.conf includes in its cluster block.
import { createHmac } from "node:crypto";

/** The user the servers' routes authenticate as. */
export const ROUTE_USER = "gavel-routes";

/** The routes' password: an HMAC of a fixed label under the operator seed (the seed cannot be recovered from it). */
export function routePassword(operatorSeed: string): string {
  return createHmac("sha256", operatorSeed).update("gavel nats cluster routes v1").digest("base64url");
}

/**
 * cluster.conf for the servers at `routes` (`nats://HOST:PORT`, no credentials): the routes'
 * authorization and the route URLs carrying it. A malformed route is an error naming it.
 */
export function clusterRoutesConfig(password: string, routes: readonly string[]): string {
  if (routes.length === 0) throw new Error("a cluster needs its route URLs (--route nats://HOST:6222, one per server)");
  const urls = routes.map((route) => {
    let url: URL;
    try {
      url = new URL(route);
    } catch {
      throw new Error(`--route ${JSON.stringify(route)}: not a URL (nats://HOST:PORT)`);
    }
    if (!["nats:", "nats-route:"].includes(url.protocol) || url.hostname === "" || url.port === "" || url.username !== "")
      throw new Error(`--route ${JSON.stringify(route)}: must be nats://HOST:PORT without credentials`);
    url.username = ROUTE_USER;
    url.password = password;
    return url.toString();
  });
  return [
    `authorization { user: ${JSON.stringify(ROUTE_USER)}, password: ${JSON.stringify(password)} }`,
    "routes: [",
    ...urls.map((u) => `  ${JSON.stringify(u)}`),
    "]",
  ].join("\n");
}
