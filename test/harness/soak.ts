// The soak with faults on real pods (issue 24 item 5, docs/soak.md): the set of soak-set.ts run
// on the single-node cluster by the chart's controller, once undisturbed (the baseline) and
// once while a part is struck K times at seeded random moments (the controller SIGKILLed, the
// single NATS server restarted, or one server of a NATS cluster SIGKILLed); what each run
// created is counted from the API server (watches on pods and Executions from before the first
// create) and from the tool-call store (a consumer of every record stored), and what is left
// once its Executions are deleted is listed. test/e2e/soak.exclusive.test.ts asserts on it.
import * as k8s from "@kubernetes/client-node";
import type { Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { parseDecisionSubject, type ToolCallRecord } from "../../src/gate/tool-call.js";
import type { Cluster } from "./cluster.js";
import { eventually, sleep } from "./eventually.js";
import { PODS, watchCreated, type CreatedObjects } from "./created-objects.js";
import type { ChartNats, RecordWatch } from "./decision-records.js";
import { FINAL_PHASES, executionsIn } from "./executions.js";
import type { ChartController } from "./gavel-chart.js";
import type { NatsServers } from "./nats-servers.js";
import { outcomeOf, soakExecutionsYaml, soakSetupYaml, SOAK_AGENTS, type Outcome } from "./soak-set.js";

const EXECUTIONS: { apiVersion: string; kind: string; plural: string } = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: "Execution",
  plural: "executions",
};

/** A small seeded generator (mulberry32): the same seed, the same kill moments. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One fault struck during the set: the controller SIGKILLed, a NATS server restarted or SIGKILLed. */
export interface Kill {
  /** ms after the set's first create. */
  at: number;
  /** The part's uptime chosen before it (ms from its restart). */
  waitedMs: number;
  /** From the fault to the part running again (ms). */
  restartMs: number;
  /** What was struck (a pod's name). */
  target: string;
}

/** A part the soak strikes: `strike` makes one fault and resolves once the part runs again; `ready` once it serves. */
export interface Fault {
  /** How the report and the test's title name it. */
  name: string;
  strike(random: () => number): Promise<string>;
  ready(): Promise<unknown>;
}

/** What one run of the set did. */
export interface SetRun {
  namespace: string;
  /** From the first create until every Execution of the set has ended (ms). */
  durationMs: number;
  outcomes: Map<string, Outcome>;
  /** Every pod and Execution the API server created in the namespace during the run and its deletion. */
  pods: CreatedObjects;
  executions: CreatedObjects;
  /** Every record the tool-call store stored for the namespace. */
  records: RecordWatch;
  kills: Kill[];
  /** What was left in the namespace after its Executions were deleted: "kind/name". */
  leftovers: string[];
}

export interface SetOptions {
  executions: number;
  /** Runs beside the set until it returns; `ended()` says whether every Execution has ended. */
  during?: (ended: () => boolean, startedAt: number) => Promise<Kill[]>;
  /** How long the set may take to end. */
  timeoutMs: number;
  /** Told the namespace as soon as it exists (to delete it whatever happens next). */
  created?: (namespace: string) => void;
}

/** Runs the soak set in a new namespace, deletes its Executions and lists what is left; the caller stops the watches. */
export async function runSet(cluster: Cluster, nats: ChartNats, prefix: string, o: SetOptions): Promise<SetRun> {
  const api = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
  const namespace = await cluster.createNamespace(prefix);
  o.created?.(namespace);
  const runs = executionsIn(cluster, namespace);
  await runs.apply(soakSetupYaml(), { validate: "warn" });
  for (const agent of Object.values(SOAK_AGENTS)) {
    await eventually(
      async () =>
        (await cluster.kubectlOk([
          "get",
          "agent",
          agent,
          "-n",
          namespace,
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
        ])) === "True"
          ? true
          : undefined,
      120_000,
      `Agent ${agent} Ready`,
    );
  }
  const pods = await within(60_000, "a watch on pods", watchCreated(cluster.kc, PODS, namespace));
  const executions = await within(60_000, "a watch on Executions", watchCreated(cluster.kc, EXECUTIONS, namespace));
  const records = await within(60_000, "a consumer of the tool-call store", nats.watchRecords(namespace));
  const list = async (): Promise<Execution[]> =>
    ((await api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions" })) as { items: Execution[] })
      .items;
  const top = (all: Execution[]) => all.filter((e) => e.spec.parent === undefined);

  const startedAt = Date.now();
  await within(60_000, "kubectl apply of the Executions", runs.apply(soakExecutionsYaml(o.executions)));
  console.log(`soak ${namespace}: ${o.executions} Executions created at ${new Date(startedAt).toISOString()}`);
  let ended = false;
  let endedAt = 0;
  const watching = (async () => {
    while (!ended) {
      const all = await list().catch(() => undefined);
      if (all !== undefined && top(all).length === o.executions && top(all).every((e) => FINAL_PHASES.includes(e.status?.phase ?? ""))) {
        ended = true;
        endedAt = Date.now();
        console.log(`soak ${namespace}: every Execution ended ${(endedAt - startedAt) / 1000} s after the first create`);
      }
      if (!ended) await sleep(500);
      if (Date.now() - startedAt > o.timeoutMs) throw new Error(`the soak set in ${namespace} did not end in ${o.timeoutMs} ms`);
    }
  })();
  const [kills] = await Promise.all([o.during?.(() => ended, startedAt) ?? Promise.resolve([]), watching]);
  await watching;

  // Every call's status is folded from the store by the leader: once it counts every decided call, the run is read.
  const decidedCalls = (execution: string): ToolCallRecord[] => lastRecords(records, namespace, execution);
  const all = await eventually(
    async () => {
      const now = await list();
      const settled = top(now).every((e) => (e.status?.toolCalls?.proposed ?? 0) === decidedCalls(e.metadata.name).length);
      const childrenEnded = now.every((e) => FINAL_PHASES.includes(e.status?.phase ?? ""));
      return settled && childrenEnded ? now : undefined;
    },
    120_000,
    `every Execution of ${namespace} with its calls in its status and its children ended`,
  );
  const outcomes = new Map(top(all).map((e) => [e.metadata.name, outcomeOf(e, all, decidedCalls(e.metadata.name))]));
  const leftovers = await deleteAndList(cluster, namespace);
  return { namespace, durationMs: endedAt - startedAt, outcomes, pods, executions, records, kills, leftovers };
}

/** `p`, or an error naming `what` after `ms`: a step that hangs says which it is. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The last record of each call of one Execution, as the watch saw them stored. */
export function lastRecords(watch: RecordWatch, namespace: string, execution: string): ToolCallRecord[] {
  const last = new Map<string, ToolCallRecord>();
  watch.records.forEach((r, i) => {
    const call = parseDecisionSubject(watch.subjects[i] ?? "");
    if (call?.namespace === namespace && call.execution === execution) last.set(call.toolCallId, r);
  });
  return [...last.values()];
}

/** Decision records stored per call ("namespace/execution/toolCallId" → count): a call decided twice has 2. */
export function decisionsPerCall(watch: RecordWatch): Map<string, number> {
  const out = new Map<string, number>();
  watch.records.forEach((r, i) => {
    const call = parseDecisionSubject(watch.subjects[i] ?? "");
    const key = call === undefined ? (watch.subjects[i] ?? "") : `${call.namespace}/${call.execution}/${call.toolCallId}`;
    out.set(key, (out.get(key) ?? 0) + (r.kind === "decision" ? 1 : 0));
  });
  return out;
}

/**
 * The objects a namespace holds with no Execution in it: the API server's CA bundle, and
 * gavel's launcher binary (`gavel-launch-<hash>`, one per namespace and launcher build, shared
 * by every pod there and owned by none: log-streams.ts).
 */
const namespaceOwn = (obj: string): boolean => obj === "configmap/kube-root-ca.crt" || /^configmap\/gavel-launch-[0-9a-f]+$/.test(obj);

/** Deletes every Execution of the namespace, waits until it holds no pod, claim, Secret or ConfigMap of theirs, and returns what is left after 3 minutes. */
async function deleteAndList(cluster: Cluster, namespace: string): Promise<string[]> {
  await cluster.kubectlOk(["delete", "executions", "--all", "-n", namespace, "--wait=true", "--timeout=180s"]);
  const left = async () => {
    const out = await cluster.kubectlOk(["get", "pods,persistentvolumeclaims,secrets,configmaps", "-n", namespace, "-o", "name"]);
    return out
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.replace(/^persistentvolumeclaim\//, "pvc/"))
      .filter((l) => !namespaceOwn(l));
  };
  return eventually(async () => ((await left()).length === 0 ? [] : undefined), 180_000, `${namespace} empty`).catch(() => left());
}

/**
 * The fault loop: K times, after a seeded random uptime of the part (uniform in 0 to twice
 * `meanUptimeMs`, from its restart: a fault may hit its start-up too), strike it and wait until
 * it runs again. A fault that would come after the set has ended is not made (a part with
 * nothing to do tells nothing); the part is Ready again at the end.
 */
export function faultLoop(fault: Fault, random: () => number, kills: number, meanUptimeMs: number) {
  return async (ended: () => boolean, startedAt: number): Promise<Kill[]> => {
    const out: Kill[] = [];
    for (let i = 0; i < kills; i++) {
      const waitedMs = Math.round(random() * 2 * meanUptimeMs);
      await sleep(waitedMs);
      if (ended()) break;
      const at = Date.now();
      const target = await fault.strike(random);
      out.push({ at: at - startedAt, waitedMs, restartMs: Date.now() - at, target });
      console.log(
        `soak: ${fault.name} fault ${i + 1} (${target}) at ${(at - startedAt) / 1000} s (after ${waitedMs} ms up), running again ${(Date.now() - at) / 1000} s later`,
      );
    }
    await fault.ready();
    return out;
  };
}

/** The faults `SOAK_FAULT` names: the controller SIGKILLed, the single NATS server restarted, one server of a 3-server NATS cluster SIGKILLed. */
export const FAULTS = ["controller", "nats", "nats-cluster"] as const;
export type FaultKind = (typeof FAULTS)[number];

/** The fault of `kind` on the chart's parts. */
export function faultOf(kind: FaultKind, controller: ChartController, servers: NatsServers): Fault {
  switch (kind) {
    case "controller":
      return { name: kind, strike: () => controller.kill().then(() => "controller"), ready: () => controller.ready() };
    case "nats":
      return { name: kind, strike: () => servers.restart(), ready: () => Promise.all([servers.ready(), controller.ready()]) };
    case "nats-cluster":
      return { name: kind, strike: (random) => servers.kill(random), ready: () => Promise.all([servers.ready(), controller.ready()]) };
  }
}
