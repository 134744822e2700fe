// The pods of bench/gate-cluster.ts, in the gavel/bench image (gavel/agent plus dist/bench).
//   load: the worker pod of a real Execution (its Agent's image is gavel/bench). With the
//         credential the controller minted for that Execution it proposes guard-only calls
//         (fs.read, which skips the judges) to the gate of the chart's controller pod; with
//         a bench credential it makes plain request/reply calls of the same bytes to the echo
//         pod. Both from this process, in interleaved rounds, paced by bench/load.ts. Prints
//         one line `BENCH_RESULT {json}` (a PodResult) and exits 0.
//   echo: the responder: answers each request with a reply the size of a gate decision.
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision } from "../src/api/protocol.js";
import { encodeDecision, encodeProposal } from "../src/transport/codec.js";
import { inboxPrefix } from "../src/transport/subjects.js";
import { ToolCallClient } from "../src/transport/tool-call-client.js";
import { climbLadder, measureRounds, series, type Measure } from "./gate-cluster-schedule.js";
import { benchProposal, openLoop } from "./load.js";

/** The echo's subject and its callers' inbox prefix: all the bench credential may use. */
export const ECHO_SUBJECT = "bench.echo";
export const ECHO_INBOX = "_INBOX_bench";
/** The line of the load pod's log that carries its result. */
export const RESULT_MARK = "BENCH_RESULT ";

/** What the load pod measures (env BENCH_PLAN, JSON). */
export interface PodPlan {
  /** Rates (calls/s) measured in interleaved rounds, echo and gate at each. */
  rates: number[];
  rounds: number;
  /** Length of one measurement. */
  seconds: number;
  /** Rates tried in order for the highest one whose p99 stays under p99LimitMs (each for ladderSeconds, and 600 calls at least). */
  ladder: number[];
  ladderSeconds: number;
  p99LimitMs: number;
}

/** p50/p99 of one series (ms) and its size. */
export interface Series {
  p50: number;
  p99: number;
  n: number;
}

export interface RateResult {
  rate: number;
  echo: Series;
  gate: Series;
  /** How late the sends were against their schedule (ms), over both. */
  lag: Series;
}

export interface LadderStep {
  rate: number;
  kind: "echo" | "gate";
  p99: number;
  achieved: number;
  passed: boolean;
}

export interface PodResult {
  rates: RateResult[];
  ladder: LadderStep[];
  maxRate: { echo: number; gate: number };
  /** Gate calls made, each answered allowed by the guard with no judge. */
  decisions: number;
  /** The gate's own time per decide (its decision's latencyMs: the guard and what wraps it), over the rounds. */
  decide: Series;
}

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === "") throw new Error(`${name} is not set (the bench pod's environment)`);
  return v;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

// A reply of the size and shape of the gate's decision for a bench call.
function decisionSized(): string {
  const d: ToolCallDecision = {
    toolCallId: "b0-0000",
    allowed: true,
    blocked_by: "none",
    reason: "approved by the guard",
    guard: { approved: true },
    skippedJudges: false,
    judges: [],
    latencyMs: 0.0421,
  };
  return encodeDecision(d);
}

async function echo(): Promise<void> {
  const nc = await connect({
    servers: env("BENCH_NATS_URL"),
    name: "gavel-bench echo",
    authenticator: credsAuthenticator(new TextEncoder().encode(env("BENCH_ECHO_CREDS"))),
    inboxPrefix: ECHO_INBOX,
  });
  const reply = new TextEncoder().encode(decisionSized());
  nc.subscribe(ECHO_SUBJECT, { callback: (err, m) => void (err === null && m.respond(reply)) });
  await nc.flush();
  log("echo ready");
  await new Promise<void>((resolve) => process.once("SIGTERM", resolve));
  await nc.drain();
}

async function load(): Promise<void> {
  const plan = JSON.parse(env("BENCH_PLAN")) as PodPlan;
  const url = env("GAVEL_NATS_URL");
  const who = { namespace: env("GAVEL_NAMESPACE"), execution: env("GAVEL_EXECUTION"), iteration: Number(env("GAVEL_ITERATION")) };
  const workerCreds = await readFile(env("GAVEL_NATS_CREDS_FILE"));
  const gateNc = await connect({
    servers: url,
    name: "gavel-bench load (worker)",
    inboxPrefix: inboxPrefix(who.namespace, who.execution),
    authenticator: credsAuthenticator(workerCreds),
  });
  const echoNc = await connect({
    servers: url,
    name: "gavel-bench load (echo)",
    inboxPrefix: ECHO_INBOX,
    authenticator: credsAuthenticator(new TextEncoder().encode(env("BENCH_ECHO_CREDS"))),
  });
  const conns: NatsConnection[] = [gateNc, echoNc];
  try {
    const client = new ToolCallClient(gateNc, { attemptTimeoutMs: 5000, totalTimeoutMs: 60_000 });
    const request = encodeProposal(benchProposal("x", 0, who));
    let runs = 0;
    let decisions = 0;
    let decideMs: number[] | undefined;
    const measure: Measure = (kind, rate, seconds) => {
      const run = `r${runs++}`;
      return openLoop(
        rate,
        seconds,
        kind === "echo"
          ? () => echoNc.request(ECHO_SUBJECT, request, { timeout: 5000 })
          : async (i) => {
              const d = await client.propose(benchProposal(run, i, who));
              if (!d.allowed || d.blocked_by !== "none" || d.judges.length > 0)
                throw new Error(`bench call ${run}-${i} was not allowed by the guard alone: ${d.blocked_by} ${d.reason}`);
              decisions++;
              decideMs?.push(d.latencyMs);
            },
      );
    };

    // The echo pod may still be starting; then a warm-up of both at the lowest rate.
    for (let t = Date.now(); ;) {
      try {
        await echoNc.request(ECHO_SUBJECT, request, { timeout: 1000 });
        break;
      } catch (err) {
        if (Date.now() - t > 120_000) throw new Error(`the echo pod did not answer on ${ECHO_SUBJECT} within 120 s`, { cause: err });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const low = Math.min(...plan.rates);
    await measure("gate", low, 2);
    await measure("echo", low, 2);
    log("warm");
    decideMs = [];

    const rates = await measureRounds(plan, measure, log);
    const decide = series(decideMs);
    decideMs = undefined;
    const { ladder, maxRate } = await climbLadder(plan, measure, log);
    const result: PodResult = { rates, ladder, maxRate, decisions, decide };
    process.stdout.write(`${RESULT_MARK}${JSON.stringify(result)}\n`);
  } finally {
    for (const c of conns) await c.drain().catch(() => undefined);
  }
}

async function main(role: string): Promise<number> {
  if (role !== "load" && role !== "echo") {
    process.stderr.write(`usage: gate-cluster-pod.js load|echo (got ${role})\n`);
    return 2;
  }
  try {
    await (role === "echo" ? echo() : load());
    return 0;
  } catch (err) {
    process.stderr.write(`[bench] ${role} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 1;
  }
}

// The image's entry point; bench/gate-cluster.ts imports only the types and names above.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = await main(process.argv[2] ?? "load");
