// What a driver creates for one run of a worker or a judge: the WorkloadSpec with the worker
// runtime's env contract, the judge payload, the mounts (read-only for judges), network,
// resources, deadline and labels. Docker (local mode) and Kubernetes run the same spec.
import { AGENT_ENV, agentEnvironment, mcpTokenEnv } from "../api/agent-env.js";
import { API_VERSION, type Agent, type EnvVar, type Execution, type OwnerReference } from "../api/types.js";
import { childTimeoutSeconds } from "../engine/durations.js";
import type { WorkloadMount, WorkloadSpec } from "../runtime/workload.js";
import { TerminalError } from "../errors.js";
import { TRACEPARENT_ENV } from "../telemetry/trace-context.js";
import { AGENT_ENTRYPOINT, defaultImages } from "./images.js";
import { resourcesOf } from "./quantities.js";
import { builtinRuntimes, chooseRuntime, type RuntimeChoice, type RuntimeTable } from "./runtime-table.js";
import { parseDescriptor } from "../runtime/kubernetes.js";

/** Largest judge payload also passed in env GAVEL_INPUT (Linux caps one env string at 128 KiB, MAX_ARG_STRLEN). */
export const ENV_PAYLOAD_LIMIT = 96 * 1024;

/** Largest judge payload gavel delivers (docs/judges.md); a larger one fails the judge before it starts. */
export const MAX_PAYLOAD_BYTES = 8 * 1024 * 1024;

/**
 * Annotation of a judge child whose payload is kept in ConfigMap parts `<child>-input-NN`
 * (configmap-parts.ts): their descriptor. Its pod mounts them at INPUT_DIR.
 */
export const INPUT_ANNOTATION = "gavel.dev/input";

/** Where a judge pod finds its payload parts (env GAVEL_INPUT_DIR; src/agent/judge-input.ts reads them). */
export const INPUT_DIR = "/var/run/gavel/input";

/** Why a payload of `bytes` cannot be delivered, naming the field; undefined when it can. */
export function payloadProblem(bytes: number): string | undefined {
  return bytes > MAX_PAYLOAD_BYTES
    ? `spec.input: the judge payload is ${bytes} bytes; the limit is ${MAX_PAYLOAD_BYTES} (8 MiB)`
    : undefined;
}

/** Labels on every workload of an Execution, so `kubectl get pods -l` (or `docker ps -f`) finds them. */
export const CHILD_LABELS = {
  execution: "gavel.dev/execution",
  role: "gavel.dev/role",
  iteration: "gavel.dev/iteration",
  parent: "gavel.dev/parent",
} as const;

/** The controller ownerReference of objects an Execution owns (deleting it collects them), beside the labels that find them. */
export function ownerOf(execution: Execution): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: "Execution",
    name: execution.metadata.name,
    uid: execution.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** How an Execution marks what it owns, worked out once: its name and namespace, its controller ownerReference and the label value that finds them. */
export interface OwnerMarks {
  name: string;
  namespace: string;
  reference: OwnerReference;
  /** Its name as a label value (labelValue). */
  label: string;
}

/** The marks `execution` puts on what it owns (ownerOf, labelValue). */
export function ownerMarks(execution: Execution): OwnerMarks {
  const { name } = execution.metadata;
  return { name, namespace: execution.metadata.namespace ?? "default", reference: ownerOf(execution), label: labelValue(name) };
}

/** A label value (≤ 63 characters, alphanumeric at both ends) for any object name. */
export function labelValue(name: string): string {
  if (name.length <= 63) return name;
  return name.slice(0, 63).replace(/[^a-z0-9]+$/, "");
}

/** The Agent's own env (spec.runtime.env / envFrom) and `extra` after it, for the runtime to resolve; the contract's variables win over it. */
export function agentEnvOf(agent: Agent, extra: EnvVar[] = []): Pick<WorkloadSpec, "agentEnv"> {
  const own = agent.spec.runtime?.env;
  const env = own !== undefined || extra.length > 0 ? [...(own ?? []), ...extra] : undefined;
  const envFrom = agent.spec.runtime?.envFrom;
  if ((env ?? []).length === 0 && (envFrom ?? []).length === 0) return {};
  return { agentEnv: { ...(env !== undefined ? { env } : {}), ...(envFrom !== undefined ? { envFrom } : {}) } };
}

/**
 * The worker's env entries that take its remote MCP servers' bearer tokens from their Secret keys
 * (ADR 0059): GAVEL_MCP_TOKEN_<index> as a secretKeyRef for each url server with a
 * bearer_token_secret, so the kubelet puts the token in the worker's container and gavel never
 * reads or stores it.
 */
export function mcpTokenEnvOf(agent: Agent): EnvVar[] {
  return (agent.spec.mcp_servers ?? []).flatMap((s, i) =>
    s.bearer_token_secret === undefined
      ? []
      : [{ name: mcpTokenEnv(i), valueFrom: { secretKeyRef: { name: s.bearer_token_secret.name, key: s.bearer_token_secret.key } } }],
  );
}

/**
 * The program of an Agent's containers when the Agent names it (`spec.runtime.command`, run on
 * every driver); undefined: the image's program, when gavel knows it (`entrypoint`: Kubernetes
 * runs it under gavel-launch).
 */
function ownProgram(agent: Agent): Pick<WorkloadSpec, "command"> | undefined {
  const command = agent.spec.runtime?.command;
  return command !== undefined && command.length > 0 ? { command: [...command] } : undefined;
}

/** The allowlist of an Agent with network allow, as the workload's egress hosts. */
function egressOf(agent: Agent): { egressHosts?: string[] } {
  const net = agent.spec.security?.network;
  const hosts = (net?.allowlist ?? []).map((h) => h.trim()).filter((h) => h !== "");
  return net?.mode === "allow" && hosts.length > 0 ? { egressHosts: hosts } : {};
}

/** The network an Agent's worker gets: none, or open (to the allowlisted hosts only, when it lists any). */
export function workerNetworkOf(agent: Agent): Pick<WorkloadSpec, "network" | "egressHosts"> {
  return { network: agent.spec.security?.network?.mode === "none" ? "none" : "allow", ...egressOf(agent) };
}

/** One run of the worker: the engine's start_worker action. */
export interface WorkerRun {
  name: string;
  iteration: number;
  feedback?: string;
  timeoutSeconds: number;
}

/** What the driver adds to a worker's spec. */
export interface WorkerOptions {
  /** NATS URL the worker proposes its tool calls on (the inner-loop gate); "" when none runs. */
  natsUrl?: string;
  /** Extra env (local mode's `workerEnv`); wins over the contract's variables. */
  env?: Record<string, string>;
  /** The iteration span's W3C traceparent (env TRACEPARENT), when the driver traces the Execution. */
  traceParent?: string;
  /** Image when the Agent names neither an image nor a language; default defaultImages().worker. */
  defaultImage?: string;
  /** Images of language runtimes (`spec.runtime.language` + `version`); default the built-in table. */
  runtimes?: RuntimeTable;
  /** The driver's clock now (epoch ms), for GAVEL_DEADLINE; default Date.now(). */
  now?: number;
}

/**
 * What a worker Agent's containers run, from the Agent alone: its runtime (image, program and
 * env, or why it has none), its limits and its network. The same for every iteration, so a
 * driver works it out once per run (or reconcile) and each worker's workload reads it.
 */
export interface WorkerProgram {
  runtime: RuntimeChoice;
  resources: NonNullable<WorkloadSpec["resources"]>;
  network: Pick<WorkloadSpec, "network" | "egressHosts">;
}

/** The worker program of `agent`: gavel's agent image runs AGENT_ENTRYPOINT; a driver's other default image is not known. */
export function workerProgram(agent: Agent, opts: Pick<WorkerOptions, "runtimes" | "defaultImage"> = {}): WorkerProgram {
  const runtime = chooseRuntime(
    agent,
    opts.runtimes ?? builtinRuntimes(),
    opts.defaultImage ?? defaultImages().worker,
    opts.defaultImage === undefined ? AGENT_ENTRYPOINT : undefined,
  );
  return { runtime, resources: resourcesOf(agent), network: workerNetworkOf(agent) };
}

/**
 * The workload of iteration N's worker: the env contract of the worker runtime
 * (src/api/agent-env.ts) plus GAVEL_WORKSPACE for plain scripts; feedback and input are always
 * set so a script can read them blindly. The workspace mounts are read-write. A language the
 * runtime table does not know is a TerminalError naming the field (retrying cannot help).
 */
export function workerWorkload(
  execution: Execution,
  agent: Agent,
  run: WorkerRun,
  mounts: WorkloadMount[],
  opts: WorkerOptions = {},
): WorkloadSpec {
  return programWorkload(ownerMarks(execution), execution.spec.input, agent, workerProgram(agent, opts), run, mounts, opts);
}

/**
 * workerWorkload with the Agent's program already worked out (workerProgram), as a driver that
 * resolves it once per run has it, for the Execution that `owner` marks (its name, namespace and
 * label; `input`: its spec.input): a worker needs no more of its Execution.
 */
export function programWorkload(
  owner: Pick<OwnerMarks, "name" | "namespace" | "label">,
  input: Execution["spec"]["input"],
  agent: Agent,
  program: WorkerProgram,
  run: WorkerRun,
  mounts: WorkloadMount[],
  opts: Omit<WorkerOptions, "runtimes" | "defaultImage"> = {},
): WorkloadSpec {
  const writable = mounts.map((m) => ({ ...m, readOnly: false }));
  // What the Agent says itself first; then its runtime, the env contract and its limits.
  const command = ownProgram(agent);
  // A url MCP server's bearer token comes from its Secret key, resolved by the kubelet (ADR 0059).
  const own = agentEnvOf(agent, mcpTokenEnvOf(agent));
  const labels = {
    [CHILD_LABELS.execution]: owner.label,
    [CHILD_LABELS.role]: "worker",
    [CHILD_LABELS.iteration]: String(run.iteration),
  };
  const runtime = program.runtime;
  if ("problem" in runtime) throw new TerminalError("UnknownRuntime", runtime.problem);
  const env: Record<string, string> = {
    ...runtime.env,
    ...agentEnvironment({
      namespace: owner.namespace,
      execution: owner.name,
      iteration: run.iteration,
      task: agent.spec.task?.instruction ?? "",
      tools: agent.spec.tools ?? [],
      ...(agent.spec.mcp_servers !== undefined ? { mcpServers: agent.spec.mcp_servers } : {}),
      mounts: writable.map((m) => ({ path: m.mountPath, readOnly: false })),
      natsUrl: opts.natsUrl ?? "",
      iterationTimeoutSeconds: run.timeoutSeconds,
      // Stamped when the workload is made: its kill counts from its own start, later.
      deadline: new Date((opts.now ?? Date.now()) + run.timeoutSeconds * 1000).toISOString(),
    }),
    GAVEL_INPUT: JSON.stringify(input ?? null),
    GAVEL_FEEDBACK: run.feedback ?? "",
    GAVEL_WORKSPACE: writable.map((m) => m.mountPath).join(":"),
    ...(opts.traceParent !== undefined ? { [TRACEPARENT_ENV]: opts.traceParent } : {}),
    ...opts.env,
  };
  const pullPolicy = agent.spec.runtime?.pull_policy;
  return {
    name: run.name,
    image: runtime.image,
    ...(command ?? (runtime.entrypoint !== undefined ? { entrypoint: [...runtime.entrypoint] } : {})),
    env,
    ...own,
    mounts: writable,
    ...program.network,
    resources: program.resources,
    ...(pullPolicy !== undefined ? { pullPolicy } : {}),
    timeoutSeconds: run.timeoutSeconds,
    labels,
  };
}

/** How a driver hands a judge its payload. */
export interface JudgeWorkloadOptions {
  /**
   * True when the driver writes stdin (local mode): the payload always goes there, and to
   * env GAVEL_INPUT too when it fits. False (the controller's pods): env GAVEL_INPUT when it
   * fits, else the parts the child's INPUT_ANNOTATION names, mounted at INPUT_DIR.
   */
  stdin: boolean;
  /** Images of language runtimes; default the built-in table. */
  runtimes?: RuntimeTable;
}

/** A judge's own manifest in the worker runtime's env contract (task, tools, read-only mounts, role), without NATS: judges get none. */
function judgeEnvironment(child: Execution, judge: Agent, mounts: WorkloadMount[]): Record<string, string> {
  const { [AGENT_ENV.natsUrl]: _nats, ...env } = agentEnvironment({
    namespace: child.metadata.namespace ?? "default",
    execution: child.metadata.name,
    iteration: child.spec.parent?.iteration ?? 1,
    task: judge.spec.task?.instruction ?? "",
    tools: judge.spec.tools ?? [],
    mounts: mounts.map((m) => ({ path: m.mountPath, readOnly: true })),
    natsUrl: "",
  });
  return { ...env, [AGENT_ENV.role]: "judge" };
}

/**
 * The workload of a judge child: its payload (the child's spec.input) as GAVEL_INPUT and/or
 * stdin, its own manifest's task and tools in the worker runtime's env contract (GAVEL_TASK,
 * GAVEL_TOOLS: the judge's spec.tools govern what it may run), the worker's mounts read-only
 * at the same paths, no network unless the judge's manifest allows it, the child's deadline.
 * The image is the judge's own or its language runtime's. A string says why it cannot run.
 */
export function judgeWorkload(
  child: Execution,
  judge: Agent,
  workerMounts: WorkloadMount[],
  opts: JudgeWorkloadOptions,
): WorkloadSpec | string {
  const readOnly = workerMounts.map((m) => ({ ...m, readOnly: true }));
  // What the judge's own manifest says first; then its runtime, its payload and its limits.
  const program = ownProgram(judge);
  const own = agentEnvOf(judge);
  const network = { network: judge.spec.security?.network?.mode === "allow" ? ("allow" as const) : ("none" as const), ...egressOf(judge) };
  const parent = child.spec.parent?.name;
  const labels = {
    [CHILD_LABELS.execution]: labelValue(child.metadata.name),
    [CHILD_LABELS.role]: "judge",
    ...(parent !== undefined ? { [CHILD_LABELS.parent]: labelValue(parent) } : {}),
  };
  const environment = judgeEnvironment(child, judge, readOnly);
  const runtime = chooseRuntime(judge, opts.runtimes ?? builtinRuntimes());
  if ("problem" in runtime) return `judge Agent ${judge.metadata.name}: ${runtime.problem}`;
  const parts = opts.stdin ? undefined : parseDescriptor(child.metadata.annotations?.[INPUT_ANNOTATION]);
  const input = JSON.stringify(child.spec.input ?? {});
  const bytes = parts?.bytes ?? Buffer.byteLength(input);
  const problem = payloadProblem(bytes);
  if (problem !== undefined) return problem;
  const fits = parts === undefined && bytes <= ENV_PAYLOAD_LIMIT;
  if (!fits && !opts.stdin && parts === undefined) {
    return `spec.input: the judge payload is ${bytes} bytes; a pod gets at most ${ENV_PAYLOAD_LIMIT} in env GAVEL_INPUT, and the child names no parts (annotation ${INPUT_ANNOTATION})`;
  }
  const pullPolicy = judge.spec.runtime?.pull_policy;
  return {
    name: child.metadata.name,
    image: runtime.image,
    ...(program ?? (runtime.entrypoint !== undefined ? { entrypoint: [...runtime.entrypoint] } : {})),
    env: {
      ...runtime.env,
      ...environment,
      ...(fits ? { GAVEL_INPUT: input } : {}),
      ...(parts !== undefined ? { [AGENT_ENV.inputDir]: INPUT_DIR } : {}),
    },
    ...own,
    ...(opts.stdin ? { stdin: input } : {}),
    mounts: readOnly,
    ...network,
    resources: resourcesOf(judge),
    ...(pullPolicy !== undefined ? { pullPolicy } : {}),
    timeoutSeconds: childTimeoutSeconds(child, judge),
    labels,
  };
}
