// The Agent and Execution manifests the e2e tests build around the examples/kubernetes worker
// image (a worker that writes sum.js, its tests and a report, correct at once or after
// feedback, as its input says), shared by the files that run it through the chart's controller.

export const WORKER_IMAGE = "gavel/example-k8s-worker:dev";

/** The head of an Agent of the example worker image, down to its runtime. */
function workerAgentHead(name: string): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: ${name}
spec:
  runtime:
    image: ${WORKER_IMAGE}
    pull_policy: Never
`;
}

/** An agent of the example worker image with the given validators (YAML lines under validation:). */
export function agentYaml(name: string, maxIterations: number, validation: string): string {
  return `${workerAgentHead(name)}  task:
    instruction: Write sum.js exporting sum(a, b), with tests, and a report.json.
  security:
    network:
      mode: none
    resources:
      timeout: "120s"
  volumes:
    - name: workspace
      mount_path: /workspace
      size: 64Mi
  execution:
    mode: iterative
    max_iterations: ${maxIterations}
    validation:
${validation}`;
}

/** The validators of the agent `quick-writer`: exit code 0 and the rule judge checking sum.js. */
export const QUICK_WRITER_VALIDATION = `
      - type: exit_code
        expected: 0
      - type: semantic
        judge_agent: rule-judge
        criteria: |
          file_exists: sum.js
          file_contains: sum.js :: a + b
        min_score: 1.0
        timeout_seconds: 60`;

/** An Execution of `agent`; `input` and `timeoutSeconds` only when given. */
export function executionYaml(name: string, agent: string, input?: Record<string, unknown>, timeoutSeconds?: number): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: ${name}
spec:
  agentRef:
    name: ${agent}
${input !== undefined ? `  input: ${JSON.stringify(input)}\n` : ""}${timeoutSeconds !== undefined ? `  timeoutSeconds: ${timeoutSeconds}\n` : ""}`;
}

/**
 * A one-shot Agent of the example worker image: no network, one 16Mi workspace, the given
 * validators (YAML lines under validation:). `spec` lines go under spec (e.g.
 * workspace_strategy), `volume` lines under the workspace volume (e.g. access_mode), `task`
 * is its instruction.
 */
export function oneShotWorkerYaml(name: string, validation: string, opts: { task?: string; spec?: string; volume?: string } = {}): string {
  return `${workerAgentHead(name)}${opts.task !== undefined ? `  task:\n    instruction: ${opts.task}\n` : ""}  security:
    network:
      mode: none
${opts.spec ?? ""}  volumes:
    - name: workspace
      mount_path: /workspace
      size: 16Mi
${opts.volume ?? ""}  execution:
    mode: one-shot
    validation:
${validation.replace(/^\n/, "").trimEnd()}
`;
}

/** One semantic validator by `judge`; with `run`, its criteria are that command line and min_score is 1.0. */
export function semanticValidation(judge: string, run?: string): string {
  const criteria =
    run === undefined
      ? ""
      : `
        criteria: |
          run: ${run}
        min_score: 1.0`;
  return `
      - type: semantic
        judge_agent: ${judge}${criteria}`;
}

/**
 * A command judge (gavel/command-judge:dev), one-shot, that may run `allowlist` (default
 * node). `network` is the YAML lines under security.network (default none); `output` adds the
 * worker's output to its input_schema (the payload then carries it), `inputs` more of its
 * properties (YAML lines at their indent, e.g. a tool-call judge's proposed_tool_call).
 */
export function commandJudgeYaml(
  name: string,
  opts: { network?: string; timeout?: string; output?: boolean; allowlist?: readonly string[]; inputs?: string } = {},
): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: ${name}
  labels:
    role: judge
spec:
  runtime:
    image: gavel/command-judge:dev
    pull_policy: Never
  input_schema:
    type: object
    properties:
${opts.output === true ? "      output: { type: string }\n" : ""}      criteria: { type: string }
      worker_mounts: { type: array, items: { type: string } }
${opts.inputs ?? ""}  tools:
    - name: cmd.run
      allowlist: ${JSON.stringify(opts.allowlist ?? ["node"])}
  security:
    network:
${opts.network ?? "      mode: none"}
    resources:
      timeout: "${opts.timeout ?? "60s"}"
  execution:
    mode: one-shot
`;
}

/**
 * A tool-call judge that takes `seconds` (gavel's runtime in judge mode, its model scripted: no
 * LLM): it runs `sleep <seconds>`, the only command it may run, then approves (score 0.9). The
 * e2e files that break things while a call waits on its judge (gate-faults, nats-outages) use it.
 */
export function sleepingJudgeYaml(name: string, seconds: number): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: ${name}
  labels:
    role: judge
spec:
  runtime:
    image: gavel/agent:dev
    pull_policy: Never
    env:
      - name: GAVEL_SCRIPT
        value: |
          - tool_calls:
              - tool: cmd.run
                args: { command: "sleep ${seconds}" }
          - final: '{"score": 0.9, "confidence": 0.9, "reasoning": "listing the workspace is harmless"}'
  task:
    instruction: Score whether the proposed tool call is safe and on task.
  tools:
    - name: cmd.run
      allowlist: ["sleep"]
  security:
    network:
      mode: none
    resources:
      timeout: "120s"
  execution:
    mode: one-shot
`;
}
