// The Kubernetes driver's events in the durable JetStream event stream: the chart's controller
// pod (nats.url, nats.credentialsSecret) runs Executions on the single-node cluster and
// `gavel events` rebuilds their tree, each event once and in order, also when the controller
// is SIGKILLed mid-run (the restarted controller adopting the worker pod and the judge child it
// left, with no second pod or child), when NATS is down and when the stream refuses events (the publisher's
// outbox); this file's NATS servers listen on the node's address, where the pod reaches them.
// The publisher alone against a nats-server: test/integration/event-publisher.test.ts.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { DiscardPolicy, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OUTBOX_STREAM } from "../../src/controller/execution-events.js";
import { createTrust, issueControllerCredentials, serverConfig } from "../../src/transport/credentials.js";
import type { GavelEvent } from "../../src/api/events.js";
import { EVENT_STREAM } from "../../src/transport/subjects.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { agentYaml, QUICK_WRITER_VALIDATION } from "../harness/example-worker.js";
import { runOk } from "../harness/exec.js";
import { executionsIn, type Executions } from "../harness/executions.js";
import { ChartController, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { readEvents, startNatsForPods, type NatsServer } from "../harness/nats.js";
import { REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const CREDS_SECRET = "gavel-e2e-nats";

/** What an event is about, independent of its id: the test's own notion of "the same event". */
function aboutOf(e: GavelEvent): string {
  const d = e.data;
  return [e.execution, e.type, d.iteration, d.index, d.child, e.type === "execution.phase" ? d.phase : undefined]
    .map((v) => JSON.stringify(v ?? ""))
    .join("|");
}

/** The tree of a run with exit_code then a rule-judge semantic validator, passing in iteration 1. */
function expectJudgedRun(events: GavelEvent[], name: string): void {
  const child = `${name}-i1-v1-rule-judge`;
  expect(events.map((e) => `${e.execution} ${e.type}${e.type === "execution.phase" ? ` ${String(e.data.phase)}` : ""}`)).toEqual([
    `${name} execution.started`,
    `${name} execution.phase Running`,
    `${name} iteration.started`,
    `${name} worker.finished`,
    `${name} validator.started`,
    `${name} validator.result`,
    `${name} validator.started`,
    `${child} judge.spawned`,
    `${child} judge.finished`,
    `${name} validator.result`,
    `${name} iteration.finished`,
    `${name} execution.phase Succeeded`,
  ]);
  expect(events.every((e) => e.root === name)).toBe(true);
  // Each event exactly once: by dedup id, and by what it is about
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  expect(new Set(events.map(aboutOf)).size).toBe(events.length);
  expect(events.find((e) => e.type === "judge.finished")?.data).toMatchObject({ child, judge: "rule-judge", score: 1 });
  expect(events.filter((e) => e.type === "validator.result").map((e) => [e.data.index, e.data.passed])).toEqual([
    [0, true],
    [1, true],
  ]);
  expect(events.find((e) => e.type === "iteration.finished")?.data).toMatchObject({ iteration: 1, outcome: "passed", score: 1 });
}

describe("Execution events in the JetStream stream (the chart's controller pod on the single-node cluster)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let controller: ChartController;
  let runs: Executions;
  let ns: string;
  let nats: NatsServer;
  let nc: NatsConnection;
  const timings: Record<string, number> = {};

  async function runExecution(name: string, input: Record<string, unknown>): Promise<void> {
    await runs.apply(`
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: ${name}
spec:
  agentRef:
    name: judged-writer
  input: ${JSON.stringify(input)}
`);
  }

  const final = (name: string) => runs.final(name);

  /** The tree's events once its terminal phase is in the stream (publishing trails the status write a little). */
  async function streamed(name: string, conn = nc): Promise<GavelEvent[]> {
    return eventually(
      async () => {
        const events = await readEvents(conn, ns, name);
        return events.some((e) => e.type === "execution.phase" && e.data.phase === "Succeeded") ? events : undefined;
      },
      30_000,
      `${name}'s Succeeded event in the stream`,
    );
  }

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    controller = new ChartController(cluster);
    ns = await cluster.createNamespace("e2e-events");
    runs = executionsIn(cluster, ns, async () => `controller log:\n${await controller.log()}`);
    const r = await cluster.kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")]);
    if (r.code !== 0) throw new Error(`kubectl apply rule-judge: ${r.stderr}`);
    await runs.apply(agentYaml("judged-writer", 2, QUICK_WRITER_VALIDATION));
    nats = await startNatsForPods();
    nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const t0 = Date.now();
    // This file's own NATS instead of the chart's: its outage and stream limits are the test's to set.
    await controller.configure(["--set", "nats.enabled=false", "--set", `nats.url=${nats.url}`]);
    timings.helmUpgrade = (Date.now() - t0) / 1000;
  }, 900_000);

  afterAll(async () => {
    console.log(`execution events e2e timings (s): ${JSON.stringify(timings)}`);
    // Back to the fixture's values for the next file
    await controller?.configure();
    await nc?.close();
    await nats?.stop();
    if (cluster !== undefined && ns !== undefined) await cluster.deleteNamespace(ns);
    await cluster?.kubectl(["delete", "secret", CREDS_SECRET, "-n", RELEASE_NAMESPACE, "--ignore-not-found"]);
  }, 300_000);

  it("Given an Execution with a judge, `gavel events` shows its tree: started, iteration 1, validators, the judge's verdict, Succeeded, each once", async () => {
    const t0 = Date.now();
    await runExecution("streamed", { correct_first_time: true });
    const ex = await final("streamed");
    expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
    timings.succeeded = (Date.now() - t0) / 1000;
    const events = await streamed("streamed");
    timings.succeededToStream = (Date.now() - t0) / 1000 - timings.succeeded;
    expectJudgedRun(events, "streamed");
    // The dedup ids name the Execution (its uid) and what the event is about
    expect(events[0]?.id).toBe(`${ns}/streamed/${ex.metadata.uid}/started`);

    // And the CLI rebuilds the same tree from the stream
    const json = await runOk(GAVEL, ["events", "--nats", nats.url, "-n", ns, "streamed"], { timeoutMs: 30_000 });
    expect(
      json
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as GavelEvent).id),
    ).toEqual(events.map((e) => e.id));
    const tree = await runOk(GAVEL, ["events", "--nats", nats.url, "-n", ns, "streamed", "-o", "tree"], { timeoutMs: 30_000 });
    expect(tree).toMatch(/✓ execution streamed \(agent judged-writer\)\s+Succeeded\s+score 1\.00/);
    expect(tree).toMatch(/iteration 1\s+worker exited 0\s+passed/);
    expect(tree).toMatch(/judge rule-judge \(streamed-i1-v1-rule-judge\) score 1\.00/);
  }, 300_000);

  // The crash cases of the reconciler too (adoption, no second pod or child), folded in here so
  // the exclusive lane kills the controller once per situation, not twice.
  it("Given the controller is SIGKILLed while the worker runs and again once the judge child exists, the restarted ones adopt the pod and the child and leave no event missing or doubled", async () => {
    const t0 = Date.now();
    await runExecution("killed", { correct_first_time: true, sleep_seconds: 4 });
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: "gavel-killed-i1-ex", namespace: ns }).catch(() => undefined);
        return pod?.status?.phase === "Running" ? true : undefined;
      },
      120_000,
      "the worker pod to run",
    );
    await controller.kill();
    await eventually(
      async () => ((await runs.get("killed-i1-v1-rule-judge")) !== undefined ? true : undefined),
      120_000,
      "the judge child to exist",
    );
    await controller.kill();
    const ex = await final("killed");
    expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
    timings.killedTwice = (Date.now() - t0) / 1000;
    // The restarted controllers adopted the worker pod and the judge child: one worker run, one child
    expect(ex.status?.iteration).toBe(1);
    expect((await readFile(join(await runs.workspace("killed"), "runs.log"), "utf8")).trim().split("\n")).toHaveLength(1);
    expect(ex.status?.children?.map((c) => [c.name, c.phase])).toEqual([["killed-i1-v1-rule-judge", "Succeeded"]]);
    await runs.podsEnded("killed");
    expectJudgedRun(await streamed("killed"), "killed");
    // Nothing is left staged once published
    const jsm = await jetstreamManager(nc);
    const staged = await jsm.streams.getMessage(OUTBOX_STREAM, { last_by_subj: `gavel.outbox.${ns}.killed` });
    expect(staged).toBeNull();
  }, 420_000);

  it("Given the controller starts while NATS is down, the Execution still runs to Succeeded and its events arrive once NATS is up", async () => {
    // NATS goes away, then the controller crashes and comes back without it
    await nc.close();
    await nats.stop();
    await controller.kill();
    const t0 = Date.now();
    await runExecution("outage", { correct_first_time: true });
    const ex = await final("outage");
    expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
    timings.succeededWithoutNats = (Date.now() - t0) / 1000;
    // The controller's structured log says which event of which Execution waits, never a payload.
    expect(await controller.log()).toMatch(
      /"execution":"[^"]+\/outage","event":"execution\.started",[^\n]*"msg":"publishing an event failed, retrying"/,
    );

    // When NATS comes up at that address (an empty server), the queued events are published, in order, once
    nats = await startNatsForPods({ port: nats.port });
    nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const t1 = Date.now();
    const events = await eventually(
      async () => {
        const got = await readEvents(nc, ns, "outage");
        return got.some((e) => e.type === "execution.phase" && e.data.phase === "Succeeded") ? got : undefined;
      },
      90_000,
      "outage's events after NATS came up",
    );
    timings.natsUpToStream = (Date.now() - t1) / 1000;
    expectJudgedRun(events, "outage");
  }, 420_000);

  it("Given the stream refuses events for a whole run and the controller is then SIGKILLed, the restarted one publishes the run's events from the outbox", async () => {
    const jsm = await jetstreamManager(nc);
    // The stream exists once the controller has published into it
    await eventually(
      async () => ((await jsm.streams.info(EVENT_STREAM).catch(() => undefined)) !== undefined ? true : undefined),
      30_000,
      "the event stream",
    );
    const held = (await jsm.streams.info(EVENT_STREAM)).state.messages;
    await jsm.streams.update(EVENT_STREAM, { max_msgs: held, discard: DiscardPolicy.New });
    try {
      await runExecution("backlog", { correct_first_time: true });
      const ex = await final("backlog");
      expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
      await eventually(
        async () =>
          /"execution":"[^"]+\/backlog","event":"execution\.started",[^\n]*"msg":"publishing an event failed, retrying"/.test(
            await controller.log(),
          )
            ? true
            : undefined,
        10_000,
        "a refused publish",
      );
      // Nothing of the run reached the stream before the crash
      expect(await readEvents(nc, ns, "backlog")).toEqual([]);
      await controller.kill();
    } finally {
      await jsm.streams.update(EVENT_STREAM, { max_msgs: -1, discard: DiscardPolicy.Old });
    }
    const t0 = Date.now();
    expectJudgedRun(await streamed("backlog"), "backlog");
    timings.restartToBacklogPublished = (Date.now() - t0) / 1000;
    expect(await controller.log()).toMatch(
      /"execution":"[^"]+\/backlog","events":12,"msg":"publishing events staged by a previous controller"/,
    );
  }, 420_000);

  it("Given NATS in operator (JWT) mode, nats.credentialsSecret gives the controller its credentials and `gavel events --creds` reads the tree", async () => {
    const trust = createTrust();
    const secured = await startNatsForPods({ extraConfig: serverConfig(trust).config });
    const dir = await mkdtemp(join(tmpdir(), "gavel-events-creds-"));
    const credsFile = join(dir, "controller.creds");
    const creds = issueControllerCredentials(trust).creds;
    await writeFile(credsFile, creds, { mode: 0o600 });
    const reader = await connect({ servers: secured.url, authenticator: credsAuthenticator(new TextEncoder().encode(creds)) });
    try {
      // Without credentials the server refuses the connection (so the Secret is what makes it work)
      await expect(connect({ servers: secured.url })).rejects.toThrow();
      const secret = await cluster.kubectl([
        "create",
        "secret",
        "generic",
        CREDS_SECRET,
        "-n",
        RELEASE_NAMESPACE,
        `--from-file=nats.creds=${credsFile}`,
      ]);
      expect(secret.code, secret.stderr).toBe(0);
      await controller.configure([
        "--set",
        "nats.enabled=false",
        "--set",
        `nats.url=${secured.url}`,
        "--set",
        `nats.credentialsSecret=${CREDS_SECRET}`,
      ]);
      await runExecution("credentialed", { correct_first_time: true });
      expect((await final("credentialed")).status?.phase).toBe("Succeeded");
      expectJudgedRun(await streamed("credentialed", reader), "credentialed");
      const tree = await runOk(GAVEL, ["events", "--nats", secured.url, "--creds", credsFile, "-n", ns, "credentialed", "-o", "tree"], {
        timeoutMs: 30_000,
      });
      expect(tree).toMatch(/✓ execution credentialed/);
    } finally {
      await reader.close();
      await secured.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 420_000);
});
