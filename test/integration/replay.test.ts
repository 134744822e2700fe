// `gavel replay` on a run recorded through the real gate: a worker proposes its calls over the
// real nats-server, the tool-call service decides them with the gate under one GuardPolicy and
// stores them in JetStream; the run is read back from the store, replayed against the same
// policy (nothing changes) and a stricter one (the calls it would now deny), and through the CLI
// from a `gavel audit export` file; with the API server, `gavel replay EXECUTION` and `gavel
// audit export` read the store themselves. No tool is called anywhere: there is none.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { Agent, JsonObject } from "../../src/api/types.js";
import { createGate } from "../../src/gate/gate.js";
import { compilePolicy, PolicyStore } from "../../src/gate/guard.js";
import { RECORDED_RUN_FORMAT, recordedRunText, type RecordedRunHeader } from "../../src/gate/recorded-run.js";
import { outcomeText, replayCalls } from "../../src/gate/replay.js";
import { DECISION_STREAM, decisionSubject, readLoggedCalls, ToolCallService } from "../../src/gate/tool-call.js";
import { inboxPrefix } from "../../src/transport/subjects.js";
import { ToolCallClient } from "../../src/transport/tool-call-client.js";
import { gavel } from "../harness/cli.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { runWriter } from "../harness/judged-run.js";
import { viewerKubeconfig } from "../harness/viewer.js";
import { eventually } from "../harness/eventually.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const NS = "team";
const EXECUTION = "recorded";
const RUN = "5f0c2a9e-0000-4000-8000-000000000001";

const AGENT = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: {name: worker}
spec:
  runtime: {image: "example/worker:1"}
  tools: [fs.read, fs.write, cmd.run, http.get]
`;
const POLICY = `apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata: {name: team-rules}
spec:
  sequence_contracts:
    - {name: read_before_write, requires_prior: fs.read, triggers_for: fs.write, within_steps: 5}
`;
const STRICTER = `${POLICY}  revoked_tools:
    - {tool: http.get, reason: "no egress"}
  adaptive_rules:
    - {name: no_curl, match_field: args, pattern: curl, action: deny, reason: "no downloads"}
`;
const BROKEN = `${POLICY}  adaptive_rules:
    - {name: bad, match_field: args, pattern: "(", action: deny}
`;

const CALLS: [string, JsonObject][] = [
  ["fs.read", { path: "/workspace/a.txt" }],
  ["cmd.run", { command: "curl -s https://example.com/install.sh -o /tmp/i.sh" }],
  ["cmd.run", { command: "rm -rf /" }],
  ["fs.write", { path: "/workspace/b.txt", content: "x" }],
  ["http.get", { url: "https://example.com" }],
];

describe("gavel replay (a run recorded in JetStream by the real gate)", () => {
  let server: NatsServer;
  let gateConn: NatsConnection;
  let service: ToolCallService;
  let dir: string;
  const workers: NatsConnection[] = [];
  /** The gate's GuardPolicies: team-rules in each namespace a run is recorded in. */
  const policies = new PolicyStore();
  /** The run (uid) of each Execution name whose calls the gate decides. */
  const runs = new Map<string, string>([[EXECUTION, RUN]]);
  const agent: Pick<Agent, "spec"> = { spec: { tools: ["fs.read", "fs.write", "cmd.run", "http.get"] } };
  const spec = {
    sequence_contracts: [{ name: "read_before_write", requires_prior: "fs.read", triggers_for: "fs.write", within_steps: 5 }],
  };

  /** A worker of `namespace/execution` proposes CALLS, one after another, as its model would. */
  async function propose(namespace: string, execution: string): Promise<void> {
    const nc = await connect({ servers: server.url, inboxPrefix: inboxPrefix(namespace, execution) });
    workers.push(nc);
    const client = new ToolCallClient(nc, { attemptTimeoutMs: 2000 });
    for (const [i, [tool, args]] of CALLS.entries())
      await client.propose({ namespace, execution, iteration: 1, step: i + 1, toolCallId: `call-${i + 1}`, tool, args });
  }

  beforeAll(async () => {
    server = await startNats();
    gateConn = await connect({ servers: server.url });
    policies.update([{ name: "team-rules", namespace: NS, spec }]);
    const gate = createGate({ policyStore: policies, agent, judgeRunner: () => Promise.reject(new Error("no judges here")) });
    service = await ToolCallService.start(gateConn, {
      decide: (p, ctx) => gate.decide(p, ctx),
      runOf: (p) => runs.get(p.execution) ?? "unknown",
      callLog: {},
    });
    await propose(NS, EXECUTION);
    dir = await mkdtemp(join(tmpdir(), "gavel-replay-"));
    for (const [name, text] of Object.entries({
      "agent.yaml": AGENT,
      "same.yaml": POLICY,
      "stricter.yaml": STRICTER,
      "broken.yaml": BROKEN,
    }))
      await writeFile(join(dir, name), text);
  }, 60_000);

  afterAll(async () => {
    await service?.stop(1000);
    for (const nc of workers) await nc.close();
    await gateConn?.close();
    await server?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("reads the run's calls back from the recorded calls, proposals included, in step order; the decision store keeps no values", async () => {
    const { calls, unreadable } = await eventually(async () => {
      const r = await readLoggedCalls(gateConn, { namespace: NS, execution: EXECUTION, run: RUN });
      return r.calls.length === CALLS.length ? r : undefined;
    });
    expect(unreadable).toBe(0);
    expect(calls.map((c) => [c.proposal.step, c.proposal.tool, c.decision.allowed])).toEqual([
      [1, "fs.read", true],
      [2, "cmd.run", true],
      [3, "cmd.run", false],
      [4, "fs.write", true],
      [5, "http.get", true],
    ]);
    expect(calls[1]?.proposal.args).toEqual(CALLS[1]?.[1]);
    const jsm = await jetstreamManager(gateConn);
    const decision = await jsm.streams.getMessage(DECISION_STREAM, {
      last_by_subj: decisionSubject({ namespace: NS, execution: EXECUTION, run: RUN }, "call-3"),
    });
    expect(decision?.string()).toContain('"kind":"decision"');
    expect(decision?.string()).not.toContain("rm -rf");
    // Another run of the same name left nothing.
    expect((await readLoggedCalls(gateConn, { namespace: NS, execution: EXECUTION, run: "other-run" })).calls).toEqual([]);
  });

  it("Given the recorded run, the same policy lists no change and a stricter one lists the calls it would now deny", async () => {
    const { calls } = await readLoggedCalls(gateConn, { namespace: NS, execution: EXECUTION, run: RUN });
    const same = replayCalls(calls, { agent, policy: compilePolicy([{ name: "team-rules", namespace: NS, spec }]) });
    expect(same.filter((c) => c.changed)).toEqual([]);
    const stricter = compilePolicy([
      {
        name: "team-rules",
        namespace: NS,
        spec: {
          ...spec,
          revoked_tools: [{ tool: "http.get", reason: "no egress" }],
          adaptive_rules: [{ name: "no_curl", match_field: "args", pattern: "curl", action: "deny", reason: "no downloads" }],
        },
      },
    ]);
    const changed = replayCalls(calls, { agent, policy: stricter }).filter((c) => c.changed);
    expect(changed.map((c) => [c.step, c.tool, outcomeText(c.recorded), outcomeText(c.replayed), c.why])).toEqual([
      [2, "cmd.run", "allowed", "denied by guard (adaptive_rule)", "adaptive_rule: no_curl"],
      [5, "http.get", "allowed", "denied by guard (revocation)", "tool_revoked: no egress"],
    ]);
  });

  it("`gavel replay --from` an exported run prints the changed calls; bad input names the file", async () => {
    const { calls } = await readLoggedCalls(gateConn, { namespace: NS, execution: EXECUTION, run: RUN });
    const header: RecordedRunHeader = {
      format: RECORDED_RUN_FORMAT,
      namespace: NS,
      execution: EXECUTION,
      run: RUN,
      exportedAt: new Date().toISOString(),
    };
    await writeFile(join(dir, "run.jsonl"), recordedRunText(header, calls));
    const opts = { cwd: dir };

    const stricter = await gavel(["replay", "--from", "run.jsonl", "--agent", "agent.yaml", "--policy", "stricter.yaml"], opts);
    expect(stricter.code, stricter.err).toBe(0);
    expect(stricter.out).toContain(`Replayed 5 recorded calls of ${NS}/${EXECUTION} (run ${RUN}) against stricter.yaml`);
    expect(stricter.out).toContain("2 decisions would change:");
    expect(stricter.out).toMatch(/^1\s+2\s+cmd\.run\s+allowed\s+denied by guard \(adaptive_rule\)\s+adaptive_rule: no_curl$/m);
    expect(stricter.out).toMatch(/^1\s+5\s+http\.get\s+allowed\s+denied by guard \(revocation\)/m);

    const same = await gavel(["replay", "--from", "run.jsonl", "--agent", "agent.yaml", "--policy", "same.yaml"], opts);
    expect(same.code, same.err).toBe(0);
    expect(same.out).toContain("No decision would change.");

    const json = await gavel(["replay", "--from", "run.jsonl", "--agent", "agent.yaml", "--policy", "stricter.yaml", "-o", "json"], opts);
    expect(JSON.parse(json.out)).toMatchObject({ replayed: 5, changed: 2 });

    const missing = await gavel(["replay", "--from", "nope.jsonl", "--agent", "agent.yaml", "--policy", "same.yaml"], opts);
    expect([missing.code, missing.err]).toEqual([2, expect.stringContaining("--from nope.jsonl: ENOENT")]);
    const broken = await gavel(["replay", "--from", "run.jsonl", "--agent", "agent.yaml", "--policy", "broken.yaml"], opts);
    expect([broken.code, broken.err]).toEqual([2, expect.stringMatching(/--policy broken\.yaml.*adaptive_rules/)]);
    const noAgent = await gavel(["replay", "--from", "run.jsonl", "--policy", "same.yaml"], opts);
    expect([noAgent.code, noAgent.err]).toEqual([2, expect.stringContaining("give --agent FILE")]);
    await writeFile(join(dir, "bad.jsonl"), `${JSON.stringify(header)}\n{"proposal":{},"decision":{}}\n`);
    const bad = await gavel(["replay", "--from", "bad.jsonl", "--agent", "agent.yaml", "--policy", "same.yaml"], opts);
    expect([bad.code, bad.err]).toEqual([2, expect.stringMatching(/bad\.jsonl:2: proposal: /)]);
  });

  describe("with the API server (a viewer's credentials)", () => {
    let cp: ControlPlane;
    let ns: string;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      cp = await startControlPlane();
      ns = await cp.createNamespace("replay");
      const applied = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: `${AGENT}---\n${POLICY}` });
      expect(applied.code, applied.stderr).toBe(0);
      policies.update([
        { name: "team-rules", namespace: NS, spec },
        { name: "team-rules", namespace: ns, spec },
      ]);
      const writer = runWriter(cp.kc, ns);
      runs.set("recorded", (await writer.createRun("recorded", "worker", {})).metadata.uid ?? "");
      await writer.createRun("quiet", "worker", {});
      await propose(ns, "recorded");
      env = { KUBECONFIG: await viewerKubeconfig(cp, ns, dir), NATS_URL: server.url };
    }, 180_000);
    afterAll(async () => {
      await cp?.stop();
    });

    it("`gavel replay EXECUTION` reads the store and the policies in force: the candidate in place of the applied one", async () => {
      const opts = { cwd: dir, env };
      const stricter = await gavel(["replay", "recorded", "--policy", "stricter.yaml"], opts);
      expect(stricter.code, stricter.err).toBe(0);
      expect(stricter.out).toContain(`Replayed 5 recorded calls of ${ns}/recorded`);
      // The viewer may not read the controller namespace: the default policy is left out, and said so.
      expect(stricter.err).toContain("warning: the cluster default GuardPolicy gavel-system/default cannot be read");
      expect(stricter.out).toContain("2 decisions would change:");
      expect(stricter.out).toMatch(/^1\s+2\s+cmd\.run\s+allowed\s+denied by guard \(adaptive_rule\)\s+adaptive_rule: no_curl$/m);
      expect(stricter.out).toMatch(/^1\s+5\s+http\.get\s+allowed\s+denied by guard \(revocation\)/m);
      const same = await gavel(["replay", "recorded", "--policy", "same.yaml"], opts);
      expect(same.code, same.err).toBe(0);
      expect(same.out).toContain("No decision would change.");
      // An Execution whose worker proposed nothing, and one that does not exist.
      const quiet = await gavel(["replay", "quiet", "--policy", "same.yaml"], opts);
      expect([quiet.code, quiet.err]).toEqual([1, expect.stringContaining(`Execution ${ns}/quiet (run `)]);
      const gone = await gavel(["replay", "nope", "--policy", "same.yaml"], opts);
      expect([gone.code, gone.err]).toEqual([
        1,
        expect.stringContaining(`executions "nope" not found in namespace "${ns}"; give --run UID`),
      ]);
    });

    it("`gavel audit export` writes the run for `gavel replay --from`, its Agent included", async () => {
      const exported = await gavel(["audit", "export", "recorded", "--output-file", "recorded.jsonl"], { cwd: dir, env });
      expect(exported.code, exported.err).toBe(0);
      const replayed = await gavel(["replay", "--from", "recorded.jsonl", "--policy", "stricter.yaml"], { cwd: dir });
      expect(replayed.code, replayed.err).toBe(0);
      expect(replayed.out).toContain(`Replayed 5 recorded calls of ${ns}/recorded`);
      expect(replayed.out).toContain("2 decisions would change:");
    });
  });
});
