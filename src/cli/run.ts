// `gavel run -f AGENT.yaml [-f JUDGES.yaml ...] [-f POLICY.yaml ...]`: local mode. Runs one
// Execution end to end on Docker with the state in memory, shows the live tree, prints a
// summary, and exits 0 only when the Execution Succeeded.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { isJudge } from "../api/cross-validate.js";
import { loadRuntimeTable } from "../children/runtime-table.js";
import { withDefaults } from "../api/defaults.js";
import type { Agent, Execution, JsonValue } from "../api/types.js";
import { API_VERSION, DEFAULT_GUARD_POLICY, type GuardPolicySpec } from "../api/types.js";
import { type CompiledPolicy, compilePolicy, type NamedPolicy, PolicyError } from "../gate/guard.js";
import { DockerWorkloads } from "../runtime/docker.js";
import { openGateSocket, type GateSocket } from "../local/gate-socket.js";
import { startLocalGate, type LocalGate } from "../local/local-gate.js";
import { LocalRun, type LocalRunResult } from "../local/local-run.js";
import { startNats, type NatsServer } from "../transport/nats-server.js";
import type { GavelEvent } from "../api/events.js";
import { EventStream } from "../transport/event-stream.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { guardNotes } from "../gate/audit.js";
import { applyEvent, emptyTree, renderTree, type ExecutionTree } from "./tree.js";
import { formatFinding, manifestFiles, parseManifests, validateDocuments, type Finding } from "./validate.js";
import { messageOf } from "../errors.js";
import { ExecutionTrace } from "../telemetry/execution-trace.js";
import { tracingFromEnv, type Tracing } from "../telemetry/tracing.js";

/** The Agents of a local run: the one worker and its judges, and the guard's policies. */
export interface RunManifests {
  worker: Agent;
  judges: Map<string, Agent>;
  /** The GuardPolicy documents among the files, in merge order (`default` first). */
  policies: NamedPolicy[];
  /** Those policies merged over the built-in tables and compiled: what the local gate checks. */
  policy: CompiledPolicy;
}

/** A manifest set that cannot run; `findings` say where and why. */
export class ManifestError extends Error {
  override readonly name = "ManifestError";
  constructor(readonly findings: Finding[]) {
    super(findings.map(formatFinding).join("\n"));
  }
}

/**
 * Loads and checks the manifests of a local run: every document valid, exactly one worker
 * Agent (not labelled role: judge), every judge it names among the files, and every
 * GuardPolicy compilable. Local mode is one namespace: every GuardPolicy given applies.
 */
export async function loadRunManifests(paths: string[], cwd: string): Promise<RunManifests> {
  const files = await manifestFiles(paths, cwd);
  const docs: Parameters<typeof validateDocuments>[0] = [];
  const findings: Finding[] = [];
  for (const file of files) {
    const text = await readFile(resolve(cwd, file), "utf8");
    const parsed = parseManifests(file, text);
    docs.push(...parsed.docs);
    findings.push(...parsed.findings);
  }
  // Locally every judge must be among the files: there is no cluster to find it in.
  findings.push(
    ...validateDocuments(docs).map((f) =>
      f.severity === "warning" && f.message.includes("does not exist")
        ? {
            ...f,
            severity: "error" as const,
            message: f.message.replace(/ \(fine if it is already deployed\)$/, "; pass its manifest with -f"),
          }
        : f,
    ),
  );
  const errors = findings.filter((f) => f.severity === "error");
  if (errors.length > 0) throw new ManifestError(errors);
  const agents = docs.filter((d) => (d.value as { kind?: unknown }).kind === "Agent");
  const workers = agents.filter((d) => !isJudge(d.value as Agent));
  if (workers.length !== 1) {
    const where = workers.map((w) => `${w.file}:doc#${w.doc} (${(w.value as Agent).metadata.name})`).join(", ");
    throw new ManifestError([
      {
        file: files.join(", "),
        doc: 0,
        path: "metadata.labels.role",
        severity: "error",
        message:
          workers.length === 0
            ? "no worker Agent among the manifests (every Agent is labelled role: judge)"
            : `exactly one worker Agent is run; found ${workers.length}: ${where} (label judges with role: judge)`,
      },
    ]);
  }
  const judges = new Map<string, Agent>();
  for (const d of agents) if (isJudge(d.value as Agent)) judges.set((d.value as Agent).metadata.name, withDefaults(d.value as Agent));
  const { policies, policy } = compileRunPolicies(docs.filter((d) => (d.value as { kind?: unknown }).kind === "GuardPolicy"));
  return { worker: withDefaults((workers[0] as (typeof workers)[number]).value as Agent), judges, policies, policy };
}

/**
 * Compiles the GuardPolicy documents of a run as the controller merges a namespace's: the
 * `default` policy first, then the others by name. A pattern RE2 refuses or a bad key is a
 * ManifestError naming the file and document (each policy is compiled alone first for that).
 */
function compileRunPolicies(docs: Parameters<typeof validateDocuments>[0]): { policies: NamedPolicy[]; policy: CompiledPolicy } {
  const named = docs.map((d) => {
    const v = d.value as { metadata: { name: string; namespace?: string }; spec?: GuardPolicySpec };
    const p: NamedPolicy = {
      name: v.metadata.name,
      ...(v.metadata.namespace !== undefined ? { namespace: v.metadata.namespace } : {}),
      spec: v.spec ?? {},
    };
    return { d, p };
  });
  const findings: Finding[] = [];
  for (const { d, p } of named) {
    try {
      compilePolicy([p]);
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      findings.push({ file: d.file, doc: d.doc, path: "spec", severity: "error", message: err.message });
    }
  }
  if (findings.length > 0) throw new ManifestError(findings);
  const ordered = [
    ...named.filter((n) => n.p.name === DEFAULT_GUARD_POLICY),
    ...named.filter((n) => n.p.name !== DEFAULT_GUARD_POLICY).sort((a, b) => a.p.name.localeCompare(b.p.name)),
  ];
  const policies = ordered.map((n) => n.p);
  try {
    return { policies, policy: compilePolicy(policies) };
  } catch (err) {
    if (!(err instanceof PolicyError)) throw err;
    const first = ordered[0]?.d;
    throw new ManifestError([{ file: first?.file ?? "", doc: first?.doc ?? 0, path: "spec", severity: "error", message: err.message }]);
  }
}

/** Parses `--input`: inline JSON, or `@file` holding JSON. */
export async function parseInput(value: string | undefined, cwd: string): Promise<JsonValue | undefined> {
  if (value === undefined) return undefined;
  const fromFile = value.startsWith("@");
  const text = fromFile
    ? await readFile(resolve(cwd, value.slice(1)), "utf8").catch((err: unknown) => {
        throw new UsageError(`--input ${value}: ${messageOf(err)}`);
      })
    : value;
  try {
    return JSON.parse(text) as JsonValue;
  } catch (err) {
    throw new UsageError(`--input ${fromFile ? value : "JSON"} is not valid JSON: ${messageOf(err)}`);
  }
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        filename: { type: "string", short: "f", multiple: true },
        input: { type: "string", short: "i" },
        output: { type: "string", short: "o", default: "tree" },
        nats: { type: "string" },
        name: { type: "string" },
        timeout: { type: "string" },
        namespace: { type: "string", short: "n", default: "default" },
        runtimes: { type: "string" },
      },
    });
  } catch (err) {
    throw new UsageError(messageOf(err));
  }
}

/** Draws the tree: redrawn in place with spinners on a TTY, one plain line per event otherwise. */
class TreeView {
  private readonly tree: ExecutionTree;
  private drawn = 0;
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    execution: string,
    private readonly out: CommandIO["stdout"] & { isTTY?: boolean; columns?: number },
    private readonly live: boolean,
  ) {
    this.tree = emptyTree(execution);
    if (live) {
      this.timer = setInterval(() => this.redraw(), 100);
      this.timer.unref();
    }
  }

  add(e: GavelEvent): void {
    applyEvent(this.tree, e);
    if (!this.live) this.out.write(`${plainLine(e)}\n`);
  }

  private redraw(): void {
    // Lines must not wrap, or moving the cursor up by the line count would miss; a pseudo
    // terminal may report 0 columns.
    const columns = this.out.columns ?? 0;
    const lines = renderTree(this.tree, this.frame++, { color: true, width: columns > 20 ? columns - 1 : 120 });
    const up = this.drawn > 0 ? `\x1b[${this.drawn}A\r\x1b[0J` : "";
    this.out.write(`${up}${lines.join("\n")}\n`);
    this.drawn = lines.length;
  }

  /** Stops the animation and draws the final tree once more. */
  end(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.live) this.redraw();
    else this.out.write(`\n${renderTree(this.tree, 0, { width: 200 }).join("\n")}\n`);
  }
}

/** One line per event for logs and pipes. */
export function plainLine(e: GavelEvent): string {
  const d = e.data;
  const s = (k: string): string => {
    const v = d[k];
    return v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v);
  };
  const n = (k: string) => {
    const v = d[k];
    return typeof v === "number" ? v.toFixed(2) : "";
  };
  switch (e.type) {
    case "execution.started":
      return `execution ${e.execution} started (agent ${s("agent")})`;
    case "execution.phase":
      return `execution ${e.execution} ${s("phase")}${d.score !== undefined ? ` score ${n("score")}` : ""}${d.message !== undefined ? `: ${s("message")}` : ""}`;
    case "iteration.started":
      return `iteration ${s("iteration")} started${d.feedback !== undefined ? ` with feedback: ${s("feedback").replace(/\s+/g, " ").slice(0, 200)}` : ""}`;
    case "worker.finished":
      return `iteration ${s("iteration")} worker exited ${s("exitCode")}${d.timedOut === true ? " (killed at its deadline)" : ""}${d.gateUnreachable !== undefined ? `: ${s("gateUnreachable")}` : ""}`;
    case "validator.started":
      return `iteration ${s("iteration")} validator ${s("index")} ${s("type")} running`;
    case "validator.result":
      return `iteration ${s("iteration")} validator ${s("index")} ${s("type")} ${d.passed === true ? "passed" : "failed"} score ${n("score")} confidence ${n("confidence")}${d.passed === true ? "" : `: ${s("reasoning").replace(/\s+/g, " ").slice(0, 300)}`}`;
    case "judge.spawned":
      return d.purpose === "tool_validation"
        ? `iteration ${s("iteration")} tool call ${s("step")} judge ${s("judge")} started as ${s("child")}`
        : `iteration ${s("iteration")} validator ${s("index")} judge ${s("judge")} started as ${s("child")}`;
    case "toolcall.proposed":
      return `iteration ${s("iteration")} tool call ${s("step")} ${s("tool")} proposed`;
    case "toolcall.decision":
      return `iteration ${s("iteration")} tool call ${s("step")} ${s("tool")} ${d.allowed === true ? "allowed" : `blocked by ${s("blocked_by")}${d.check !== undefined ? ` (${s("check")})` : ""}`}${guardNotes(d)}: ${s("reason")}`;
    case "judge.finished":
      return `judge ${s("judge")} (${s("child")}) ${d.rejection !== undefined ? `rejected: ${s("rejection")}` : `score ${n("score")} confidence ${n("confidence")}`}`;
    case "iteration.finished":
      return `iteration ${s("iteration")} ${s("outcome")} score ${n("score")}`;
    default:
      return `${e.type} ${JSON.stringify(d)}`;
  }
}

/** The summary printed after the tree. */
export function summary(r: LocalRunResult): string {
  const st = r.execution.status ?? {};
  const lines = [
    `execution ${r.execution.metadata.name}: ${st.phase ?? "?"} after ${st.iteration ?? 0} iteration(s)${st.score !== undefined ? `, score ${st.score.toFixed(2)}` : ""}`,
  ];
  if (st.message !== undefined) lines.push(`  ${st.message.split("\n")[0] ?? ""}`);
  for (const c of r.children) {
    const v = c.status?.verdict;
    const what = c.spec.parent?.purpose === "tool_validation" ? "tool-call judge" : "judge";
    lines.push(
      `  ${what} ${c.spec.agentRef.name} (${c.metadata.name}): ${v !== undefined ? `score ${v.score.toFixed(2)} confidence ${v.confidence.toFixed(2)}` : `${c.status?.phase ?? "?"} (${c.status?.rejection ?? "?"})`}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

function dockerSocket(env: NodeJS.ProcessEnv): string | undefined {
  const host = env.DOCKER_HOST;
  return host !== undefined && host.startsWith("unix://") ? host.slice("unix://".length) : undefined;
}

type RunFlags = ReturnType<typeof parseFlags>["values"];

/** The flags of `gavel run` checked (each bad one a UsageError naming it), with the runtime table they name. */
async function runSettings(values: RunFlags, io: CommandIO) {
  // Language runtimes over the built-in ones (the same YAML as the chart's `runtimes:` values).
  const runtimes = await loadRuntimeTable(values.runtimes === undefined ? io.env.GAVEL_RUNTIMES : resolve(io.cwd, values.runtimes)).catch(
    (err: unknown) => {
      throw new UsageError(`--runtimes: ${messageOf(err)}`);
    },
  );
  const files = values.filename ?? [];
  if (files.length === 0) throw new UsageError("at least one -f AGENT.yaml is required");
  if (values.output !== "tree" && values.output !== "json") throw new UsageError(`--output must be json or tree, not "${values.output}"`);
  const input = await parseInput(values.input, io.cwd);
  const timeoutSeconds = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutSeconds !== undefined && !(Number.isFinite(timeoutSeconds) && timeoutSeconds > 0)) {
    throw new UsageError(`--timeout must be a positive number of seconds, not "${values.timeout}"`);
  }
  return { runtimes, files, input, timeoutSeconds };
}

/** The run's manifests, or undefined after saying on stderr why they cannot run (and warning of what looks wrong). */
async function manifestsToRun(files: string[], io: CommandIO): Promise<RunManifests | undefined> {
  let manifests: RunManifests;
  try {
    manifests = await loadRunManifests(files, io.cwd);
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    io.stderr.write(`gavel run: the manifests cannot run:\n${err.message}\n`);
    return undefined;
  }
  if (manifests.policies.length > 0 && (manifests.worker.spec.tools ?? []).length === 0) {
    io.stderr.write("gavel run: warning: GuardPolicy given but the worker declares no tools (spec.tools), so no call reaches the guard\n");
  }
  for (const w of manifests.policy.warnings) io.stderr.write(`gavel run: warning: ${w}\n`);
  return manifests;
}

/** The Execution a local run runs (in memory only). */
function localExecution(
  name: string,
  namespace: string,
  worker: Agent,
  input: JsonValue | undefined,
  timeoutSeconds: number | undefined,
): Execution {
  return {
    apiVersion: API_VERSION,
    kind: "Execution",
    metadata: { name, namespace, uid: randomBytes(8).toString("hex") },
    spec: {
      agentRef: { name: worker.metadata.name },
      ...(input !== undefined ? { input } : {}),
      ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    },
  };
}

/** The NATS side of a local run: the gate's own server and connection, the event stream's, the gate socket. */
interface RunConnections {
  ownNats?: NatsServer;
  natsUrl?: string;
  gateNc?: NatsConnection;
  nc?: NatsConnection;
  stream?: EventStream;
  gateSocket?: GateSocket;
}

/**
 * Opens what the run needs. A worker with tools proposes each call to the gate over NATS,
 * always on a nats-server this run starts on loopback: the gate subscribes to every
 * execution's proposal subject, so on a shared server (--nats) two runs' gates, or a run's
 * and the cluster's, would answer each other's workers. --nats carries the run's events
 * only. A worker without network reaches the gate through a socket mounted into its
 * container. On a failure what was opened is closed again.
 */
async function openConnections(worker: Agent, nats: string | undefined): Promise<RunConnections> {
  const c: RunConnections = {};
  try {
    if ((worker.spec.tools ?? []).length > 0) {
      c.ownNats = await startNats();
      c.natsUrl = c.ownNats.url;
      c.gateNc = await connect({ servers: c.natsUrl });
    }
    if (nats !== undefined) {
      c.nc = await connect({ servers: nats });
      c.stream = await EventStream.open(c.nc);
    }
    if (c.ownNats !== undefined && worker.spec.security?.network?.mode === "none") c.gateSocket = await openGateSocket(c.ownNats.port);
  } catch (err) {
    await c.gateNc?.close();
    await c.nc?.close();
    await c.ownNats?.stop();
    throw err;
  }
  return c;
}

/** Closes what openConnections opened, once the run's events are published. */
async function closeConnections(c: RunConnections, publishing: Promise<unknown>): Promise<void> {
  await publishing;
  await c.nc?.close();
  await c.gateNc?.close();
  await c.gateSocket?.close();
  await c.ownNats?.stop();
}

/** The gate's address as the worker gets it: the mounted socket when it has no network, else the loopback server's. */
function gateAddress(c: RunConnections): { natsUrl?: string; workerMounts?: GateSocket["mount"][] } {
  if (c.gateSocket !== undefined) return { natsUrl: c.gateSocket.natsUrl, workerMounts: [c.gateSocket.mount] };
  return c.natsUrl !== undefined ? { natsUrl: c.natsUrl } : {};
}

/** Runs the LocalRun with the gate (when the worker has tools), cancelled by SIGINT/SIGTERM. */
async function runWithGate(
  run: LocalRun,
  c: RunConnections,
  manifests: RunManifests,
  tracing: Tracing | undefined,
): Promise<LocalRunResult> {
  const onSignal = () => run.cancel();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let gate: LocalGate | undefined;
  try {
    if (c.gateNc !== undefined)
      gate = await startLocalGate(c.gateNc, manifests.worker, run, {
        policy: manifests.policy,
        ...(tracing !== undefined ? { tracing } : {}),
      });
    return await run.run();
  } finally {
    await gate?.stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

export const runCommand: Command = {
  name: "run",
  summary: "run one Execution locally on Docker (live tree, exit 0 only on Succeeded)",
  usage:
    "gavel run -f AGENT.yaml [-f JUDGES.yaml ...] [-f GUARDPOLICY.yaml ...] [--input JSON|@file] [--output json] [--nats URL] [--name NAME] [--timeout SECONDS] [--runtimes FILE]",
  async run(argv, io) {
    const { values } = parseFlags(argv);
    const { runtimes, files, input, timeoutSeconds } = await runSettings(values, io);
    const manifests = await manifestsToRun(files, io);
    if (manifests === undefined) return ExitCode.usage;
    const name = values.name ?? `${manifests.worker.metadata.name}-${randomBytes(3).toString("hex")}`;
    const execution = localExecution(name, values.namespace, manifests.worker, input, timeoutSeconds);
    // With --output json stdout carries only the final Execution; progress goes to stderr.
    const progress = (values.output === "json" ? io.stderr : io.stdout) as CommandIO["stdout"] & { isTTY?: boolean; columns?: number };
    const view = new TreeView(name, progress, progress.isTTY === true);
    let publishing: Promise<unknown> = Promise.resolve();
    // Traces when OTEL_EXPORTER_OTLP_ENDPOINT (or another OTEL_* exporter setting) asks for them;
    // a bad OTEL_TRACES_SAMPLER stops the run here, before NATS is started.
    const tracing = await tracingFromEnv(io.env, { name: "gavel" });
    const conns = await openConnections(manifests.worker, values.nats);
    const workloads = new DockerWorkloads({ ...(dockerSocket(io.env) !== undefined ? { socketPath: dockerSocket(io.env) } : {}) });
    const trace =
      tracing === undefined
        ? undefined
        : new ExecutionTrace(tracing, {
            namespace: values.namespace,
            name,
            uid: execution.metadata.uid as string,
            agent: manifests.worker.metadata.name,
          });
    const run = new LocalRun({
      execution,
      agent: manifests.worker,
      judges: manifests.judges,
      workloads,
      runtimes,
      ...(trace !== undefined ? { trace } : {}),
      ...gateAddress(conns),
      onEvent: (e) => {
        view.add(e);
        const s = conns.stream;
        // In order, one after another; a failed publish is reported, not fatal to the run.
        if (s !== undefined)
          publishing = publishing
            .then(() => s.publish(e))
            .catch((err: unknown) => io.stderr.write(`gavel run: publishing ${e.type} failed: ${String(err)}\n`));
      },
    });
    let result: LocalRunResult;
    try {
      result = await runWithGate(run, conns, manifests, tracing);
    } finally {
      view.end();
      // The run retired its containers; anything left by a crash between create and retire goes too.
      await workloads.removeAll();
      await closeConnections(conns, publishing);
      trace?.end();
      await tracing?.shutdown().catch((err: unknown) => io.stderr.write(`gavel run: exporting traces failed: ${messageOf(err)}\n`));
    }
    if (values.output === "json") io.stdout.write(`${JSON.stringify(result.execution, null, 2)}\n`);
    else io.stdout.write(`\n${summary(result)}`);
    return result.execution.status?.phase === "Succeeded" ? ExitCode.ok : ExitCode.failed;
  },
};
