// What the controller's ServiceAccount may do and what it may not: the rules the chart's RBAC
// must grant (no more), and the accesses around them that `kubectl auth can-i` must deny.
import { NS, type AccessScope } from "./chart-fixture.js";

/** One rule of a Role or ClusterRole. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
}

/** The ClusterRole the controller's code needs: one entry per (group, resource), verbs sorted. */
export const EXPECTED_RULES: Record<string, string[]> = {
  "100monkeys.ai/agents": ["get", "list", "watch"],
  "100monkeys.ai/agents/status": ["patch"],
  "100monkeys.ai/guardpolicies": ["get", "list", "watch"],
  "100monkeys.ai/guardpolicies/status": ["patch"],
  "100monkeys.ai/executions": ["create", "get", "list", "watch"],
  "100monkeys.ai/executions/status": ["update"],
  "100monkeys.ai/executions/finalizers": ["update"],
  "100monkeys.ai/toolapprovals": ["create", "get", "list", "watch"],
  "100monkeys.ai/toolapprovals/status": ["patch", "update"],
  "/pods": ["create", "delete", "deletecollection", "get", "list", "patch", "watch"],
  "/pods/log": ["get"],
  "/pods/exec": ["create", "get"],
  "/configmaps": ["create", "delete", "deletecollection", "get"],
  "/persistentvolumeclaims": ["create", "get"],
  "networking.k8s.io/networkpolicies": ["create"],
  "storage.k8s.io/storageclasses": ["list"],
  "snapshot.storage.k8s.io/volumesnapshotclasses": ["list"],
  "snapshot.storage.k8s.io/volumesnapshots": ["create", "get"],
  "/events": ["create"],
};

/** Flattens rules to "group/resource" → sorted verbs (a pair named twice is merged). */
export function flatten(rules: PolicyRule[]): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const r of rules) {
    for (const g of r.apiGroups ?? [""]) {
      for (const res of r.resources ?? []) {
        const set = (out[`${g}/${res}`] ??= new Set());
        for (const v of r.verbs) set.add(v);
      }
    }
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v].sort()]));
}

/** One access asked of the ServiceAccount: verb, resource, where. */
export type Access = [string, string, AccessScope?];

/** Every access the controller's code needs. */
export const NEEDED: Access[] = [
  ["list", "agents.100monkeys.ai", { all: true }],
  ["watch", "agents.100monkeys.ai", { all: true }],
  ["get", "agents.100monkeys.ai"],
  ["patch", "agents.100monkeys.ai", { sub: "status" }],
  ["list", "guardpolicies.100monkeys.ai", { all: true }],
  ["watch", "guardpolicies.100monkeys.ai"],
  ["get", "guardpolicies.100monkeys.ai", { ns: NS }],
  ["patch", "guardpolicies.100monkeys.ai", { sub: "status" }],
  ...["get", "list", "watch", "create"].map((v): [string, string] => [v, "executions.100monkeys.ai"]),
  ["update", "executions.100monkeys.ai", { sub: "status" }],
  ["update", "executions.100monkeys.ai", { sub: "finalizers" }],
  ["create", "toolapprovals.100monkeys.ai"],
  ["get", "toolapprovals.100monkeys.ai"],
  // The gate's wait for a person is a watch (approval-watch.ts), in every namespace it serves.
  ["list", "toolapprovals.100monkeys.ai", { all: true }],
  ["watch", "toolapprovals.100monkeys.ai"],
  ["patch", "toolapprovals.100monkeys.ai", { sub: "status" }],
  ["update", "toolapprovals.100monkeys.ai", { sub: "status" }],
  // patch: a warm judge pod is claimed for one call (ADR 0070).
  ...["create", "get", "list", "watch", "patch", "delete", "deletecollection"].map((v): [string, string] => [v, "pods"]),
  ["get", "pods", { sub: "log" }],
  ["create", "pods", { sub: "exec" }],
  ["get", "pods", { sub: "exec" }],
  ...["create", "get", "delete", "deletecollection"].map((v): [string, string] => [v, "configmaps"]),
  ["create", "persistentvolumeclaims"],
  ["get", "persistentvolumeclaims"],
  ["create", "networkpolicies.networking.k8s.io"],
  ["list", "storageclasses.storage.k8s.io", { all: true }],
  ["list", "volumesnapshotclasses.snapshot.storage.k8s.io", { all: true }],
  ["create", "volumesnapshots.snapshot.storage.k8s.io"],
  ["get", "volumesnapshots.snapshot.storage.k8s.io"],
  ["create", "events"],
  // Leader election, and each replica's own Lease (ADR 0074): listed, watched, deleted on stop.
  ...["get", "list", "watch", "create", "update", "delete"].map((v): [string, string, { ns: string }] => [
    v,
    "leases.coordination.k8s.io",
    { ns: NS },
  ]),
];

/** Accesses next to the needed ones, none of which the controller needs. */
export const NOT_NEEDED: Access[] = [
  ["get", "secrets"],
  ["list", "secrets", { all: true }],
  ["get", "secrets", { ns: NS }],
  ["list", "configmaps"],
  ["watch", "configmaps"],
  ["update", "configmaps"],
  ["create", "pods", { sub: "attach" }],
  ["update", "pods"],
  ["create", "agents.100monkeys.ai"],
  ["update", "agents.100monkeys.ai"],
  ["delete", "agents.100monkeys.ai"],
  ["update", "agents.100monkeys.ai", { sub: "status" }],
  ["create", "guardpolicies.100monkeys.ai"],
  ["delete", "guardpolicies.100monkeys.ai"],
  ["update", "executions.100monkeys.ai"],
  ["patch", "executions.100monkeys.ai"],
  ["delete", "executions.100monkeys.ai"],
  ["patch", "executions.100monkeys.ai", { sub: "status" }],
  // The controller records ToolApprovals' phases, never a person's decision (ADR 0067).
  ["approve", "toolapprovals.100monkeys.ai"],
  ["update", "toolapprovals.100monkeys.ai"],
  ["delete", "toolapprovals.100monkeys.ai"],
  ["list", "persistentvolumeclaims"],
  ["delete", "persistentvolumeclaims"],
  ["create", "persistentvolumes", { all: true }],
  ["delete", "networkpolicies.networking.k8s.io"],
  ["create", "storageclasses.storage.k8s.io", { all: true }],
  ["create", "volumesnapshotclasses.snapshot.storage.k8s.io", { all: true }],
  ["delete", "volumesnapshots.snapshot.storage.k8s.io"],
  ["list", "volumesnapshots.snapshot.storage.k8s.io", { all: true }],
  ["patch", "events"],
  ["list", "events"],
  ["create", "events.events.k8s.io"],
  ["get", "leases.coordination.k8s.io"],
  ["list", "leases.coordination.k8s.io", { all: true }],
  ["patch", "leases.coordination.k8s.io", { ns: NS }],
  ["create", "serviceaccounts", { sub: "token", ns: NS }],
  ["create", "namespaces", { all: true }],
  ["list", "nodes", { all: true }],
  ["update", "customresourcedefinitions.apiextensions.k8s.io", { all: true }],
  ["bind", "clusterroles.rbac.authorization.k8s.io", { all: true }],
  ["escalate", "clusterroles.rbac.authorization.k8s.io", { all: true }],
  ["delete", "validatingadmissionpolicies.admissionregistration.k8s.io", { all: true }],
  ["*", "*", { all: true }],
];

/** An access as a failure names it: "get pods/log in team". */
export const accessLabel = (v: string, r: string, o: AccessScope = {}) =>
  `${v} ${r}${o.sub !== undefined ? `/${o.sub}` : ""} in ${o.all === true ? "*" : (o.ns ?? "team")}`;
