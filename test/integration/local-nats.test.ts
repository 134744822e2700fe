// `gavel run --nats`: a local run publishes its events to the real JetStream event stream,
// where `gavel events` reads them back as the same tree (judge children filed under the root).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, runOk } from "../harness/exec.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { BASE_IMAGE, HARNESS_DIR, REPO_DIR } from "../harness/paths.js";

const WORKER = `apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: nats-worker }
spec:
  runtime: { image: gavel/test-echo-worker:dev, pull_policy: Never }
  security: { network: { mode: none } }
  execution:
    mode: iterative
    max_iterations: 2
    validation:
      - type: regex
        pattern: "^second$"
      - type: semantic
        judge_agent: rule-judge
        criteria: "contains: second"
`;

describe("gavel run --nats (real Docker, real NATS)", () => {
  let nats: NatsServer;
  let dir: string;

  beforeAll(async () => {
    await runOk(join(HARNESS_DIR, "docker-up.sh"), []);
    nats = await startNats();
    dir = await mkdtemp(join(tmpdir(), "gavel-local-nats-"));
    await writeFile(
      join(dir, "Dockerfile"),
      `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nCMD ["node", "-e", "console.log(process.env.GAVEL_ITERATION === '1' ? 'first' : 'second')"]\n`,
    );
    await runOk("docker", ["build", "-q", "--build-arg", `BASE_IMAGE=${BASE_IMAGE}`, "-t", "gavel/test-echo-worker:dev", dir]);
    await writeFile(join(dir, "worker.yaml"), WORKER);
  }, 600_000);
  afterAll(async () => {
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("publishes every event of the run; gavel events folds them into the same tree", async () => {
    const gavel = join(REPO_DIR, "bin/gavel");
    const r = await run(gavel, [
      "run",
      "--nats",
      nats.url,
      "--name",
      "nats-run-1",
      "-f",
      join(dir, "worker.yaml"),
      "-f",
      join(REPO_DIR, "judges/rule-judge/agent.yaml"),
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toContain("execution nats-run-1: Succeeded after 2 iteration(s)");
    const json = await runOk(gavel, ["events", "--nats", nats.url, "-n", "default", "nats-run-1", "--output", "json"]);
    const events = json
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; execution: string; data: Record<string, unknown> });
    expect(events[0]?.type).toBe("execution.started");
    expect(events.at(-1)).toMatchObject({ type: "execution.phase", data: { phase: "Succeeded" } });
    expect(events.filter((e) => e.type === "iteration.started").map((e) => e.data.iteration)).toEqual([1, 2]);
    const finished = events.find((e) => e.type === "judge.finished");
    expect(finished).toMatchObject({ execution: "nats-run-1-i2-v1-rule-judge", data: { score: 1 } });
    const tree = await runOk(gavel, ["events", "--nats", nats.url, "-n", "default", "nats-run-1", "--output", "tree"]);
    expect(tree).toContain("execution nats-run-1 (agent nats-worker)  Succeeded");
    expect(tree).toContain("judge rule-judge (nats-run-1-i2-v1-rule-judge) score 1.00");
  });
});
