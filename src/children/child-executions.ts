// Judge children as Execution objects: a validation judge (the engine's spawn_judge) or a
// tool_validation judge of one proposed tool call (the gate). Local mode keeps them in its
// result, the controller (and the cluster gate) creates them; both build them here.
import type * as k8s from "@kubernetes/client-node";
import type { ToolCallProposal } from "../api/protocol.js";
import {
  API_VERSION,
  type Agent,
  type Execution,
  type ExecutionStatus,
  type JsonObject,
  type JudgePurpose,
  type SemanticValidatorSpec,
} from "../api/types.js";
import { toolJudgeChildName } from "../engine/child-names.js";
import { judgeTimeoutSeconds } from "../engine/durations.js";
import { buildToolCallPayload, buildValidationPayload, toolCallHistoryOf } from "../engine/judge-payload.js";
import type { JudgeChildRequest } from "../engine/outer-loop.js";
import { messageOf } from "../errors.js";
import type { WorkloadMount, WorkloadSpec } from "../runtime/workload.js";
import type { RuntimeTable } from "./runtime-table.js";
import {
  CHILD_LABELS,
  ENV_PAYLOAD_LIMIT,
  INPUT_ANNOTATION,
  judgeWorkload,
  labelValue,
  ownerMarks,
  payloadProblem,
  type OwnerMarks,
} from "./workloads.js";
import { describeParts, descriptorText, partConfigMaps } from "../runtime/kubernetes.js";

/** Annotation on a judge child that could not be given a payload: the child ends Failed with this text. */
export const SPAWN_ERROR_ANNOTATION = "gavel.dev/spawn-error";

/** What a judge child is, apart from its parent. */
interface ChildShape {
  name: string;
  judge: string;
  purpose: JudgePurpose;
  iteration: number;
  validatorIndex: number;
  toolCallId?: string;
  depth: number;
  timeoutSeconds: number;
  input?: JsonObject;
  spawnError?: string;
}

/** A judge child of the Execution that `parent` marks: in its namespace, labelled with it and owned by it. */
function childExecution(parent: OwnerMarks, c: ChildShape): Execution {
  return {
    apiVersion: API_VERSION,
    kind: "Execution",
    metadata: {
      name: c.name,
      namespace: parent.namespace,
      labels: { [CHILD_LABELS.parent]: parent.label, [CHILD_LABELS.role]: "judge" },
      ...(c.spawnError !== undefined ? { annotations: { [SPAWN_ERROR_ANNOTATION]: c.spawnError.slice(0, 4000) } } : {}),
      ownerReferences: [parent.reference],
    },
    spec: {
      agentRef: { name: c.judge },
      ...(c.input !== undefined ? { input: c.input } : {}),
      parent: {
        name: parent.name,
        uid: parent.reference.uid,
        purpose: c.purpose,
        iteration: c.iteration,
        validatorIndex: c.validatorIndex,
        ...(c.toolCallId !== undefined ? { toolCallId: c.toolCallId } : {}),
        depth: c.depth,
      },
      timeoutSeconds: c.timeoutSeconds,
    },
  };
}

/** Everything a validation judge child is made from. */
export interface ValidationJudgeInput {
  /** The worker's Execution. */
  parent: Execution;
  /** How it marks what it owns (ownerMarks), as the driver worked them out: the child's namespace, parent label and owner. */
  owner: OwnerMarks;
  /** The worker's Agent (its task goes into the payload). */
  worker: Agent;
  /** The judge Agent; undefined when it does not exist. */
  judge: Agent | undefined;
  /** The engine's spawn_judge request. */
  request: JudgeChildRequest;
  /** The worker's final output, the content judged. */
  output: string;
  /** The worker's mounts (their paths go into the payload). */
  workerMounts: WorkloadMount[];
  /** The worker Execution's status as the driver has it now: its iteration's tool calls become `tool_call_history`. */
  status?: ExecutionStatus;
}

/** A validation judge child: its Execution object and, when it cannot run, why. */
export interface ValidationJudgeChild {
  /** spec.parent purpose validation (with depth), owned by the parent; annotated with `problem` when set. */
  execution: Execution;
  /** Why no payload could be made (unknown judge, an input_schema gavel cannot fill): it counts as failed. */
  problem?: string;
}

/** The child Execution of one validation judge with the reference validation payload as spec.input. */
export function validationJudgeChild(v: ValidationJudgeInput): ValidationJudgeChild {
  const req = v.request;
  const history = toolCallHistoryOf(v.status ?? v.parent.status, req.iteration);
  let input: JsonObject | undefined;
  let problem: string | undefined;
  if (v.judge === undefined) {
    problem = `judge agent "${req.judge}" is not known`;
  } else {
    try {
      input = buildValidationPayload({
        judge: v.judge,
        validator: req.validator,
        ...(v.worker.spec.task?.instruction !== undefined ? { task: v.worker.spec.task.instruction } : {}),
        output: v.output,
        workerMounts: v.workerMounts.map((m) => m.mountPath),
        ...(v.parent.spec.input !== undefined ? { input: v.parent.spec.input } : {}),
        ...(history !== undefined ? { toolCallHistory: history } : {}),
      });
    } catch (err) {
      problem = messageOf(err);
    }
  }
  const execution = childExecution(v.owner, {
    name: req.name,
    judge: req.judge,
    purpose: "validation",
    iteration: req.iteration,
    validatorIndex: req.validatorIndex,
    depth: req.depth,
    timeoutSeconds: req.timeoutSeconds,
    ...(input !== undefined ? { input } : {}),
    ...(problem !== undefined ? { spawnError: problem } : {}),
  });
  return problem !== undefined ? { execution, problem } : { execution };
}

/** Everything a tool_validation judge child is made from. */
export interface ToolJudgeInput {
  /** The worker's Execution. */
  parent: Execution;
  /** The worker's Agent (its task and tools go into the payload). */
  worker: Agent;
  /** The judge Agent the entry names; undefined when it does not exist. */
  judge: Agent | undefined;
  /** The tool_validation entry and its index in `execution.tool_validation`. */
  entry: SemanticValidatorSpec;
  index: number;
  proposal: ToolCallProposal;
  /** Guard flags raised for the call (the payload's `policy_violations`). */
  policyViolations: readonly string[];
  /** The worker's mounts; the judge gets them read-only at the same paths. */
  workerMounts: WorkloadMount[];
  /** Whether the driver writes the payload to stdin as well (see JudgeWorkloadOptions). */
  stdin: boolean;
  /** Images of language runtimes; default the built-in table. */
  runtimes?: RuntimeTable;
}

/** A tool_validation judge child: its name, its Execution object and what runs it. */
export interface ToolJudgeChild {
  name: string;
  /** spec.parent purpose tool_validation with the call's toolCallId; annotated with the spawn error when `problem` is set. */
  execution: Execution;
  /** The judge's workload; undefined when `problem` says why the judge cannot run. */
  workload?: WorkloadSpec;
  /** Why the judge cannot run (unknown judge, a payload its input_schema refuses, no image): it counts as failed. */
  problem?: string;
}

/**
 * The judge child of one tool_validation entry for one proposed call, named
 * `<exec>-i<N>-t<k>-s<step>-<judge>`, with the reference tool-judge payload.
 */
export function toolJudgeChild(t: ToolJudgeInput): ToolJudgeChild {
  const name = toolJudgeChildName(t.parent.metadata.name, t.proposal.iteration, t.index, t.proposal.step, t.entry.judge_agent);
  let input: JsonObject | undefined;
  let problem: string | undefined;
  if (t.judge === undefined) {
    problem = `judge agent "${t.entry.judge_agent}" is not known`;
  } else {
    try {
      input = buildToolCallPayload({
        judge: t.judge,
        validator: t.entry,
        ...(t.worker.spec.task?.instruction !== undefined ? { task: t.worker.spec.task.instruction } : {}),
        proposal: t.proposal,
        availableTools: [
          ...(t.worker.spec.tools ?? []).map((tool) => (typeof tool === "string" ? tool : tool.name)),
          // MCP servers' tools as the Agent declares them (ADR 0051): each offered tool, or every tool of the server.
          ...(t.worker.spec.mcp_servers ?? []).flatMap((s) => s.tools?.map((name) => `${s.name}.${name}`) ?? [`${s.name}.*`]),
        ],
        workerMounts: t.workerMounts.map((m) => m.mountPath),
        policyViolations: [...t.policyViolations],
      });
    } catch (err) {
      problem = messageOf(err);
    }
  }
  const execution = childExecution(ownerMarks(t.parent), {
    name,
    judge: t.entry.judge_agent,
    purpose: "tool_validation",
    iteration: t.proposal.iteration,
    validatorIndex: t.index,
    toolCallId: t.proposal.toolCallId,
    depth: (t.parent.spec.parent?.depth ?? 0) + 1,
    timeoutSeconds: judgeTimeoutSeconds(t.entry, t.judge),
    ...(input !== undefined ? { input } : {}),
    ...(problem !== undefined ? { spawnError: problem } : {}),
  });
  if (problem !== undefined || t.judge === undefined) return { name, execution, problem: problem ?? "no judge" };
  const workload = judgeWorkload(execution, t.judge, t.workerMounts, {
    stdin: t.stdin,
    ...(t.runtimes !== undefined ? { runtimes: t.runtimes } : {}),
  });
  return typeof workload === "string" ? { name, execution, problem: workload } : { name, execution, workload };
}

/** Payloads up to this size stay in a stored child's spec.input too (for kubectl); larger ones are only in its parts. */
export const INLINE_INPUT_LIMIT = 256 * 1024;

/** Prefix of the ConfigMap parts holding a judge child's payload: `<child>-input`. */
export function inputPartsPrefix(child: string): string {
  return `${child}-input`;
}

/** A judge child as the cluster stores it: the Execution to create, after the ConfigMaps of its payload. */
export interface StoredJudgeChild {
  execution: Execution;
  /** Its payload's parts (none when it fits env GAVEL_INPUT); owned like the child, by the parent. */
  parts: k8s.V1ConfigMap[];
}

/**
 * A judge child ready for the API server. A payload beyond what a pod's env holds goes into
 * immutable ConfigMap parts `<child>-input-NN` (created first; deterministic names, so a retry
 * adopts them) named by the child's INPUT_ANNOTATION, and leaves spec.input when it is larger
 * than INLINE_INPUT_LIMIT (etcd holds ~1.5 MiB per object). One over MAX_PAYLOAD_BYTES fails
 * the child before any pod starts, naming spec.input.
 */
export function storedJudgeChild(child: Execution): StoredJudgeChild {
  if (child.spec.input === undefined) return { execution: child, parts: [] };
  const bytes = Buffer.from(JSON.stringify(child.spec.input));
  if (bytes.length <= ENV_PAYLOAD_LIMIT) return { execution: child, parts: [] };
  const { input: _input, ...spec } = child.spec;
  const problem = payloadProblem(bytes.length);
  if (problem !== undefined) {
    return {
      execution: {
        ...child,
        metadata: { ...child.metadata, annotations: { ...child.metadata.annotations, [SPAWN_ERROR_ANNOTATION]: problem } },
        spec,
      },
      parts: [],
    };
  }
  const prefix = inputPartsPrefix(child.metadata.name);
  const parts = partConfigMaps(prefix, bytes, {
    labels: {
      [CHILD_LABELS.parent]: child.metadata.labels?.[CHILD_LABELS.parent] ?? "",
      [CHILD_LABELS.execution]: labelValue(child.metadata.name),
    },
    ...(child.metadata.ownerReferences !== undefined ? { ownerReferences: child.metadata.ownerReferences } : {}),
  });
  const annotations = { ...child.metadata.annotations, [INPUT_ANNOTATION]: descriptorText(describeParts(bytes)) };
  return {
    execution: { ...child, metadata: { ...child.metadata, annotations }, spec: bytes.length <= INLINE_INPUT_LIMIT ? child.spec : spec },
    parts,
  };
}
