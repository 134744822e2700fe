// The scripted runs the approval e2e files apply (tool-approvals*.test.ts): an Agent on the
// agent image whose script writes and reads a notes file, its fs.write asking a person.
import { stringify } from "yaml";

/** A scripted worker (gavel/agent:dev) whose fs.write asks a person; `tool` adds fields to its tools entry. */
export function workerYaml(name: string, script: unknown[], tool: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: "100monkeys.ai/v1",
    kind: "Agent",
    metadata: { name },
    spec: {
      runtime: { image: "gavel/agent:dev", pull_policy: "Never", env: [{ name: "GAVEL_SCRIPT", value: stringify(script) }] },
      task: { instruction: "Write the notes, then read them back." },
      tools: [{ name: "fs.write", approval: "always", ...tool }, "fs.read"],
      security: { network: { mode: "none" }, resources: { timeout: "240s" } },
      volumes: [{ name: "workspace", mount_path: "/workspace", size: "16Mi" }],
      execution: { mode: "one-shot", validation: [{ type: "exit_code", expected: 0 }] },
    },
  });
}

/** An Execution of the Agent of the same name. */
export const executionYaml = (name: string): string =>
  stringify({ apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { name }, spec: { agentRef: { name } } });

/** A script step: fs.write of `content` to /workspace/notes.md. */
export const write = (content: string) => ({
  tool_calls: [{ tool: "fs.write", args: { path: "/workspace/notes.md", content }, intent: "write the notes" }],
});
