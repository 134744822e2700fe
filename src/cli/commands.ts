// The list of `gavel` subcommands. Each lives in its own file under src/cli/ and is imported
// only when it runs: `gavel --help` and a short command such as `gavel guard check` must not
// pay for the Kubernetes client, NATS or Docker modules another command needs (ADR 0017).
// The summaries are repeated here so the help loads nothing; app.test.ts checks they agree.
import type { Command } from "./command.js";

/** A subcommand as the help lists it; `load` imports its module. */
export interface CommandEntry {
  name: string;
  summary: string;
  /** Left out of the help (machine-facing). */
  hidden?: boolean;
  /**
   * A short command that scripts call in loops: bin/gavel runs it without source maps for its
   * stack traces (main.ts), since Node reading every module's map costs it about a tenth of
   * its start (bench/cli-start.ts, ADR 0043). Its errors are messages, not stack traces.
   */
  quick?: true;
  load(): Promise<Command>;
}

/** Every subcommand, in the order `gavel help` lists them. */
export const commands: CommandEntry[] = [
  {
    name: "get",
    summary: "list Executions, Agents, GuardPolicies or ToolApprovals (kubectl's -n, -A, -l, -o, --watch)",
    load: async () => (await import("./get.js")).getCommand,
  },
  {
    name: "describe",
    summary: "show one Execution's tree: iterations, validators, judges' verdicts, tool calls, conditions, events",
    load: async () => (await import("./describe.js")).describeCommand,
  },
  {
    name: "logs",
    summary: "print a worker's or a judge's output (--iteration N, --judge NAME, -f)",
    load: async () => (await import("./logs.js")).logsCommand,
  },
  {
    name: "ui",
    summary: "serve a live web view of a namespace's Executions (read-only; trees, score bars, judges, tool calls)",
    load: async () => (await import("./ui.js")).uiCommand,
  },
  {
    name: "events",
    summary: "print the event stream of a namespace or an execution tree",
    load: async () => (await import("./events.js")).eventsCommand,
  },
  {
    name: "approve",
    summary: "approve a tool call waiting for a person (a ToolApproval), as the authenticated Kubernetes user",
    load: async () => (await import("./approve.js")).approveCommand,
  },
  {
    name: "deny",
    summary: "deny a tool call waiting for a person (a ToolApproval); the worker is told who denied it and why",
    load: async () => (await import("./approve.js")).denyCommand,
  },
  {
    name: "replay",
    summary: "replay a run's recorded tool calls against a candidate GuardPolicy (guard only) and print which decisions would change",
    load: async () => (await import("./replay.js")).replayCommand,
  },
  {
    name: "audit",
    summary: "export a run's recorded tool calls (proposals and decisions) from the tool-call store as JSON lines (audit export)",
    load: async () => (await import("./audit.js")).auditCommand,
  },
  {
    name: "run",
    summary: "run one Execution locally on Docker (live tree, exit 0 only on Succeeded)",
    load: async () => (await import("./run.js")).runCommand,
  },
  {
    name: "validate",
    summary: "check Agent, Execution and GuardPolicy manifests offline (schemas, rules, judge references)",
    quick: true,
    load: async () => (await import("./validate.js")).validateCommand,
  },
  {
    name: "verdict",
    summary: "parse a judge's output as gavel does: the GradientResult, or why it is rejected",
    quick: true,
    load: async () => (await import("./verdict.js")).verdictCommand,
  },
  {
    name: "guard",
    summary:
      "evaluate a proposed tool call with the deterministic guard (guard check); print tool code hashes to register (guard tool-hash)",
    quick: true,
    load: async () => (await import("./guard.js")).guardCommand,
  },
  {
    name: "controller",
    summary: "run gavel's controllers against a cluster (Agent Ready condition, GuardPolicy hot reload, Executions on pods)",
    load: async () => (await import("./controller.js")).controllerCommand,
  },
  {
    name: "nats",
    summary: "set up gavel's NATS keys: `nats bootstrap` creates the key Secrets when absent and writes the server's trust config",
    load: async () => (await import("./nats.js")).natsCommand,
  },
  {
    name: "completion",
    summary: "print a shell completion script (bash or zsh)",
    quick: true,
    load: async () => (await import("./completion.js")).completionCommand,
  },
  {
    name: "__complete",
    summary: "print completion candidates for the given words",
    hidden: true,
    quick: true,
    load: async () => (await import("./completion.js")).completeCommand,
  },
  { name: "version", summary: "print gavel's version", quick: true, load: async () => (await import("./version.js")).versionCommand },
];
