// "Applied means enforced" (issue 24 item 4, ADR 0074): each controller replica reports in a
// GuardPolicy's status which generation its guard has taken in, and an Agent is Ready only once
// every live replica has taken in every policy that covers the Agent's namespace. The pure part:
// the status entries a replica writes, and what an Agent still waits for.
import type { GuardPolicy } from "../api/types.js";

/** One replica's entry in a GuardPolicy's status.replicas. */
export interface ReplicaEnforcement {
  /** The replica (its pod name, or hostname + pid). */
  name: string;
  /** The metadata.generation its guard has taken in: compiled, or refused (then the previous version stays in force). */
  observedGeneration: number;
  /** The generation of the version it enforces (the last that compiled); absent when none did. */
  enforcedGeneration?: number;
}

/** The live replicas: identity → when its Lease was first seen (a replica that just started gets a moment to report). */
export type LiveReplicas = ReadonlyMap<string, Date>;

/** How long a replica that has just started may go without an entry before Agents wait for it (ms). */
export const JOIN_GRACE_MS = 15_000;

/** The entries of status.replicas as read (anything malformed is left out). */
export function replicaEntries(status: unknown): ReplicaEnforcement[] {
  const list = (status as { replicas?: unknown } | undefined)?.replicas;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (e): e is ReplicaEnforcement =>
      typeof e === "object" &&
      e !== null &&
      typeof (e as ReplicaEnforcement).name === "string" &&
      typeof (e as ReplicaEnforcement).observedGeneration === "number",
  );
}

/**
 * status.replicas after this replica reports `mine`: the other live replicas' entries kept, those
 * of replicas no longer alive dropped (when `live` is known), sorted by name so a rewrite of the
 * same facts is the same list.
 */
export function withMyEntry(
  existing: readonly ReplicaEnforcement[],
  mine: ReplicaEnforcement,
  live: LiveReplicas | undefined,
): ReplicaEnforcement[] {
  const others = existing.filter((e) => e.name !== mine.name && (live === undefined || live.has(e.name)));
  return [...others, mine].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Whether two entry lists say the same. */
export function sameEntries(a: readonly ReplicaEnforcement[], b: readonly ReplicaEnforcement[]): boolean {
  const key = (l: readonly ReplicaEnforcement[]) =>
    JSON.stringify(
      [...l].sort((x, y) => (x.name < y.name ? -1 : 1)).map((e) => [e.name, e.observedGeneration, e.enforcedGeneration ?? null]),
    );
  return key(a) === key(b);
}

/**
 * Why the policies covering a namespace are not yet in force everywhere: the first policy whose
 * metadata.generation some live replica has not reported, or undefined when every one has.
 * A replica whose Lease is younger than JOIN_GRACE_MS and that has no entry yet is not waited
 * for: it listed the policies before it began to serve, so it enforces what it listed.
 */
export function policyLag(covering: readonly GuardPolicy[], live: LiveReplicas, now: Date): string | undefined {
  for (const policy of covering) {
    const generation = policy.metadata.generation ?? 0;
    const entries = replicaEntries(policy.status);
    const behind: string[] = [];
    for (const [replica, since] of [...live].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const entry = entries.find((e) => e.name === replica);
      if (entry === undefined) {
        if (now.getTime() - since.getTime() >= JOIN_GRACE_MS) behind.push(`${replica} (nothing reported)`);
      } else if (entry.observedGeneration < generation) {
        behind.push(`${replica} (at generation ${entry.observedGeneration})`);
      }
    }
    if (behind.length > 0)
      return `GuardPolicy ${policy.metadata.namespace ?? ""}/${policy.metadata.name} generation ${generation} is not yet enforced by ${behind.join(", ")}`;
  }
  return undefined;
}
