// What the gate-faults e2e file (gate-faults.exclusive.test.ts) runs: a judge held in `sleep`
// until the test releases it, the worker whose one judged call waits on it, and the worker of a
// ReadWriteOncePod workspace whose tool-call judge checks a checksum in its streamed copy.
import { commandJudgeYaml, executionYaml, sleepingJudgeYaml } from "../harness/example-worker.js";

/**
 * The judge's wait: far longer than any test needs, ended by releaseJudge once the test has
 * seen what it came for. A judge never released fails its call at its deadline (120 s).
 */
const JUDGE_SLEEP_SECONDS = 600;

/** Ends the judge's wait from inside its pod: kills its `sleep` (the image has no pkill), failing when there is none. */
export const RELEASE =
  'n=0; for d in /proc/[0-9]*; do if [ "$(cat "$d/comm" 2>/dev/null)" = sleep ]; then kill "${d#/proc/}" && n=1; fi; done; [ "$n" = 1 ]';

/** The judge: gavel's agent runtime in judge mode, its model scripted (no LLM here). */
export const judgeYaml = sleepingJudgeYaml("slow-judge", JUDGE_SLEEP_SECONDS);

/**
 * The worker: one call the guard blocks, one call the slow judge approves, one write the
 * guard lets through without a judge (fs.write is judged by default: skip_judge below).
 */
export const workerYaml = `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: faulty-worker
  # Its judge runs in a pod of its own (no warm pod, ADR 0070): the faults here hit the pod the test holds.
  annotations: { gavel.dev/warm-judges: "0" }
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls:
              - tool: cmd.run
                args: { command: "rm -rf /" }
          - tool_calls:
              - tool: cmd.run
                args: { command: "ls /workspace" }
                intent: see what the workspace holds
          - tool_calls:
              - tool: fs.list
                args: { path: /workspace }
          - final: "done"
  task:
    instruction: List the workspace.
  tools:
    - fs.list
    - name: cmd.run
      allowlist: ["ls"]
  security:
    network:
      mode: allow
    resources:
      timeout: "240s"
  volumes:
    - name: workspace
      mount_path: /workspace
      size: 16Mi
  execution:
    mode: one-shot
    tool_validation:
      - type: semantic
        judge_agent: slow-judge
        min_score: 0.5
        min_confidence: 0.5
    validation:
      - type: exit_code
        expected: 0
`;
/**
 * faulty-worker with a warm judge pod (ADR 0070): its worker waits until its pool's pod is ready
 * before the calls, so its judged call runs in the warm pod.
 */
export const warmWorkerYaml = workerYaml
  .replace("name: faulty-worker", "name: warm-worker")
  .replace('gavel.dev/warm-judges: "0"', 'gavel.dev/warm-judges: "1"')
  .replace(
    "    pull_policy: Never\n",
    `    pull_policy: Never\n    command: ["sh", "-c", "sleep 10 && exec node /opt/gavel/dist/src/agent/main.js"]\n`,
  );

/** An Execution of faulty-worker. */
export const faultyRun = (name: string) => executionYaml(name, "faulty-worker");

/** The calls the worker makes, as the store must end up holding them. */
export const EXPECTED = [
  { step: 1, tool: "cmd.run", allowed: false, blocked_by: "guard" },
  { step: 2, tool: "cmd.run", allowed: true, blocked_by: "none" },
  { step: 3, tool: "fs.list", allowed: true, blocked_by: "none" },
];

/** The file the copy-killed worker writes before its one call: large enough that its stream copy takes seconds. */
export const BIG_BYTES = 128 * 1024 * 1024;

/**
 * A worker of a ReadWriteOncePod workspace that writes BIG_BYTES of noise and its checksum, then
 * makes one judged call; its judge checks the checksum in its copy (streamed out of the worker's pod).
 */
export const copyKillYaml = `
${commandJudgeYaml("checksum-judge", { allowlist: ["sha256sum"], timeout: "180s", inputs: "      proposed_tool_call: { type: object }\n" })}
---
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata: { name: big-writer }
spec:
  runtime:
    image: "gavel/agent:dev"
    pull_policy: Never
    command: ["sh", "-c", "head -c ${BIG_BYTES} /dev/urandom > /workspace/big && sha256sum /workspace/big > /workspace/big.sha256 && exec node /opt/gavel/dist/src/agent/main.js"]
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls: [{ tool: cmd.run, args: { command: ls /workspace }, intent: list }]
          - final: listed
  task: { instruction: "List the workspace." }
  tools: [{ name: cmd.run, allowlist: [ls] }]
  security: { network: { mode: none }, resources: { timeout: 300s } }
  volumes: [{ name: workspace, mount_path: /workspace, size: 512Mi, access_mode: ReadWriteOncePod }]
  execution:
    mode: one-shot
    validation: [{ type: exit_code, expected: 0 }]
    tool_validation:
      - type: semantic
        judge_agent: checksum-judge
        min_score: 1.0
        criteria: "run: sha256sum -c /workspace/big.sha256"
`;
