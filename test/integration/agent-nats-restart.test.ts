// The worker runtime as a real process while its NATS restarts (a real nats-server in JWT
// mode, stopped and started again at the same address with the same JetStream store, as a
// deleted NATS pod comes back): a worker that starts while NATS is down waits for it, a
// proposal waiting while NATS restarts is decided once, and NATS down past the iteration's
// deadline ends the run with exit 75 and the "gate could not be reached" line.
import { mkdir, mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallProposal } from "../../src/api/protocol.js";
import { agentEnvironment } from "../../src/api/agent-env.js";
import { GATE_UNREACHABLE_EXIT, gateUnreachableOf } from "../../src/api/gate-unreachable.js";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { ToolCallService } from "../../src/gate/tool-call.js";
import { buildAgent, type AgentBuild } from "../harness/agent-build.js";
import { eventually, sleep } from "../harness/eventually.js";
import { restartableNats, type RestartableNats } from "../harness/nats.js";

const allow = (p: ToolCallProposal): ToolCallDecision => ({
  toolCallId: p.toolCallId,
  allowed: true,
  blocked_by: "none",
  reason: "ok",
  guard: { approved: true },
  skippedJudges: true,
  judges: [],
  latencyMs: 0,
});

/** The worker's JSON log lines of one event. */
const logged = (stderr: string, event: string) =>
  stderr
    .split("\n")
    .filter((l) => l.includes(`"event":"${event}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("worker runtime while NATS restarts (real process, real nats-server stopped and started)", () => {
  let nats: RestartableNats;
  let trust: NatsTrust;
  let gateNc: NatsConnection;
  let service: ToolCallService;
  let agent: AgentBuild;
  let root: string;
  /** Calls of decide per toolCallId. */
  const decided = new Map<string, number>();
  /** When set, decide waits on it (a judge that takes its time). */
  let hold: Promise<void> | undefined;

  beforeAll(async () => {
    agent = await buildAgent("agent-nats-restart");
    trust = createTrust();
    nats = await restartableNats({ extraConfig: serverConfig(trust).config });
    // The gate's connection, as the controller makes it: reconnects forever.
    gateNc = await connect({
      servers: nats.url,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      authenticator: credsAuthenticator(new TextEncoder().encode(issueControllerCredentials(trust).creds)),
    });
    service = await ToolCallService.start(gateNc, {
      decide: async (p) => {
        decided.set(p.toolCallId, (decided.get(p.toolCallId) ?? 0) + 1);
        await hold;
        return allow(p);
      },
    });
    root = await realpath(await mkdtemp(join(tmpdir(), "gavel-agent-nats-")));
  });
  afterAll(async () => {
    await service?.stop(500);
    await gateNc?.close();
    await nats?.dispose();
    await agent?.remove();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** Starts a worker that writes `ws/out.txt` through the gate, then answers "done". */
  async function startWorker(
    execution: string,
    iterationTimeoutSeconds: number,
    onStderr?: (stderr: string) => void,
  ): Promise<{ ws: string; done: ReturnType<AgentBuild["run"]> }> {
    const ws = join(root, execution);
    await mkdir(ws, { recursive: true });
    const env = agentEnvironment({
      namespace: "team",
      execution,
      iteration: 1,
      tools: ["fs.write"],
      mounts: [{ path: ws, readOnly: false }],
      natsUrl: nats.url,
      natsCreds: issueWorkerCredentials(trust, "team", execution).creds,
      iterationTimeoutSeconds,
    });
    const script = `- tool_calls: [{tool: fs.write, args: {path: "${ws}/out.txt", content: "x"}}]\n- final: done`;
    return { ws, done: agent.run({ ...env, GAVEL_SCRIPT: script, GAVEL_GATE_ATTEMPT_SECONDS: "0.5" }, undefined, onStderr) };
  }

  it("a worker that starts while NATS is down waits for it, then runs its call once", async () => {
    await nats.stop();
    // NATS comes back once the worker has been refused twice, however long node takes to start
    // it (a fixed 3 s saw one refusal at load 29, CI 2026-12-07).
    let refusals = 0;
    const { ws, done } = await startWorker("late-nats", 60, (stderr) => (refusals = stderr.split('"event":"nats_unreachable"').length - 1));
    await eventually(() => (refusals >= 2 ? true : undefined), { timeoutMs: 30_000, what: "two refused connects logged by the worker" });
    await nats.start();
    const r = await done;
    expect(r.stderr).not.toMatch(/"event":"failed"/);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("done\n");
    expect(await readFile(join(ws, "out.txt"), "utf8")).toBe("x");
    const waits = logged(r.stderr, "nats_unreachable");
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits[0]).toMatchObject({ nats: nats.url, attempt: 1 });
    expect(String(waits[0]?.error)).toMatch(/refused/i);
    // It waited at least the pause it announced after its first refusal.
    expect(logged(r.stderr, "nats_connected")[0]?.waitedMs).toBeGreaterThanOrEqual(Number(waits[0]?.retryInMs));
    expect([...decided.entries()].filter(([id]) => id.startsWith("i1-"))).not.toHaveLength(0);
    expect(Math.max(...decided.values())).toBe(1);
  });

  it("a proposal waiting while NATS restarts is decided once, and the worker finishes", async () => {
    decided.clear();
    let release = () => undefined as void;
    hold = new Promise<void>((r) => (release = r));
    const { ws, done } = await startWorker("restart-while-waiting", 60);
    await eventually(() => (decided.size > 0 ? true : undefined), { timeoutMs: 20_000, what: "the proposal at the gate" });
    await nats.stop();
    await sleep(2000);
    await nats.start();
    release();
    hold = undefined;
    const r = await done;
    expect(r.stderr).not.toMatch(/"event":"failed"/);
    expect(r.code).toBe(0);
    expect(await readFile(join(ws, "out.txt"), "utf8")).toBe("x");
    expect([...decided.values()]).toEqual([1]);
    expect(logged(r.stderr, "nats_disconnected")).not.toHaveLength(0);
    expect(logged(r.stderr, "nats_reconnected")[0]?.downMs).toBeGreaterThanOrEqual(1500);
  });

  it("NATS down past the iteration's deadline at start: exit 75, the gate could not be reached, nothing ran", async () => {
    await nats.stop();
    try {
      // 5 s: the worker gives up 2 s before (its margin), after 3 s of refused connects.
      const { ws, done } = await startWorker("no-nats", 5);
      const r = await done;
      expect(r.code).toBe(GATE_UNREACHABLE_EXIT);
      const u = gateUnreachableOf(r.code, r.stderr);
      expect(u?.detail).toMatch(new RegExp(`^NATS at ${nats.url}: .*refused.* \\(\\d+ attempt\\(s\\)\\)$`, "i"));
      // It gave up before its deadline, keeping its margin. No lower bound: the deadline counts
      // from when the worker was started, and node's own start took most of it at load (CI
      // 2026-12-07: one refused connect, 1 s, before giving up).
      expect(u?.seconds).toBeLessThanOrEqual(4);
      await expect(readFile(join(ws, "out.txt"))).rejects.toThrow(/ENOENT/);
    } finally {
      await nats.start();
    }
  });

  it("NATS gone while a proposal waits, past the iteration's deadline: exit 75 naming NATS, the call never ran", async () => {
    decided.clear();
    let release = () => undefined as void;
    hold = new Promise<void>((r) => (release = r));
    const { ws, done } = await startWorker("nats-gone", 8);
    await eventually(() => (decided.size > 0 ? true : undefined), { timeoutMs: 20_000, what: "the proposal at the gate" });
    await nats.stop();
    try {
      const r = await done;
      expect(r.code).toBe(GATE_UNREACHABLE_EXIT);
      const u = gateUnreachableOf(r.code, r.stderr);
      expect(u?.detail).toMatch(
        /^no decision for tool call i1-s1-[0-9a-f]+ \(fs\.write\) .*NATS unreachable \(disconnected for the last \d+ s\)/,
      );
      expect(logged(r.stderr, "nats_disconnected")).not.toHaveLength(0);
      await expect(readFile(join(ws, "out.txt"))).rejects.toThrow(/ENOENT/);
    } finally {
      release();
      hold = undefined;
      await nats.start();
    }
  });
});
