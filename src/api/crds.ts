// The source of gavel's three CustomResourceDefinitions: `render-crds.ts` writes crds/*.yaml
// from these objects (`make verify` fails on drift) and `validate.ts` checks manifests with them.
import { GROUP, GUARD_PROFILES, GUARD_THREAT_CLASSES, VERSION, WORKSPACE_STRATEGIES } from "./types.js";
import { absolutePath, ADMISSION, arr, bool, cel, duration, int, isMap, obj, ok, str, threshold, type CelRule, type SchemaNode } from "./schema-dsl.js";
import { validationRules } from "./validation-rules.js";
import { agentMcpServers, guardPolicyMcpServers } from "./mcp-schema.js";

/** A CustomResourceDefinition as gavel writes them (one served and stored version). */
export interface CrdDocument {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    scope: "Namespaced";
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[]; categories: string[] };
    versions: {
      name: string;
      served: true;
      storage: true;
      subresources?: { status: Record<string, never> };
      additionalPrinterColumns: { name: string; type: string; jsonPath: string; description?: string; priority?: number }[];
      schema: { openAPIV3Schema: SchemaNode };
    }[];
  };
}

const conditions: SchemaNode = arr(
  "Observations of the object's state (Kubernetes conditions, one per type).",
  obj(
    "One condition.",
    {
      type: str("Condition type, e.g. Ready."),
      status: str("True, False or Unknown.", { enum: ["True", "False", "Unknown"] }),
      reason: str("CamelCase reason, e.g. JudgeNotFound."),
      message: str("Human-readable detail: what is wrong and what to write instead."),
      lastTransitionTime: str("When status last changed.", { format: "date-time" }),
      observedGeneration: int("metadata.generation the condition was computed from.", { format: "int64" }),
    },
    { required: ["type", "status"] },
  ),
  { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] },
);

// ---------------------------------------------------------------- Agent
const semanticToolValidator: SchemaNode = obj(
  "A semantic judge consulted before a tool call is dispatched (inner loop). The call runs only when score >= min_score and confidence >= min_confidence.",
  {
    type: str("Must be semantic: only semantic judges gate tool calls."),
    judge_agent: str("Name of the judge Agent (labels role: judge, execution.mode one-shot) run as a child Execution for each judged call.", {
      minLength: 1,
      maxLength: 253,
    }),
    criteria: str("Rubric handed to the judge with the proposed call."),
    min_score: threshold("Minimum score (0.0-1.0) to allow the tool call. Default 0.7.", 0.7),
    min_confidence: threshold("Minimum self-reported confidence (0.0-1.0) to allow the call. Default 0.0.", 0),
    timeout_seconds: int("Seconds to wait for the judge child Execution; past it the call is rejected. Default 300.", { minimum: 1, default: 300 }),
  },
  {
    required: ["type"],
    "x-kubernetes-validations": [
      cel(
        "self.type == 'semantic'",
        "tool_validation entries must have type: semantic (exit_code, json_schema, regex and multi_judge belong under execution.validation)",
        (self) => ok(isMap(self) && self.type === "semantic", ".type"),
        ".type",
      ),
      cel(
        "has(self.judge_agent)",
        "a semantic tool_validation entry needs judge_agent: the name of a judge Agent (labels role: judge)",
        (self) => ok(isMap(self) && typeof self.judge_agent === "string", ".judge_agent"),
        ".judge_agent",
      ),
    ],
  },
);

/** Fields of a tools entry in its object form. */
export const TOOL_FIELDS = ["name", "allowlist", "skip_judge", "capability"] as const;

const toolEntry: SchemaNode = {
  description:
    "A tool the agent may call: a bare name (e.g. fs.read) or {name, allowlist, skip_judge, capability}.",
  "x-kubernetes-preserve-unknown-fields": true,
  [ADMISSION]: [
    cel(
      "type(self) == string ? size(self) > 0 : (type(self) == map && 'name' in self && type(self.name) == string && size(self.name) > 0)",
      "a tools entry is a tool name (- fs.read) or an object with name (- name: cmd.run)",
      (self) => ok(typeof self === "string" ? self.length > 0 : isMap(self) && typeof self.name === "string" && self.name.length > 0, isMap(self) ? ".name" : ""),
    ),
    cel(
      `type(self) != map || self.all(k, k in [${TOOL_FIELDS.map((f) => `'${f}'`).join(", ")}])`,
      "a tools entry has only name, allowlist, skip_judge and capability",
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
        if ("allowlist" in self && !(Array.isArray(self.allowlist) && self.allowlist.every((c) => typeof c === "string"))) return { at: ".allowlist" };
        if ("skip_judge" in self && typeof self.skip_judge !== "boolean") return { at: ".skip_judge" };
        if ("capability" in self && typeof self.capability !== "string") return { at: ".capability" };
        return true;
      },
    ),
  ],
};

const executionSpec: SchemaNode = obj(
  "How the agent runs: one-shot or iterative, its iteration budget and deadlines, the outer-loop validation and the inner-loop tool_validation.",
  {
    mode: str("one-shot (a single run, max_iterations ignored; judges always use it) or iterative (refine until validation passes or max_iterations). Default iterative.", {
      enum: ["one-shot", "iterative"],
      default: "iterative",
    }),
    max_iterations: int("Iterations the outer loop may use before the Execution fails. Default 10.", { minimum: 1, maximum: 100, default: 10 }),
    timeout_seconds: int("Deadline of the whole Execution in seconds (no default: bounded by max_iterations).", { minimum: 1 }),
    iteration_timeout_seconds: int("Deadline of one iteration's worker run, in seconds.", { minimum: 1 }),
    validation: {
      description:
        "Outer-loop validation. Either an ordered list of validators run cheapest first and stopping at the first failure " +
        "(- type: exit_code {expected: 0} | json_schema {schema_path|schema, target_path} | regex {pattern, target: stdout|/abs/path} | " +
        "semantic {judge_agent, criteria} | multi_judge {judges, consensus: weighted_average|majority|unanimous|best_of_n, min_judges_required: 1, " +
        "min_agreement_confidence, weights, confidence_weighting}; each with min_score (default 1.0), min_confidence (default 0.0), timeout_seconds (judges, default 300)), " +
        "or, in a judge, the form {system: {must_succeed}, output: {format: json|text, schema}} describing its own verdict. " +
        "Checked by the agents.100monkeys.ai ValidatingAdmissionPolicy (CEL); defaults of list entries are applied by gavel, not stored (see docs/api.md).",
      "x-kubernetes-preserve-unknown-fields": true,
      [ADMISSION]: validationRules,
    },
    tool_validation: arr(
      "Inner-loop judges: before each tool call (unless its tool has skip_judge), each entry's judge runs in order; the first rejection blocks the call and its reasoning goes back to the model.",
      semanticToolValidator,
      { maxItems: 16 },
    ),
  },
);

/**
 * Variables gavel itself sets on a worker (identity, payload, the gate's address and the
 * credential): an Agent's env cannot name them, so no manifest can point a worker at
 * another gate or make it speak for another Execution.
 */
export const RESERVED_ENV = [
  "GAVEL_NAMESPACE",
  "GAVEL_EXECUTION",
  "GAVEL_ITERATION",
  "GAVEL_TASK",
  "GAVEL_INPUT",
  "GAVEL_FEEDBACK",
  "GAVEL_TOOLS",
  "GAVEL_MOUNTS",
  "GAVEL_WORKSPACE",
  "GAVEL_NATS_URL",
  "GAVEL_NATS_CREDS",
  "GAVEL_NATS_CREDS_FILE",
] as const;

const keyRef = (kind: "Secret" | "ConfigMap") =>
  obj(
    `A key of a ${kind} in the Agent's namespace.`,
    {
      name: str(`${kind} name.`, { minLength: 1, maxLength: 253 }),
      key: str(`Key in the ${kind}.`, { minLength: 1, maxLength: 253 }),
      optional: bool(`Start the pod even when the ${kind} or its key is missing (the variable is then unset). Default false.`),
    },
    { required: ["name", "key"] },
  );
const objectRef = (kind: "Secret" | "ConfigMap") =>
  obj(`A ${kind} in the Agent's namespace.`, { name: str(`${kind} name.`, { minLength: 1, maxLength: 253 }), optional: bool(`Start the pod even when the ${kind} is missing. Default false.`) }, { required: ["name"] });
const oneOf = (a: string, b: string, message: string) =>
  cel(`has(self.${a}) != has(self.${b})`, message, (self) => ok(isMap(self) && a in self !== b in self));

const envVar = obj(
  "One variable: a literal value, or a key of a Secret or ConfigMap.",
  {
    name: str("Variable name.", { minLength: 1, maxLength: 253, pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }),
    value: str("Literal value (nothing secret: Agents are readable by whoever reads the namespace)."),
    valueFrom: obj(
      "Where the value comes from.",
      { secretKeyRef: keyRef("Secret"), configMapKeyRef: keyRef("ConfigMap") },
      { "x-kubernetes-validations": [oneOf("secretKeyRef", "configMapKeyRef", "valueFrom takes exactly one of secretKeyRef and configMapKeyRef")] },
    ),
  },
  {
    required: ["name"],
    "x-kubernetes-validations": [
      oneOf("value", "valueFrom", "an env entry has exactly one of value and valueFrom"),
      cel(
        `!(self.name in [${RESERVED_ENV.map((n) => `'${n}'`).join(", ")}])`,
        `gavel sets this variable itself (identity, payload, the gate's address and credential: ${RESERVED_ENV.join(", ")})`,
        (self) => ok(!(isMap(self) && (RESERVED_ENV as readonly string[]).includes(String(self.name))), ".name"),
        ".name",
      ),
    ],
  },
);

const envFromSource = obj(
  "All keys of a Secret or ConfigMap as variables (gavel's own variables still win).",
  {
    prefix: str("Prefix added to each key.", { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }),
    secretRef: objectRef("Secret"),
    configMapRef: objectRef("ConfigMap"),
  },
  { "x-kubernetes-validations": [oneOf("secretRef", "configMapRef", "an envFrom entry has exactly one of secretRef and configMapRef")] },
);

const agentSpec: SchemaNode = obj(
  "What the agent is: its runtime, task, tools, security envelope, execution loop, input schema and workspace volumes.",
  {
    runtime: obj(
      "Where the agent runs: a language runtime (language + version) or an explicit container image.",
      {
        language: str("Language runtime, e.g. python or node."),
        version: str('Language version, e.g. "3.11" (quote it in YAML).'),
        image: str("Container image; when absent gavel uses its agent image for the language."),
        pull_policy: str("Image pull policy: Always, IfNotPresent or Never.", { enum: ["Always", "IfNotPresent", "Never"] }),
        command: arr(
          "gavel extension: the program and its arguments, replacing the image's ENTRYPOINT and CMD (as a Kubernetes container's command). On Kubernetes gavel runs a known program under its launcher so that stdout stays apart from stderr; an image of its own whose program is not declared here keeps the pod log's merged stream.",
          str("One word of the command.", { minLength: 1 }),
          { minItems: 1, maxItems: 64 },
        ),
        env: arr(
          "gavel extension: environment variables of this Agent's pods (its workers, or its judge runs), as in a Kubernetes container: a value or a key of a Secret or ConfigMap of the Agent's namespace, e.g. an OpenAI-compatible endpoint and its API key.",
          envVar,
          { maxItems: 64, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
        ),
        envFrom: arr("gavel extension: Secrets and ConfigMaps whose keys all become environment variables of this Agent's pods.", envFromSource, { maxItems: 16 }),
      },
      {
        "x-kubernetes-validations": [
          cel("has(self.language) || has(self.image)", "runtime needs language (e.g. python) or image", (self) => ok(isMap(self) && ("language" in self || "image" in self))),
        ],
      },
    ),
    task: obj("The agent's task.", { instruction: str("The instruction (system prompt) given to the agent.") }),
    input_schema: {
      type: "object",
      description:
        "JSON Schema of the agent's input. For a judge, its property names say which evaluation data gavel maps onto it (output, generated_manifest, " +
        "generated_workflow, user_objective, task, criteria, deployment_result, tool_call_history, worker_mounts, validation_context, proposed_tool_call, " +
        "available_tools, policy_violations). Declared under spec, never under execution.",
      "x-kubernetes-preserve-unknown-fields": true,
    },
    tools: arr("Tools visible to the agent.", toolEntry, { maxItems: 128 }),
    security: obj("The security envelope of the agent's container.", {
      network: obj(
        "Network access of the container.",
        {
          mode: str("none (no network) or allow (only the hosts in allowlist). Default none.", { enum: ["none", "allow"], default: "none" }),
          allowlist: arr("Hosts the container may reach when mode is allow, e.g. api.openai.com.", str("A host name.")),
        },
        {
          "x-kubernetes-validations": [
            cel(
              "!has(self.allowlist) || size(self.allowlist) == 0 || self.mode == 'allow'",
              "network.allowlist only applies with network.mode: allow",
              (self) => ok(!isMap(self) || !Array.isArray(self.allowlist) || self.allowlist.length === 0 || self.mode === "allow", ".allowlist"),
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
      capabilities: arr('Capability scope of the agent\'s task (guard check "capability boundary"), e.g. [read, "fetch:web"]. Never widens during an Execution.', str("A capability.")),
    }),
    execution: executionSpec,
    volumes: arr(
      "Workspace volumes mounted into the agent (and read-only into its judges at the same paths).",
      obj(
        "One volume.",
        {
          name: str("Volume name, unique in the agent.", { minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" }),
          mount_path: str("Absolute mount path inside the container, e.g. /workspace.", { "x-kubernetes-validations": [absolutePath("mount_path")] }),
          size: str('Requested size as a Kubernetes quantity, e.g. "1Gi". Default 1Gi.', { default: "1Gi", pattern: "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$" }),
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
  },
  {
    "x-kubernetes-validations": [
      cel(
        "!has(self.workspace_strategy) || self.workspace_strategy != 'shared' || !has(self.volumes) || self.volumes.all(v, !has(v.access_mode) || v.access_mode != 'ReadWriteOncePod')",
        "workspace_strategy shared cannot serve a ReadWriteOncePod volume (one pod at a time): use copy or snapshot",
        (self) => ok(!(isMap(self) && self.workspace_strategy === "shared" && Array.isArray(self.volumes) && self.volumes.some((v) => isMap(v) && v.access_mode === "ReadWriteOncePod")), ".workspace_strategy"),
        ".workspace_strategy",
      ),
    ],
  },
);

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
    { name: "Tool-Judges", type: "string", jsonPath: ".spec.execution.tool_validation[*].judge_agent", description: "Judges of tool calls.", priority: 1 },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  spec: agentSpec,
  required: ["spec"],
  status: obj("Observed state of the Agent.", {
    observedGeneration: int("metadata.generation last checked by the controller.", { format: "int64" }),
    conditions,
  }),
});

// ---------------------------------------------------------------- Execution

const gradient = obj(
  "A GradientResult: score and confidence in [0, 1] with reasoning.",
  {
    score: threshold("Score from 0.0 to 1.0."),
    confidence: threshold("Confidence from 0.0 to 1.0."),
    reasoning: str("Why."),
    signals: arr("Per-category signals.", obj("One signal.", { category: str("Category."), score: threshold("Score."), message: str("Message.") })),
    metadata: { type: "object", description: "Free-form metadata.", "x-kubernetes-preserve-unknown-fields": true },
  },
  { required: ["score", "confidence", "reasoning"] },
);
/** A transition rule: the field cannot change once set. Offline there is no old object, so its twin always holds. */
const immutable = (field: string) =>
  cel("self == oldSelf", `${field} is immutable: create a new Execution instead of changing it`, () => true);

const phase = (description: string) =>
  str(description, { enum: ["Pending", "Running", "Refining", "Succeeded", "Failed", "Cancelled", "TimedOut"] });
const purpose = str("validation (outer loop) or tool_validation (a tool call).", { enum: ["validation", "tool_validation"] });
const validatorType = str("Validator type.", { enum: ["exit_code", "json_schema", "regex", "semantic", "multi_judge"] });

/** The Execution CRD. */
export const executionCrd: CrdDocument = crd("Execution", "executions", ["ex"], {
  columns: [
    { name: "Agent", type: "string", jsonPath: ".spec.agentRef.name" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Iteration", type: "integer", jsonPath: ".status.iteration" },
    { name: "Score", type: "number", jsonPath: ".status.score" },
    { name: "Calls", type: "integer", jsonPath: ".status.toolCalls.proposed", description: "Tool calls proposed to the gate." },
    { name: "Blocked", type: "integer", jsonPath: ".status.toolCalls.blocked", description: "Tool calls the guard or a judge blocked." },
    { name: "Parent", type: "string", jsonPath: ".spec.parent.name" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  required: ["spec"],
  spec: obj(
    "One run of an Agent. A judge run is a child Execution with spec.parent set.",
    {
      agentRef: obj(
        "The Agent to run (same namespace). Immutable.",
        { name: str("Agent name.", { minLength: 1, maxLength: 253 }) },
        { required: ["name"], "x-kubernetes-validations": [immutable("spec.agentRef")] },
      ),
      input: {
        description: "Input handed to the agent; validated against its input_schema when it declares one.",
        "x-kubernetes-preserve-unknown-fields": true,
      },
      parent: obj(
        "Set on judge children: what they judge and for whom. Immutable.",
        {
          name: str("Parent Execution name."),
          uid: str("Parent Execution uid."),
          purpose,
          iteration: int("Parent iteration being judged.", { minimum: 1 }),
          validatorIndex: int("Index of the validator (validation) or tool_validation entry.", { minimum: 0 }),
          toolCallId: str("Idempotency key of the judged tool call (tool_validation only)."),
          depth: int("Depth in the judge tree: a worker's judge is 1; at most 3.", { minimum: 1, maximum: 3 }),
        },
        { required: ["name", "uid", "purpose", "iteration", "validatorIndex"], "x-kubernetes-validations": [immutable("spec.parent")] },
      ),
      timeoutSeconds: int("Deadline of this Execution in seconds; overrides the Agent's execution.timeout_seconds.", { minimum: 1 }),
    },
    { required: ["agentRef"] },
  ),
  status: obj("Observed state of the Execution, written by the controller.", {
    phase: phase("Pending, Running, Refining, Succeeded, Failed, Cancelled or TimedOut."),
    iteration: int("Current (or last) iteration, from 1.", { minimum: 0 }),
    score: threshold("Lowest validator score of the last finished iteration."),
    message: str("Human-readable summary."),
    observedGeneration: int("metadata.generation last acted on.", { format: "int64" }),
    startTime: str("When the Execution started.", { format: "date-time" }),
    completionTime: str("When it finished.", { format: "date-time" }),
    rejection: str("Why a judge produced no verdict.", { enum: ["malformed_output", "failed", "cancelled", "timed_out"] }),
    verdict: gradient,
    rawOutput: obj("A finished judge's own output, bounded (its tails), kept so a rejected verdict can be read back (gavel describe, kubectl get -o yaml).", {
      stdout: str("The last 16 KiB of its stdout (where the verdict is read from)."),
      stderr: str("The last 4 KiB of its stderr; empty where the runtime merges stderr into stdout."),
      exitCode: int("Its exit code."),
      stdoutBytes: int("Length of its whole stdout in bytes.", { minimum: 0 }),
      truncated: bool("True when stdout or stderr was longer than kept here."),
      streamsMerged: str("Set when stderr could not be kept apart from stdout (its pod did not run under gavel-launch: the image's program is unknown, declare spec.runtime.command): why."),
    }),
    iterations: arr(
      "One record per iteration.",
      obj(
        "One iteration.",
        {
          number: int("Iteration number, from 1.", { minimum: 1 }),
          phase: str("Running, Validating, Passed, Refining or Failed.", { enum: ["Running", "Validating", "Passed", "Refining", "Failed"] }),
          exitCode: int("Exit code of the worker run."),
          startTime: str("Start.", { format: "date-time" }),
          completionTime: str("End.", { format: "date-time" }),
          feedback: str("Feedback handed to this iteration from the previous one."),
          toolCalls: obj(
            "The tool calls the gate decided in this iteration: counts of all of them and the last 20, without argument values.",
            {
              proposed: int("Calls proposed (decided or being decided).", { minimum: 0 }),
              allowed: int("Calls allowed.", { minimum: 0 }),
              blockedByGuard: int("Calls the deterministic guard blocked.", { minimum: 0 }),
              blockedByJudge: int("Calls a tool_validation judge blocked.", { minimum: 0 }),
              recent: arr(
                "The most recent decided calls, in step order.",
                obj("One decided call.",
                  {
                    step: int("Position of the call in the iteration.", { minimum: 1 }),
                    tool: str("Tool name."),
                    server: str("The MCP server whose tool it is (tool is <server>.<name>); absent for a built-in tool."),
                    toolCallId: str("The call's idempotency key."),
                    allowed: bool("Whether the call was allowed."),
                    blockedBy: str("none, guard or judge.", { enum: ["none", "guard", "judge"] }),
                    check: str("The guard check that denied or flagged it."),
                    reason: str("Why it was blocked (rule names or judge reasoning, never argument values)."),
                    judges: arr("Tool-judge child Executions that judged it.", str("Execution name.")),
                  },
                  { required: ["step", "tool", "toolCallId", "allowed", "blockedBy"] },
                ),
                { maxItems: 20 },
              ),
            },
            { required: ["proposed", "allowed", "blockedByGuard", "blockedByJudge"] },
          ),
          validators: arr(
            "Validator results, in declared order (stops at the first failure).",
            obj(
              "One validator result.",
              {
                index: int("Validator index.", { minimum: 0 }),
                type: validatorType,
                passed: bool("score >= min_score and confidence >= min_confidence."),
                score: threshold("Score."),
                confidence: threshold("Confidence."),
                reasoning: str("Reasoning."),
                signals: arr("Signals.", obj("One signal.", { category: str("Category."), score: threshold("Score."), message: str("Message.") })),
                children: arr("Judge child Executions.", str("Execution name.")),
              },
              { required: ["index", "type", "passed", "score", "confidence", "reasoning"] },
            ),
          ),
        },
        { required: ["number", "phase"] },
      ),
    ),
    children: arr(
      "Judge child Executions.",
      obj(
        "One child.",
        {
          name: str("Child Execution name."),
          purpose,
          iteration: int("Iteration judged.", { minimum: 1 }),
          validatorIndex: int("Validator index.", { minimum: 0 }),
          judge: str("Judge Agent name."),
          toolCallId: str("Tool call id (tool_validation)."),
          phase: phase("Child phase."),
        },
        { required: ["name", "purpose", "iteration", "validatorIndex", "judge"] },
      ),
    ),
    toolCalls: obj("Tool calls of every iteration, counted.", {
      proposed: int("Calls proposed.", { minimum: 0 }),
      allowed: int("Calls allowed.", { minimum: 0 }),
      blocked: int("Calls blocked by the guard or a judge.", { minimum: 0 }),
    }),
    conditions,
  }),
});

// ---------------------------------------------------------------- GuardPolicy

/** `enforcementAction` of a GuardPolicy or one of its rules (gavel extension; Gatekeeper's names). */
const enforcementAction = (scope: string) =>
  str(
    `What ${scope} does with a call it would deny: deny blocks it; warn allows it and lists the would-be denial in the decision, the audit, the event stream and a ToolCallWarned Event; dryrun allows it and records the would-be denial in the audit and the event stream only. ${scope === "this policy's rules" ? "Default deny." : "Default: the policy's enforcementAction."}`,
    { enum: ["deny", "warn", "dryrun"] },
  );

const regexEntry = (what: string) =>
  obj(
    `A ${what}.`,
    {
      pattern: str("Regular expression (RE2 syntax; lookaround groups are accepted too and run bounded, see docs/guard.md), matched against every nested string argument.", { minLength: 1 }),
      reason: str("Reason reported on deny."),
      enforcementAction: enforcementAction("this pattern"),
    },
    { required: ["pattern"] },
  );

/** The GuardPolicy CRD. */
export const guardPolicyCrd: CrdDocument = crd("GuardPolicy", "guardpolicies", ["gp"], {
  columns: [
    { name: "Revoked", type: "string", jsonPath: ".spec.revoked_tools[*].tool" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  required: ["spec"],
  spec: obj(
    "The extensible part of the deterministic guard that checks every tool call before any judge. The policy named default in the controller's namespace applies cluster-wide; a namespace's own policies add to it. Hot-reloaded.",
    {
      enforcementAction: enforcementAction("this policy's rules"),
      profile: str(
        "What the guard's threat classes (what the effect model finds a command does; docs/guard.md) do with a call: strict denies every class; standard (the default) denies all but infrastructure and git_history, which it flags (the call goes on, flagged); permissive flags protection_off, privilege_escalation, secrets, persistence, service_disruption, account_change, infrastructure and git_history and denies the rest. The first policy that sets it wins (the cluster default first).",
        { enum: [...GUARD_PROFILES] },
      ),
      // maxProperties bounds the CEL rule's estimated cost (without it, 13 classes exceed the API server's budget).
      threat_classes: {
        type: "object",
        description: `Per threat class (${GUARD_THREAT_CLASSES.join(", ")}) -> deny, or flag (allow the call and list the finding in the decision's flags), overriding the profile. The first policy that sets a class wins.`,
        additionalProperties: str("deny or flag.", { enum: ["deny", "flag"] }), maxProperties: GUARD_THREAT_CLASSES.length,
        "x-kubernetes-validations": [
          cel(
            `self.all(k, k in [${GUARD_THREAT_CLASSES.map((c) => `'${c}'`).join(", ")}])`,
            `threat_classes keys are threat classes: ${GUARD_THREAT_CLASSES.join(", ")}`,
            (self) => {
              if (!isMap(self)) return true;
              const bad = Object.keys(self).find((k) => !(GUARD_THREAT_CLASSES as readonly string[]).includes(k));
              return bad === undefined ? true : { at: `.${bad}` };
            },
          ),
        ],
      },
      revoked_tools: arr(
        'Revocation list (check 1): a call to one of these tools is denied with reason "tool_revoked: <reason>".',
        obj(
          "A revoked tool.",
          { tool: str("Tool id/name.", { minLength: 1 }), reason: str("Why it is revoked.", { minLength: 1 }), revoked_at: str("When.", { format: "date-time" }), enforcementAction: enforcementAction("this entry") },
          { required: ["tool", "reason"] },
        ),
        { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["tool"] },
      ),
      tool_registry: arr(
        'Registered tools (checks 2 and 6): expected SHA-256 of the tool code ("hash_mismatch") and its Ed25519 signature by a trusted key ("signature_invalid").',
        obj(
          "A registered tool.",
          {
            tool: str("Tool name.", { minLength: 1 }),
            sha256: str("Hex SHA-256 of the tool's code.", { pattern: "^[0-9a-f]{64}$" }),
            signature: str("Base64 Ed25519 signature of the sha256."),
            enforcementAction: enforcementAction("this registration (hash and signature checks)"),
          },
          { required: ["tool", "sha256"] },
        ),
        { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["tool"] },
      ),
      required_capabilities: {
        type: "object",
        description: 'Capability boundary (check 3): tool name -> capability it requires, e.g. {shell_exec: "shell:safe"}; denied when the agent\'s security.capabilities lack it.',
        additionalProperties: str("Capability."),
      },
      skip_judge: {
        type: "object",
        description:
          "skip_judge, decided by operators: tool name -> true to skip the tool_validation judges for its calls, false to judge them, overriding gavel's built-in table (fs.read and fs.list skip, other tools are judged). The guard always runs. An Agent's tools[].skip_judge can only ask for judging (false), never switch it off.",
        additionalProperties: bool("Skip the judges for this tool."),
      },
      mcp_servers: guardPolicyMcpServers,
      destructive_patterns: arr('Destructive patterns (check 4): deny with "destructive_pattern: <pattern>".', regexEntry("destructive argument pattern")),
      forbidden_paths: arr("Paths no tool argument may reference (check 4).", regexEntry("forbidden path pattern")),
      sequence_contracts: arr(
        'Sequence contracts (check 5): triggers_for is denied ("sequence_contract: <name>") unless requires_prior was called within the last within_steps calls.',
        obj(
          "A sequence contract.",
          {
            name: str("Contract name.", { minLength: 1 }),
            requires_prior: str("Tool that must precede.", { minLength: 1 }),
            triggers_for: str("Tool that triggers the check.", { minLength: 1 }),
            within_steps: int("Window in tool calls. Default 5.", { minimum: 1, default: 5 }),
            enforcementAction: enforcementAction("this contract"),
          },
          { required: ["name", "requires_prior", "triggers_for"] },
        ),
        { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
      ),
      adaptive_rules: arr(
        'Adaptive rules (check 7): deny ("adaptive_rule: <name>") or flag (record, allow) calls whose tool, args or hash match pattern.',
        obj(
          "An adaptive rule.",
          {
            name: str("Rule name.", { minLength: 1 }),
            match_field: str("What the pattern is matched against: tool, args or hash.", { enum: ["tool", "args", "hash"] }),
            pattern: str("Regular expression (RE2 syntax; lookaround groups are accepted too and run bounded, see docs/guard.md).", { minLength: 1 }),
            action: str("deny or flag.", { enum: ["deny", "flag"] }),
            reason: str("Reason reported."),
            enabled: bool("Whether the rule is active. Default true.", { default: true }),
            enforcementAction: enforcementAction("this rule (with action deny)"),
          },
          { required: ["name", "match_field", "pattern", "action", "reason"] },
        ),
        { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
      ),
      trusted_keys: arr(
        "Ed25519 public keys trusted to sign tool registrations (check 6).",
        obj("A key.", { name: str("Key name.", { minLength: 1 }), public_key: str("Base64 raw 32-byte key or PEM.", { minLength: 1 }) }, { required: ["name", "public_key"] }),
        { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
      ),
    },
  ),
  status: obj("Observed state.", {
    observedGeneration: int("metadata.generation last loaded.", { format: "int64" }),
    counts: { type: "object", description: "Entries loaded per list.", additionalProperties: int("Count.") },
    conditions,
  }),
});

/** Every CRD gavel installs, with the file it is rendered to under crds/. */
export const crds: { file: string; crd: CrdDocument }[] = [
  { file: "agents.100monkeys.ai.yaml", crd: agentCrd },
  { file: "executions.100monkeys.ai.yaml", crd: executionCrd },
  { file: "guardpolicies.100monkeys.ai.yaml", crd: guardPolicyCrd },
];

function crd(
  kind: string,
  plural: string,
  shortNames: string[],
  o: { columns: CrdDocument["spec"]["versions"][number]["additionalPrinterColumns"]; spec: SchemaNode; status: SchemaNode; required: string[] },
): CrdDocument {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), shortNames, categories: ["gavel"] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: o.columns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: `gavel ${kind} (${GROUP}/${VERSION}); see docs/api.md.`,
              required: o.required,
              properties: {
                apiVersion: str("APIVersion: 100monkeys.ai/v1."),
                kind: str(`Kind: ${kind}.`),
                metadata: { type: "object" },
                spec: o.spec,
                status: o.status,
              },
            },
          },
        },
      ],
    },
  };
}

// ---------------------------------------------------------------- admission policy

/** A ValidatingAdmissionPolicy or its binding, as rendered under crds/policies/. */
export type PolicyDocument = Record<string, unknown>;

/** Every [ADMISSION] rule of a schema, with the steps from the object root ("[]" = each item). */
export function admissionRules(node: SchemaNode, steps: string[] = []): { steps: string[]; rule: CelRule }[] {
  const here = (node[ADMISSION] ?? []).map((rule) => ({ steps, rule }));
  const below = [
    ...Object.entries(node.properties ?? {}).flatMap(([k, child]) => admissionRules(child, [...steps, k])),
    ...(node.items === undefined ? [] : admissionRules(node.items, [...steps, "[]"])),
  ];
  return [...here, ...below];
}

/** The CEL expression of a rule on `object`: vacuously true where the field is absent. */
export function admissionExpression(steps: string[], rule: string): string {
  const walk = (ctx: string, rest: string[], depth: number): string => {
    const [step, ...tail] = rest;
    if (step === undefined) return `(${rule.replace(/\bself\b/g, ctx)})`;
    if (step === "[]") return `${ctx}.all(x${depth}, ${walk(`x${depth}`, tail, depth + 1)})`;
    return `!has(${ctx}.${step}) || ${walk(`${ctx}.${step}`, tail, depth)}`;
  };
  return walk("object", steps, 0);
}

/** The field path a rule's message starts with, e.g. spec.tools[*]. */
function stepsPath(steps: string[]): string {
  return steps.map((s, i) => (s === "[]" ? "[*]" : i === 0 ? s : `.${s}`)).join("");
}

/** The ValidatingAdmissionPolicy (and binding) enforcing the rules the Agent CRD cannot hold. */
export function agentAdmissionPolicy(): PolicyDocument[] {
  const name = `agents.${GROUP}`;
  const schema = agentCrd.spec.versions[0]?.schema.openAPIV3Schema;
  const rules = schema === undefined ? [] : admissionRules(schema);
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [{ apiGroups: [GROUP], apiVersions: [VERSION], operations: ["CREATE", "UPDATE"], resources: ["agents"] }],
        },
        validations: rules.map(({ steps, rule }) => ({
          expression: admissionExpression(steps, rule.rule),
          message: `${stepsPath(steps)}: ${rule.message}`,
          reason: "Invalid",
        })),
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name },
      spec: { policyName: name, validationActions: ["Deny"] },
    },
  ];
}
