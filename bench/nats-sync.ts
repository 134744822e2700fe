// What JetStream's `sync_interval: always` costs gavel (ADR 0073): the publish-to-acknowledgement
// latency of the event stream (EventStream.publish, as the controller publishes) and of the
// tool-call store's compare-and-set write (a claim, as the gate writes one per call), with every
// write flushed to disk before its ack, against the server's default (a flush every 2 minutes),
// in interleaved rounds of the same run: on one server, and on a three-server cluster with the
// streams on all three (the production values).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { decisionSubject, type ClaimRecord } from "../src/gate/tool-call/records.js";
import { ToolCallStore } from "../src/gate/tool-call/store.js";
import { EventStream } from "../src/transport/event-stream.js";
import { startNatsCluster } from "../test/harness/nats-cluster.js";
import { startNats } from "../test/harness/nats.js";
import { percentile } from "./load.js";
import type { BenchResult, BenchSuite } from "./types.js";

const WRITES = Number(process.env.GAVEL_BENCH_NATS_SYNC_WRITES ?? "200");
const ROUNDS = Number(process.env.GAVEL_BENCH_NATS_SYNC_ROUNDS ?? "5");
/** The cost accepted for never losing an acknowledged write: p50 within 4 times the default's (ADR 0073). */
const TARGET = 4;

/** One setup under test: its streams, opened once, and the samples (µs) of each kind of write. */
interface Setup {
  name: string;
  events: EventStream;
  store: ToolCallStore;
  publishes: number[];
  claims: number[];
  close(): Promise<void>;
}

async function setup(name: string, urls: string, replicas: number, stop: () => Promise<void>): Promise<Setup> {
  const nc: NatsConnection = await connect({ servers: urls });
  const events = await EventStream.open(nc, { replicas });
  const store = await ToolCallStore.open(nc, { replicas });
  return {
    name,
    events,
    store,
    publishes: [],
    claims: [],
    async close() {
      await store.close();
      await nc.close();
      await stop();
    },
  };
}

let serial = 0;

/** `n` sequential event publishes and `n` claims, each timed from the call to its acknowledgement. */
async function round(s: Setup, n: number, keep: boolean): Promise<void> {
  for (let i = 0; i < n; i++) {
    const e = EventStream.event({ namespace: "bench", root: "sync", execution: "sync", type: "execution.phase", data: { i } });
    let t = performance.now();
    await s.events.publish(e);
    const published = (performance.now() - t) * 1000;
    const step = serial++;
    const subject = decisionSubject({ namespace: "bench", execution: "sync", run: "0b5e7c1e" }, `call-${step}`);
    const claim: ClaimRecord = {
      kind: "claim",
      gate: "bench",
      write: `w${step}`,
      fingerprint: "0".repeat(64),
      iteration: 1,
      step,
      tool: "fs.read",
    };
    t = performance.now();
    const r = await s.store.put(subject, claim, 0);
    const claimed = (performance.now() - t) * 1000;
    if (!r.ok) throw new Error(`claim ${subject} not stored: ${r.conflict ? "conflict" : r.error.message}`);
    if (keep) {
      s.publishes.push(published);
      s.claims.push(claimed);
    }
  }
}

function rows(always: Setup, dflt: Setup, where: string): BenchResult[] {
  const notes = `${always.publishes.length} writes of each kind per setting, ${ROUNDS} interleaved rounds; ${where}; µs from the call to JetStream's acknowledgement`;
  const row = (what: string, a: number[], d: number[], p: number): BenchResult => {
    const value = percentile(a, p);
    const baseline = percentile(d, p);
    return {
      name: `${what} p${p}, sync_interval always (${where})`,
      baselineName: "the same, the server's default sync_interval (2 min)",
      baseline,
      value,
      unit: "µs",
      ratio: value / baseline,
      target: p === 50 ? `ratio <= ${TARGET}` : "reported",
      met: p === 50 ? value / baseline <= TARGET : true,
      notes,
    };
  };
  return [
    row("event publish", always.publishes, dflt.publishes, 50),
    row("event publish", always.publishes, dflt.publishes, 99),
    row("tool-call claim", always.claims, dflt.claims, 50),
    row("tool-call claim", always.claims, dflt.claims, 99),
  ];
}

async function run(): Promise<BenchResult[]> {
  const one = async (sync: string | undefined): Promise<Setup> => {
    const s = await startNats(sync !== undefined ? { jetstream: `sync_interval: ${sync}` } : {});
    return setup(`1 server, ${sync ?? "default"}`, s.url, 1, () => s.stop());
  };
  const three = async (sync: string | undefined): Promise<Setup> => {
    const c = await startNatsCluster(3, sync !== undefined ? { jetstream: `sync_interval: ${sync}` } : {});
    return setup(`3 servers, ${sync ?? "default"}`, c.urls, 3, () => c.stop());
  };
  const setups = [await one("always"), await one(undefined), await three("always"), await three(undefined)];
  try {
    // Warm every path (JIT, connections, the stores' files) before measuring.
    for (const s of setups) await round(s, 50, false);
    for (let r = 0; r < ROUNDS; r++) for (const s of r % 2 === 0 ? setups : [...setups].reverse()) await round(s, WRITES, true);
  } finally {
    for (const s of setups) await s.close();
  }
  const [a1, d1, a3, d3] = setups as [Setup, Setup, Setup, Setup];
  return [...rows(a1, d1, "one server"), ...rows(a3, d3, "three servers, 3 replicas")];
}

export const suite: BenchSuite = { name: "nats-sync", needs: ["nats"], run };
