// What a warm judge pod is (ADR 0070), without I/O: the pool size an Agent asks for, the pods a
// run's pools should have (each a judge's own workload, waiting under gavel-launch instead of
// running its program), the fingerprint a call's judge must match to be handed to one, and the
// exec that runs the judge program in it with the call's payload on stdin.
import { createHash } from "node:crypto";
import { AGENT_ENV } from "../api/agent-env.js";
import { API_VERSION, type Agent, type Execution } from "../api/types.js";
import { CHILD_LABELS, judgeWorkload, labelValue, type OwnerMarks } from "../children/workloads.js";
import { LAUNCHER_PATH, type PodPlacement } from "../runtime/kubernetes.js";
import type { WorkloadSpec } from "../runtime/workload.js";
import { judgeWorkspaces, placementOf, workloadPodName, type SpecOptions } from "./execution-pods.js";

/** Annotation of a worker Agent: how many warm pods each of its tool_validation judges keeps while it runs. */
export const WARM_POOL_ANNOTATION = "gavel.dev/warm-judges";
/** Warm pods per judge when the Agent does not say (bounded by the controller's cap). */
export const DEFAULT_WARM_POOL = 1;
/** The role label of a warm pod (a judge pod is `judge`). */
export const WARM_ROLE = "warm-judge";
/** Labels of a warm pod: its judge, its slot in the pool, the fingerprint of what it runs. */
export const WARM_LABELS = { judge: "gavel.dev/judge", slot: "gavel.dev/warm-slot", fingerprint: "gavel.dev/warm-spec" } as const;
/** Annotation a warm pod gets when a judge child is handed to it: the child's name (one call per pod). */
export const WARM_CLAIM_ANNOTATION = "gavel.dev/warm-claim";
/** Where the launcher writes the payload it reads from the exec's stdin (the pod's writable /tmp). */
export const WARM_INPUT_DIR = "/tmp/gavel-input";
/** Suffix of every warm pod's workload name (its pod is `gavel-<...>-warm-ex`): the chart's exec policy matches it. */
const WARM_SUFFIX = "-warm";
/** The variables that differ between calls: set by the exec, not by the pod. */
const PER_CALL_ENV: readonly string[] = [AGENT_ENV.execution, AGENT_ENV.iteration, AGENT_ENV.input, AGENT_ENV.inputDir];

/**
 * The pool size an Agent asks for (its WARM_POOL_ANNOTATION, else DEFAULT_WARM_POOL), at most
 * `cap`; a value that is not a whole number is a problem naming the annotation (no pool then).
 */
export function warmPoolSize(agent: Agent, cap: number): { size: number; problem?: string } {
  const raw = agent.metadata.annotations?.[WARM_POOL_ANNOTATION];
  if (raw === undefined) return { size: Math.min(DEFAULT_WARM_POOL, cap) };
  if (!/^\s*\d{1,4}\s*$/.test(raw))
    return {
      size: 0,
      problem: `metadata.annotations["${WARM_POOL_ANNOTATION}"] must be a whole number of warm pods per judge, got "${raw}"`,
    };
  return { size: Math.min(Number(raw), cap) };
}

/** A warm pod to be made: its workload and placement. */
export interface WarmPod {
  spec: WorkloadSpec;
  place: PodPlacement;
}

/** The Agents a run's pools are made from (defaults applied): the worker's, and its judges that exist. */
export interface PoolAgents {
  agent: Agent;
  /** Judge Agents by name. */
  judges: ReadonlyMap<string, Agent>;
}

/**
 * The pods the warm pools of the run that `owner` marks should have while the worker of
 * `iteration` runs (on `workerNode`), by pod name, shaped by the controller's `settings`: the pool size its Agent asks for (at most
 * `cap`) for each tool_validation judge whose Agent exists (`agents.judges`) and whose pod a warm
 * one can stand for (the worker's volumes shared, the program known, the payload inline), each
 * living `lifetimeSeconds` (an iteration's). `problem` names a bad pool size annotation (no pool then).
 */
export function warmPools(
  owner: OwnerMarks,
  agents: PoolAgents,
  settings: SpecOptions,
  o: { iteration: number; lifetimeSeconds: number; cap: number; workerNode: string | undefined },
): { pods: Map<string, WarmPod>; problem?: string } {
  const { size, problem } = warmPoolSize(agents.agent, o.cap);
  const pods = new Map<string, WarmPod>();
  // Every pool pod is placed as the run's own (its owner, streams apart for gavel-launch); a node is added below.
  const place = placementOf(owner, "apart");
  for (const judge of size > 0 ? toolJudgesOf(agents.agent) : []) {
    const agent = agents.judges.get(judge);
    if (agent === undefined) continue;
    const template = warmTemplate(owner, judge, o.iteration);
    const ws = judgeWorkspaces(owner.name, agents.agent, template.metadata.name);
    // A copy or snapshot is of the workspace as it is at the call: no pod can be made for it before.
    if (ws.copies.length > 0 || ws.snapshots.length > 0) continue;
    const node = ws.onWorkerNode ? o.workerNode : undefined;
    if (ws.onWorkerNode && node === undefined) continue;
    // The judge's own workload, as a call's judge child gets it (judgeSpec): its fingerprint must match that one's.
    const built = judgeWorkload(template, agent, ws.mounts, {
      stdin: false,
      ...(settings.runtimes !== undefined ? { runtimes: settings.runtimes } : {}),
    });
    if (typeof built === "string") continue;
    const labels = { parent: owner.label, judge: labelValue(judge) };
    for (let slot = 0; slot < size; slot++) {
      const name = warmName(owner.name, judge, slot);
      const spec = warmWorkload(built, { name, labels, slot, node, lifetimeSeconds: o.lifetimeSeconds });
      if (spec === undefined) break;
      pods.set(workloadPodName(name), { spec, place: { ...place, ...(node !== undefined ? { node } : {}) } });
    }
  }
  return { pods, ...(problem !== undefined ? { problem } : {}) };
}

/** The judges of an Agent's tool_validation entries, once each. */
export function toolJudgesOf(agent: Agent): string[] {
  return [...new Set((agent.spec.execution?.tool_validation ?? []).map((e) => e.judge_agent))];
}

/** The workload name of slot `slot` of `judge`'s pool for `execution`: short enough that its pod name keeps the -warm suffix. */
export function warmName(execution: string, judge: string, slot: number): string {
  const hash = createHash("sha256").update(`${execution}/${judge}`).digest("hex").slice(0, 8);
  const clean = execution
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, 30)
    .replace(/^-+|-+$/g, "");
  return `${clean === "" ? "ex" : clean}-${hash}-${slot}${WARM_SUFFIX}`;
}

/** A judge child of the run that `parent` marks as its pool sees it before any call: what a warm pod's judge workload is built from. */
export function warmTemplate(parent: OwnerMarks, judge: string, iteration: number): Execution {
  return {
    apiVersion: API_VERSION,
    kind: "Execution",
    metadata: { name: warmName(parent.name, judge, 0), namespace: parent.namespace },
    spec: {
      agentRef: { name: judge },
      parent: { name: parent.name, uid: parent.reference.uid, iteration, purpose: "tool_validation", validatorIndex: 0 },
      input: {},
    },
  };
}

/** The program a judge workload runs (its command, else the image's known entrypoint); undefined when gavel does not know it. */
function programOf(spec: WorkloadSpec): string[] | undefined {
  const program = spec.command ?? spec.entrypoint;
  return program !== undefined && program.length > 0 ? program : undefined;
}

/** The variables every call of this judge shares. */
function sharedEnv(spec: WorkloadSpec): Record<string, string> {
  return Object.fromEntries(Object.entries(spec.env ?? {}).filter(([k]) => !PER_CALL_ENV.includes(k)));
}

/**
 * What a call's judge pod must equal for a warm pod to take its place: image, program, shared
 * variables, the Agent's own variables, mounts, network, limits, pull policy and node.
 */
export function warmFingerprint(spec: WorkloadSpec, node: string | undefined): string {
  const what = {
    image: spec.image,
    program: programOf(spec),
    env: sharedEnv(spec),
    agentEnv: spec.agentEnv,
    mounts: spec.mounts,
    network: spec.network,
    egress: spec.egressHosts,
    resources: spec.resources,
    pull: spec.pullPolicy,
    node,
  };
  return createHash("sha256").update(JSON.stringify(what)).digest("hex").slice(0, 16);
}

/**
 * A warm pod's workload from a judge's (judgeSpec of warmTemplate): the same image, variables
 * shared by every call, mounts, network, limits and labels (its parent's and judge's label values), but gavel-launch --wait instead of
 * the program (the placement must run it under gavel-launch), living `lifetimeSeconds`.
 * Undefined when gavel does not know the judge's program (it could not be started by exec).
 */
export function warmWorkload(
  judgeSpec: WorkloadSpec,
  o: { name: string; labels: { parent: string; judge: string }; slot: number; node: string | undefined; lifetimeSeconds: number },
): WorkloadSpec | undefined {
  if (programOf(judgeSpec) === undefined) return undefined;
  const { entrypoint: _entrypoint, stdin: _stdin, ...rest } = judgeSpec;
  return {
    ...rest,
    name: o.name,
    // Under gavel-launch (the placement's streams "apart"): the pod's main container only waits.
    command: ["--wait"],
    env: sharedEnv(judgeSpec),
    timeoutSeconds: o.lifetimeSeconds,
    labels: {
      [CHILD_LABELS.execution]: o.labels.parent,
      [CHILD_LABELS.parent]: o.labels.parent,
      [CHILD_LABELS.role]: WARM_ROLE,
      [WARM_LABELS.judge]: o.labels.judge,
      [WARM_LABELS.slot]: String(o.slot),
      [WARM_LABELS.fingerprint]: warmFingerprint(judgeSpec, o.node),
    },
  };
}

/**
 * The exec that runs a call's judge in a warm pod: gavel-launch writes stdin (the payload) to
 * WARM_INPUT_DIR, sets the call's own variables and GAVEL_INPUT_DIR, then becomes the program.
 */
export function judgeExecCommand(childSpec: WorkloadSpec): string[] {
  const program = programOf(childSpec) ?? [];
  const env = childSpec.env ?? {};
  const perCall = [AGENT_ENV.execution, AGENT_ENV.iteration].filter((k) => env[k] !== undefined).map((k) => `${k}=${env[k]}`);
  return [
    LAUNCHER_PATH,
    "--judge-input",
    WARM_INPUT_DIR,
    ...[...perCall, `${AGENT_ENV.inputDir}=${WARM_INPUT_DIR}`].flatMap((kv) => ["--env", kv]),
    "--",
    ...program,
  ];
}
