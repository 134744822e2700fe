// `gavel events` against the real JetStream: prints a tree's events as JSON lines and
// folds them into the execution tree.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { gavel as runGavel } from "../harness/cli.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { startNats, type NatsServer } from "../harness/nats.js";

const gavel = (args: string[]) => runGavel(args, { cwd: process.cwd() });

describe("gavel events (real NATS)", () => {
  let server: NatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
    const stream = await EventStream.open(nc);
    const e = (execution: string, type: string, data: Record<string, unknown>) =>
      stream.publish(EventStream.event({ namespace: "demo", root: "run-1", execution, type, data }));
    await e("run-1", "execution.started", { agent: "writer" });
    await e("run-1", "iteration.started", { iteration: 1 });
    await e("run-1", "worker.finished", { iteration: 1, exitCode: 0 });
    await e("run-1", "validator.started", { iteration: 1, index: 0, type: "semantic" });
    await e("run-1", "judge.spawned", {
      iteration: 1,
      index: 0,
      judge: "rule-judge",
      child: "run-1-i1-v0-rule-judge",
      purpose: "validation",
    });
    await e("run-1-i1-v0-rule-judge", "judge.finished", { child: "run-1-i1-v0-rule-judge", score: 0.8, confidence: 1 });
    await e("run-1", "validator.result", { iteration: 1, index: 0, passed: true, score: 0.8, confidence: 1, reasoning: "ok" });
    await e("run-1", "iteration.finished", { iteration: 1, outcome: "passed" });
    await e("run-1", "execution.phase", { phase: "Succeeded", score: 0.8 });
    await stream.publish(EventStream.event({ namespace: "demo", root: "run-2", execution: "run-2", type: "execution.started", data: {} }));
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("prints one execution tree's events as JSON lines, in order", async () => {
    const r = await gavel(["events", "--nats", server.url, "-n", "demo", "run-1"]);
    expect(r.code).toBe(0);
    const lines = r.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; root: string });
    expect(lines.length).toBe(9);
    expect(lines.every((l) => l.root === "run-1")).toBe(true);
    expect(lines[0]?.type).toBe("execution.started");
    expect(lines.at(-1)?.type).toBe("execution.phase");
  });

  it("renders the tree with the judge child and its verdict", async () => {
    const r = await gavel(["events", "--nats", server.url, "-n", "demo", "run-1", "-o", "tree"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("execution run-1 (agent writer)  Succeeded  score 0.80");
    expect(r.out).toContain("judge rule-judge (run-1-i1-v0-rule-judge) score 0.80");
  });

  it("refuses bad usage with exit 2", async () => {
    expect((await gavel(["events", "--nats", server.url, "run-1"])).code).toBe(2);
    expect((await gavel(["events", "--nats", server.url, "-o", "yaml"])).code).toBe(2);
  });
});
