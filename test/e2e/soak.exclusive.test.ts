// The soak with faults on real pods (issue 24 item 5, docs/soak.md): N Executions at once on
// the single-node cluster (the guarded-tools worker: calls the guard blocks, calls the rule
// judge judges; a judged validator that passes or fails), run undisturbed as the baseline, then
// again while a part is struck K times at seeded random moments (SOAK_FAULT: the chart's
// controller SIGKILLed, by default; `nats`, its single NATS server restarted; `nats-cluster`,
// one server of a 3-server NATS cluster with 3-replica streams SIGKILLed). Each
// Execution must end as in the baseline (phase, score, iterations, validators, every call's
// decision, every judge child); no pod or Execution is created twice (a watch from before the
// first create); every call has exactly one decision in the tool-call store; nothing is left
// once the Executions are deleted. `make test` runs it short (3 Executions, 3 kills);
// `make soak` runs 10 and 20, or 3 NATS faults (SOAK_EXECUTIONS, SOAK_KILLS, SOAK_SEED, SOAK_FAULT).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useCluster, type Cluster } from "../harness/cluster.js";
import { chartNats, type ChartNats } from "../harness/decision-records.js";
import { ChartController, installChart } from "../harness/gavel-chart.js";
import { NatsServers } from "../harness/nats-servers.js";
import { decisionsPerCall, faultLoop, faultOf, FAULTS, runSet, seededRandom, type FaultKind, type SetRun } from "../harness/soak.js";

/** A whole number from the environment, or `fallback`; anything else is refused naming the variable. */
function wholeFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name}=${raw}: expected a whole number`);
  return Number(raw);
}

/** The part struck: `SOAK_FAULT` (controller, nats or nats-cluster; docs/soak.md). */
function faultFromEnv(): FaultKind {
  const raw = process.env.SOAK_FAULT ?? "";
  if (raw === "") return "controller";
  const kind = FAULTS.find((f) => f === raw);
  if (kind === undefined) throw new Error(`SOAK_FAULT=${raw}: expected one of ${FAULTS.join(", ")}`);
  return kind;
}

const FAULT = faultFromEnv();
/** The NATS cluster's install: three servers, every stream on all three, each write synced (charts/gavel/values-production.yaml). */
const NATS_CLUSTER = [
  "--set",
  "nats.cluster.replicas=3",
  "--set",
  "nats.streamReplicas=3",
  "--set-string",
  "nats.jetstream.syncInterval=always",
];
const EXECUTIONS = wholeFromEnv("SOAK_EXECUTIONS", 3);
const KILLS = wholeFromEnv("SOAK_KILLS", 3);
const SEED = wholeFromEnv("SOAK_SEED", Math.floor(Math.random() * 2 ** 31));
/** How long one set may take to end: generous, the kills' restarts included (up to ~30 s each). */
const SET_TIMEOUT_MS = 300_000 + EXECUTIONS * 15_000 + KILLS * 45_000;

/** Pods of one run by role label (worker, judge, ...), for the report. */
function podsByRole(run: SetRun): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of run.pods.seen.values()) {
    const role = p.labels["gavel.dev/role"] ?? "other";
    out[role] = (out[role] ?? 0) + 1;
  }
  return out;
}

const names = (run: SetRun, what: "pods" | "executions") => [...run[what].seen.values()].map((o) => o.name).sort();

const STRUCK = {
  controller: "the controller SIGKILLed",
  nats: "the NATS server restarted",
  "nats-cluster": "a server of 3 NATS SIGKILLed",
}[FAULT];

describe(`the soak: ${EXECUTIONS} Executions at once, ${STRUCK} ${KILLS} times (chart-installed controller and NATS, real pods)`, () => {
  let cluster: Cluster;
  let controller: ChartController;
  let nats: ChartNats;
  let servers: NatsServers;
  const sets: SetRun[] = [];
  const namespaces: string[] = [];
  const created = (ns: string) => namespaces.push(ns);

  beforeAll(async () => {
    cluster = await useCluster();
    controller = new ChartController(cluster);
    servers = new NatsServers(cluster);
    if (FAULT === "nats-cluster") await installChart(cluster, NATS_CLUSTER);
    await Promise.all([controller.ready(), servers.ready()]);
    nats = await chartNats(cluster);
  }, 600_000);

  afterAll(async () => {
    for (const s of sets) await Promise.all([s.pods.stop(), s.executions.stop(), s.records.stop()]);
    for (const ns of namespaces) await cluster.deleteNamespace(ns);
    await nats?.close();
    // Back to the fixture's single server for the files after this one.
    if (FAULT === "nats-cluster") await installChart(cluster);
  }, 600_000);

  it(
    "every Execution ends as in the undisturbed run; no pod or Execution created twice; one decision per call; nothing left",
    async () => {
      console.log(`soak: seed ${SEED} (SOAK_SEED=${SEED} repeats the fault moments), ${EXECUTIONS} Executions, ${FAULT} faults: ${KILLS}`);
      const base = await runSet(cluster, nats, "soak-base", { executions: EXECUTIONS, timeoutMs: SET_TIMEOUT_MS, created });
      sets.push(base);
      // Kills within about half as long as the undisturbed set took (each uptime uniform in 0 to twice the mean):
      // the set outlasts them (with T/K, the set of a short run ended before its third kill).
      const meanUptimeMs = Math.max(1000, Math.round(base.durationMs / (2 * KILLS)));
      const killed = await runSet(cluster, nats, "soak-kill", {
        executions: EXECUTIONS,
        timeoutMs: SET_TIMEOUT_MS,
        created,
        during: faultLoop(faultOf(FAULT, controller, servers), seededRandom(SEED), KILLS, meanUptimeMs),
      });
      sets.push(killed);
      const calls = decisionsPerCall(killed.records);
      const report = {
        seed: SEED,
        fault: FAULT,
        executions: EXECUTIONS,
        kills: killed.kills.length,
        baselineS: base.durationMs / 1000,
        killedS: killed.durationMs / 1000,
        restartsS: killed.kills.map((k) => Math.round(k.restartMs / 100) / 10),
        targets: killed.kills.map((k) => k.target),
        killAtS: killed.kills.map((k) => Math.round(k.at / 100) / 10),
        pods: { baseline: podsByRole(base), killed: podsByRole(killed) },
        executionsCreated: { baseline: base.executions.seen.size, killed: killed.executions.seen.size },
        calls: calls.size,
        decisions: [...calls.values()].reduce((a, b) => a + b, 0),
        records: killed.records.records.length,
        leftovers: { baseline: base.leftovers, killed: killed.leftovers },
      };
      console.log(`soak report: ${JSON.stringify(report)}`);

      // The baseline is what the set does: every Execution ended, the passing ones Succeeded.
      expect([...base.outcomes.keys()]).toHaveLength(EXECUTIONS);
      expect([...base.outcomes.values()].map((o) => o.phase)).toContain("Succeeded");
      // Every fault came while the set ran.
      expect(killed.kills).toHaveLength(KILLS);
      // Each Execution ends with the same phase, score, validators, decisions and judge children.
      expect(Object.fromEntries(killed.outcomes)).toEqual(Object.fromEntries(base.outcomes));
      // No pod and no judge child created twice for one step: the same names as the baseline's, each once.
      expect([...killed.pods.recreated().keys()]).toEqual([]);
      expect([...killed.executions.recreated().keys()]).toEqual([]);
      expect(names(killed, "pods")).toEqual(names(base, "pods"));
      expect(names(killed, "executions")).toEqual(names(base, "executions"));
      // One decision per call in the store, none lost: as many calls as the baseline's, each decided once.
      expect([...calls].filter(([, n]) => n !== 1)).toEqual([]);
      expect(calls.size).toBe(decisionsPerCall(base.records).size);
      // Nothing left once the Executions are deleted.
      expect(base.leftovers).toEqual([]);
      expect(killed.leftovers).toEqual([]);
    },
    2 * SET_TIMEOUT_MS + 300_000,
  );
});
