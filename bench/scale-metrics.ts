// What the scale bench reads from the API server's own /metrics: apiserver_request_total
// before and after a run, the difference by verb and resource, and which of it gavel did.
// Pure functions of the exposition text, tested without a server.
import { parseSamples, type Sample } from "../test/harness/metrics.js";

/** API requests of one kind: verb as apiserver_request_total names it (GET, LIST, WATCH, POST for a create, PUT for an update, PATCH, DELETE, ...) and resource. */
export interface RequestKind {
  verb: string;
  /** `group/resource/subresource`, the core group as "": e.g. "/pods/log", "100monkeys.ai/executions/status". */
  resource: string;
  count: number;
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"]);

/** Whether the API server's verb changes state. */
export function isWrite(verb: string): boolean {
  return WRITES.has(verb);
}

function kindKey(s: Sample): string {
  const { verb = "", group = "", resource = "", subresource = "" } = s.labels;
  return `${verb} ${group}/${resource}${subresource !== "" ? `/${subresource}` : ""}`;
}

/** apiserver_request_total of `after` minus `before`, by verb and resource (kinds that did not change left out), most first. */
export function requestsBetween(before: string, after: string): RequestKind[] {
  const sum = (text: string) => {
    const m = new Map<string, number>();
    for (const s of parseSamples(text).filter((x) => x.name === "apiserver_request_total"))
      m.set(kindKey(s), (m.get(kindKey(s)) ?? 0) + s.value);
    return m;
  };
  const a = sum(before);
  const out: RequestKind[] = [];
  for (const [key, value] of sum(after)) {
    const count = value - (a.get(key) ?? 0);
    if (count <= 0) continue;
    const [verb = "", resource = ""] = key.split(" ");
    out.push({ verb, resource, count });
  }
  return out.sort((x, y) => y.count - x.count || `${x.verb}${x.resource}`.localeCompare(`${y.verb}${y.resource}`));
}

/**
 * Requests the other clients of the harness make, never gavel: kube-scheduler binds pods and
 * records events.k8s.io Events, kwok writes pod and node status (and deletes pods a grace period
 * let stay), nodes are the nodes' own. Leases are left out too: the API server renews its own,
 * and gavel's leader Lease (--leader-elect, as the chart runs it) is renewed by the clock, a cost
 * per second of the run, not per Execution.
 */
export function notGavels(k: RequestKind): boolean {
  return (
    k.resource === "/pods/binding" ||
    k.resource === "/pods/status" ||
    k.resource.startsWith("/nodes") ||
    k.resource.startsWith("coordination.k8s.io/") ||
    k.resource.startsWith("events.k8s.io/")
  );
}

/**
 * gavel's writes: the writes of every client but the scheduler and kwok (notGavels), less the
 * harness's own (`harness`: e.g. "POST 100monkeys.ai/executions" → the top-level Executions it
 * created).
 */
export function gavelWrites(kinds: RequestKind[], harness: Record<string, number>): RequestKind[] {
  return kinds
    .filter((k) => isWrite(k.verb) && !notGavels(k))
    .map((k) => ({ ...k, count: k.count - (harness[`${k.verb} ${k.resource}`] ?? 0) }))
    .filter((k) => k.count > 0);
}

/** A table line per kind: `POST /events 3.0` (count per Execution, one decimal). */
export function perExecution(kinds: RequestKind[], executions: number): string[] {
  return kinds.map((k) => `${k.verb} ${k.resource} ${(k.count / executions).toFixed(1)}`);
}
