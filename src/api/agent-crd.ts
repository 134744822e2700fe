// The Agent resource (a worker or a judge): its CRD schema, the one declaration from which its
// TypeScript types are read (docs/adr/0060-api-types-derived-from-the-crd-schemas.md).
import { absolutePath, ADMISSION, arr, cel, duration, int, isMap, obj, ok, str, typed, type Static } from "./schema-dsl.js";
import { conditions, type API_VERSION, type JsonObject, type ObjectMeta } from "./meta.js";
import { crd, type CrdDocument } from "./crd-document.js";
import { executionSpec } from "./agent-execution.js";
import { runtimeSpec } from "./agent-runtime.js";
import { agentMcpEndpoint, agentMcpServers, imageServerPortsFreeOfEndpoint } from "./mcp-schema.js";
import { APPROVAL_MODES, APPROVAL_ON_TIMEOUT, type ApprovalMode, type ApprovalOnTimeout } from "./tool-approval-crd.js";

/** How judges see a worker's volumes: its claim read-only, a VolumeSnapshot clone, or a copy. */
export const WORKSPACE_STRATEGIES = ["shared", "snapshot", "copy"] as const;
export type WorkspaceStrategy = (typeof WORKSPACE_STRATEGIES)[number];

/** A tool is a bare name or an object with per-tool settings. */
export type ToolEntry = string | ToolObject;

/** A tools entry in its object form; its fields are TOOL_FIELDS (the entry has no structural type, see api-types.test.ts). */
export interface ToolObject {
  name: string;
  /** Commands the tool may run (cmd.run): each an allowed command prefix. */
  allowlist?: string[];
  /** Bypass the inner-loop semantic judge (never the guard). */
  skip_judge?: boolean;
  /** Capability the tool requires (guardian check 3), e.g. "shell:safe". */
  capability?: string;
  /** When a call goes to a person after the guard and the judges (ADR 0067); a GuardPolicy's approval sets the least. Default never. */
  approval?: ApprovalMode;
  /** How long a call waits for a person, e.g. "5m" (default); the worker's iteration deadline keeps running. */
  approval_timeout?: string;
  /** What an unanswered approval does at its deadline: deny (default) or fail; never allow. */
  approval_on_timeout?: ApprovalOnTimeout;
  /** on_uncertain: a judge's score within this of its min_score asks a person (default 0.1). */
  approval_margin?: number;
  /** on_uncertain: the judges' agreement (1 - score spread) below this asks a person (the reference's multi_judge field). */
  min_agreement_confidence?: number;
}

/** Fields of a tools entry in its object form. */
export const TOOL_FIELDS = [
  "name",
  "allowlist",
  "skip_judge",
  "capability",
  "approval",
  "approval_timeout",
  "approval_on_timeout",
  "approval_margin",
  "min_agreement_confidence",
] as const;

const DURATION_RE = "^([0-9]+([.][0-9]+)?(ms|s|m|h))+$";
const quoted = (values: readonly string[]) => values.map((v) => `'${v}'`).join(", ");

const toolEntry = typed<ToolEntry>({
  description:
    "A tool the agent may call: a bare name (e.g. fs.read) or {name, allowlist, skip_judge, capability, approval, approval_timeout, approval_on_timeout, approval_margin, min_agreement_confidence}.",
  "x-kubernetes-preserve-unknown-fields": true,
  [ADMISSION]: [
    cel(
      "type(self) == string ? size(self) > 0 : (type(self) == map && 'name' in self && type(self.name) == string && size(self.name) > 0)",
      "a tools entry is a tool name (- fs.read) or an object with name (- name: cmd.run)",
      (self) =>
        ok(
          typeof self === "string" ? self.length > 0 : isMap(self) && typeof self.name === "string" && self.name.length > 0,
          isMap(self) ? ".name" : "",
        ),
    ),
    cel(
      `type(self) != map || self.all(k, k in [${TOOL_FIELDS.map((f) => `'${f}'`).join(", ")}])`,
      "a tools entry has only name, allowlist, skip_judge, capability, approval, approval_timeout, approval_on_timeout, approval_margin and min_agreement_confidence",
      (self) => {
        if (!isMap(self)) return true;
        const bad = Object.keys(self).find((k) => !(TOOL_FIELDS as readonly string[]).includes(k));
        return bad === undefined ? true : { at: `.${bad}` };
      },
    ),
    cel(
      "type(self) != map || ((!('allowlist' in self) || (type(self.allowlist) == list && self.allowlist.all(c, type(c) == string))) && (!('skip_judge' in self) || type(self.skip_judge) == bool) && (!('capability' in self) || type(self.capability) == string))",
      "allowlist is a list of allowed command prefixes (e.g. [pytest, npm test]); skip_judge is true or false; capability is a string such as shell:safe",
      (self) => {
        if (!isMap(self)) return true;
        if ("allowlist" in self && !(Array.isArray(self.allowlist) && self.allowlist.every((c) => typeof c === "string")))
          return { at: ".allowlist" };
        if ("skip_judge" in self && typeof self.skip_judge !== "boolean") return { at: ".skip_judge" };
        if ("capability" in self && typeof self.capability !== "string") return { at: ".capability" };
        return true;
      },
    ),
    cel(
      `type(self) != map || ((!('approval' in self) || self.approval in [${quoted(APPROVAL_MODES)}]) && (!('approval_on_timeout' in self) || self.approval_on_timeout in [${quoted(APPROVAL_ON_TIMEOUT)}]) && (!('approval_timeout' in self) || (type(self.approval_timeout) == string && self.approval_timeout.matches('${DURATION_RE}'))))`,
      `approval is one of ${APPROVAL_MODES.join(", ")}; approval_on_timeout is ${APPROVAL_ON_TIMEOUT.join(" or ")} (never allow); approval_timeout is a duration such as 5m`,
      (self) => {
        if (!isMap(self)) return true;
        if ("approval" in self && !(APPROVAL_MODES as readonly unknown[]).includes(self.approval)) return { at: ".approval" };
        if ("approval_on_timeout" in self && !(APPROVAL_ON_TIMEOUT as readonly unknown[]).includes(self.approval_on_timeout))
          return { at: ".approval_on_timeout" };
        if (
          "approval_timeout" in self &&
          !(typeof self.approval_timeout === "string" && new RegExp(DURATION_RE).test(self.approval_timeout))
        )
          return { at: ".approval_timeout" };
        return true;
      },
    ),
    cel(
      "type(self) != map || ['approval_margin', 'min_agreement_confidence'].all(k, !(k in self) || ((type(self[k]) == int || type(self[k]) == double) && double(self[k]) >= 0.0 && double(self[k]) <= 1.0))",
      "approval_margin and min_agreement_confidence are numbers from 0 to 1",
      (self) => {
        if (!isMap(self)) return true;
        for (const f of ["approval_margin", "min_agreement_confidence"] as const) {
          const v = self[f];
          if (f in self && !(typeof v === "number" && v >= 0 && v <= 1)) return { at: `.${f}` };
        }
        return true;
      },
    ),
  ],
});

/** `spec` of an Agent. */
export const agentSpec = obj(
  "What the agent is: its runtime, task, tools, security envelope, execution loop, input schema and workspace volumes.",
  {
    runtime: runtimeSpec,
    task: obj("The agent's task.", { instruction: str("The instruction (system prompt) given to the agent.") }),
    input_schema: typed<JsonObject>({
      type: "object",
      description:
        "JSON Schema of the agent's input. For a judge, its property names say which evaluation data gavel maps onto it (output, generated_manifest, " +
        "generated_workflow, user_objective, task, criteria, deployment_result, tool_call_history, worker_mounts, validation_context, proposed_tool_call, " +
        "available_tools, policy_violations). Declared under spec, never under execution.",
      "x-kubernetes-preserve-unknown-fields": true,
    }),
    tools: arr("Tools visible to the agent.", toolEntry, { maxItems: 128 }),
    security: obj("The security envelope of the agent's container.", {
      network: obj(
        "Network access of the container.",
        {
          mode: str("none (no network) or allow (only the hosts in allowlist). Default none.", {
            enum: ["none", "allow"],
            default: "none",
          }),
          allowlist: arr("Hosts the container may reach when mode is allow, e.g. api.openai.com.", str("A host name.")),
        },
        {
          "x-kubernetes-validations": [
            cel(
              "!has(self.allowlist) || size(self.allowlist) == 0 || self.mode == 'allow'",
              "network.allowlist only applies with network.mode: allow",
              (self) =>
                ok(!isMap(self) || !Array.isArray(self.allowlist) || self.allowlist.length === 0 || self.mode === "allow", ".allowlist"),
              ".allowlist",
            ),
          ],
        },
      ),
      resources: obj("Resource limits of the container.", {
        timeout: duration('Wall-clock limit of one run, e.g. "60s", "5m", "1h30m".'),
        memory: str('Memory limit as a Kubernetes quantity, e.g. "512Mi".', { pattern: "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$" }),
        cpu: str('CPU limit as a Kubernetes quantity, e.g. "500m" or "1".', { pattern: "^[0-9]+(\\.[0-9]+)?m?$" }),
      }),
      capabilities: arr(
        'Capability scope of the agent\'s task (guard check "capability boundary"), e.g. [read, "fetch:web"]. Never widens during an Execution.',
        str("A capability."),
      ),
    }),
    execution: executionSpec,
    volumes: arr(
      "Workspace volumes mounted into the agent (and read-only into its judges at the same paths).",
      obj(
        "One volume.",
        {
          name: str("Volume name, unique in the agent.", { minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" }),
          mount_path: str("Absolute mount path inside the container, e.g. /workspace.", {
            "x-kubernetes-validations": [absolutePath("mount_path")],
          }),
          size: str('Requested size as a Kubernetes quantity, e.g. "1Gi". Default 1Gi.', {
            default: "1Gi",
            pattern: "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$",
          }),
          access_mode: str("PersistentVolumeClaim access mode. Default ReadWriteOnce.", {
            enum: ["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"],
            default: "ReadWriteOnce",
          }),
          storage_class: str("StorageClass of the claim; the cluster default when absent."),
        },
        { required: ["name", "mount_path"] },
      ),
      { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], maxItems: 16 },
    ),
    workspace_strategy: str(
      "gavel extension: how this agent's judges see its volumes, always read-only. shared: the same claim (judge pods scheduled onto the node of the worker's ReadWriteOnce claim); " +
        "snapshot: a claim restored from a CSI VolumeSnapshot per judge (needs a VolumeSnapshotClass for the storage class's driver; refused otherwise before any pod starts); " +
        "copy: a claim per judge filled by a copier pod (works on any storage, including ReadWriteOncePod: tool_validation judges, which run while the worker's pod holds the claim, get copies streamed out of the worker's pod). Default: copy for ReadWriteOncePod volumes, shared for the others.",
      { enum: [...WORKSPACE_STRATEGIES] },
    ),
    mcp_servers: agentMcpServers,
    mcp_endpoint: agentMcpEndpoint,
  },
  {
    "x-kubernetes-validations": [
      cel(
        "!has(self.workspace_strategy) || self.workspace_strategy != 'shared' || !has(self.volumes) || self.volumes.all(v, !has(v.access_mode) || v.access_mode != 'ReadWriteOncePod')",
        "workspace_strategy shared cannot serve a ReadWriteOncePod volume (one pod at a time): use copy or snapshot",
        (self) =>
          ok(
            !(
              isMap(self) &&
              self.workspace_strategy === "shared" &&
              Array.isArray(self.volumes) &&
              self.volumes.some((v) => isMap(v) && v.access_mode === "ReadWriteOncePod")
            ),
            ".workspace_strategy",
          ),
        ".workspace_strategy",
      ),
      imageServerPortsFreeOfEndpoint,
    ],
  },
);

const agentStatus = obj("Observed state of the Agent.", {
  observedGeneration: int("metadata.generation last checked by the controller.", { format: "int64" }),
  conditions,
});

/** The Agent CRD. */
export const agentCrd: CrdDocument = crd("Agent", "agents", ["ag"], {
  columns: [
    { name: "Role", type: "string", jsonPath: ".metadata.labels.role" },
    { name: "Mode", type: "string", jsonPath: ".spec.execution.mode" },
    {
      name: "Judges",
      type: "string",
      jsonPath: ".spec.execution.validation[*]['judge_agent','judges']",
      description: "Judges of the outer loop (semantic judge_agent, multi_judge judges).",
    },
    {
      name: "Tool-Judges",
      type: "string",
      jsonPath: ".spec.execution.tool_validation[*].judge_agent",
      description: "Judges of tool calls.",
      priority: 1,
    },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  spec: agentSpec,
  required: ["spec"],
  status: agentStatus,
});

export type AgentSpec = Static<typeof agentSpec>;
export type AgentStatus = Static<typeof agentStatus>;
export type SecuritySpec = NonNullable<AgentSpec["security"]>;
export type VolumeSpec = NonNullable<AgentSpec["volumes"]>[number];

/** A worker or a judge (`metadata.labels.role: judge`). */
export interface Agent {
  apiVersion: typeof API_VERSION;
  kind: "Agent";
  metadata: ObjectMeta;
  spec: AgentSpec;
  status?: AgentStatus;
}
