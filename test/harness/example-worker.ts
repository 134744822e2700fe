// The Agent and Execution manifests the e2e tests build around the examples/kubernetes worker
// image (a worker that writes sum.js, its tests and a report, correct at once or after
// feedback, as its input says), shared by the files that run it through the chart's controller.

export const WORKER_IMAGE = "gavel/example-k8s-worker:dev";

/** An agent of the example worker image with the given validators (YAML lines under validation:). */
export function agentYaml(name: string, maxIterations: number, validation: string): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: ${name}
spec:
  runtime:
    image: ${WORKER_IMAGE}
    pull_policy: Never
  task:
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

export function executionYaml(name: string, agent: string, input: Record<string, unknown>, timeoutSeconds?: number): string {
  return `
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: ${name}
spec:
  agentRef:
    name: ${agent}
  input: ${JSON.stringify(input)}
${timeoutSeconds !== undefined ? `  timeoutSeconds: ${timeoutSeconds}\n` : ""}`;
}
