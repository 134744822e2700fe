// What a path under the web view's base names: the root, an asset, a namespace's list of
// Executions, one Execution (each whole or as a stream), or an Execution's JSON.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** What a request path names, relative to the base. */
export type Route =
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
  if (n !== "namespaces" || ns === undefined || !DNS_LABEL.test(ns) || ns.length > 63 || e !== "executions" || rest.length > 0)
    return { kind: "unknown" };
  if (name === undefined || name === "")
    return prefix === "api" ? { kind: "unknown" } : { kind: "list", namespace: ns, stream: prefix === "stream" };
  if (!DNS_SUBDOMAIN.test(name) || name.length > 253) return { kind: "unknown" };
  return prefix === "api" ? { kind: "json", namespace: ns, name } : { kind: "execution", namespace: ns, name, stream: prefix === "stream" };
}
