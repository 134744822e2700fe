// An Agent's `spec.runtime`: where it runs (language runtime or image, command) and the
// environment of its pods, as schema with its types read off it.
import { arr, bool, cel, isMap, obj, ok, str, type Static } from "./schema-dsl.js";

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
  obj(
    `A ${kind} in the Agent's namespace.`,
    {
      name: str(`${kind} name.`, { minLength: 1, maxLength: 253 }),
      optional: bool(`Start the pod even when the ${kind} is missing. Default false.`),
    },
    { required: ["name"] },
  );
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
      {
        "x-kubernetes-validations": [
          oneOf("secretKeyRef", "configMapKeyRef", "valueFrom takes exactly one of secretKeyRef and configMapKeyRef"),
        ],
      },
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

/** `spec.runtime` of an Agent. */
export const runtimeSpec = obj(
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
    envFrom: arr(
      "gavel extension: Secrets and ConfigMaps whose keys all become environment variables of this Agent's pods.",
      envFromSource,
      { maxItems: 16 },
    ),
  },
  {
    "x-kubernetes-validations": [
      cel("has(self.language) || has(self.image)", "runtime needs language (e.g. python) or image", (self) =>
        ok(isMap(self) && ("language" in self || "image" in self)),
      ),
    ],
  },
);

/** Where the agent runs (`spec.runtime`). */
export type RuntimeSpec = Static<typeof runtimeSpec>;
/** One environment variable of an Agent's pods (a Kubernetes EnvVar subset). */
export type EnvVar = Static<typeof envVar>;
/** A key of a Secret or ConfigMap in the Agent's namespace. */
export type KeyRef = Static<ReturnType<typeof keyRef>>;
/** A Secret or ConfigMap whose keys all become variables (a Kubernetes EnvFromSource subset). */
export type EnvFromSource = Static<typeof envFromSource>;
