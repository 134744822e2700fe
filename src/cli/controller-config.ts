// The configuration `gavel controller` reads: its flags, each with the environment variable
// the chart sets for it as the default, checked by one compiled JSON Schema. A bad value is a
// UsageError naming the flag and its variable, and what it must be.
import { Ajv, type ErrorObject } from "ajv";
import { parseArgs } from "node:util";
import { parseBindAddress } from "../controller/runtime.js";
import { messageOf } from "../errors.js";
import { UsageError } from "./command.js";

/** A `HOST:PORT` or `:PORT` an endpoint listens on. */
export interface BindAddress {
  host?: string;
  port: number;
}

/** What `gavel controller` runs with. */
export interface ControllerConfig {
  kubeconfig?: string;
  /** Namespace whose Agents and Executions are watched; all when undefined. */
  namespace?: string;
  /** Label selector of the namespaces whose objects are reconciled (all watched, others ignored); exclusive with namespace. */
  namespaceSelector?: string;
  /** The controller's own namespace: its cluster-default GuardPolicy and its Lease. */
  controllerNamespace: string;
  logLevel: string;
  leaderElect: boolean;
  /** NATS, when the tool-call gate and the event stream run. */
  nats?: {
    url: string;
    /** File of gavel's own NATS credential. */
    creds?: string;
    /** Directory of the keys that mint and revoke worker credentials. */
    keys?: string;
    /** Replicas of gavel's JetStream streams (a JetStream cluster); undefined keeps existing streams' (docs/nats.md). */
    streamReplicas?: number;
  };
  /** The URL worker pods reach NATS at: --nats-worker-url, else the controller's own. */
  workerNatsUrl?: string;
  /** File of language runtimes over the built-in table. */
  runtimes?: string;
  /** gavel-launch, which keeps a pod's stdout apart from its stderr; default the one `make build` leaves beside the CLI. */
  launcher?: string;
  podRetentionSeconds?: number;
  /** Warm judge pods per tool_validation judge at most (ADR 0070); 0 keeps none. */
  warmJudges: number;
  /** Where pending tool-call approvals are announced with a JSON POST (ADR 0067). */
  approvalWebhookUrl?: string;
  /** The file of the secret that signs each announcement (a mounted Secret's key; ADR 0082). */
  approvalWebhookSecretFile?: string;
  /** How long decided calls are kept with their proposals for `gavel replay` (GAVEL_CALLS, ADR 0076); 0 records none. */
  recordedCallsMaxAgeSeconds: number;
  healthProbe?: BindAddress;
  metrics?: BindAddress;
  webView: boolean;
  /** This replica's name (the Lease holder, the gate's id): the pod's name, else host and pid. */
  podName?: string;
}

const NAME = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
const BIND = "^(0|(\\[[^\\]]+\\]|[^:\\s]*):\\d{1,5})?$";
const URLS = "^[^\\s]+$";

/** One flag: its type, the variable that is its default, its JSON Schema and what a valid value is (the error's words). */
interface Flag {
  type: "string" | "boolean";
  short?: string;
  env?: string;
  fallback?: string;
  schema?: Record<string, unknown>;
  must?: string;
}

const FLAGS = {
  kubeconfig: { type: "string", env: "KUBECONFIG", schema: { minLength: 1 }, must: "a file name" },
  namespace: { type: "string", short: "n", schema: { pattern: NAME, maxLength: 63 }, must: "a namespace name (RFC 1123 label)" },
  "namespace-selector": {
    type: "string",
    env: "GAVEL_NAMESPACE_SELECTOR",
    schema: { minLength: 1, maxLength: 1024 },
    must: "a label selector (e.g. team=a or !gavel.dev/lane)",
  },
  "controller-namespace": {
    type: "string",
    env: "GAVEL_NAMESPACE",
    fallback: "gavel-system",
    schema: { pattern: NAME, maxLength: 63 },
    must: "a namespace name (RFC 1123 label)",
  },
  "log-level": {
    type: "string",
    env: "GAVEL_LOG_LEVEL",
    fallback: "info",
    schema: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] },
    must: "one of fatal, error, warn, info, debug, trace, silent",
  },
  "leader-elect": { type: "boolean" },
  nats: { type: "string", env: "GAVEL_NATS_URL", schema: { pattern: URLS }, must: "a NATS URL" },
  // The credentials Secret mounted (docs/nats.md): keys to mint and revoke worker credentials.
  "nats-creds": { type: "string", env: "GAVEL_NATS_CREDS", schema: { minLength: 1 }, must: "a file name" },
  "nats-keys": { type: "string", env: "GAVEL_NATS_KEYS", schema: { minLength: 1 }, must: "a directory" },
  // Replicas of gavel's streams (tool calls, events, outbox, credential ledger): the chart's nats.streamReplicas.
  "nats-stream-replicas": {
    type: "string",
    env: "GAVEL_NATS_STREAM_REPLICAS",
    schema: { pattern: "^\\s*[1-5]\\s*$" },
    must: "a whole number of replicas from 1 to 5 (JetStream's bound; at most the servers of the NATS cluster)",
  },
  // The URL worker pods reach NATS at, when it is not the controller's own.
  "nats-worker-url": { type: "string", env: "GAVEL_NATS_WORKER_URL", schema: { pattern: URLS }, must: "a NATS URL" },
  runtimes: { type: "string", env: "GAVEL_RUNTIMES", schema: { minLength: 1 }, must: "a file name" },
  launcher: { type: "string", env: "GAVEL_LAUNCHER", schema: { minLength: 1 }, must: "a file name" },
  // Seconds a finished worker or judge pod is kept for `kubectl logs` (the chart's podRetentionSeconds).
  "pod-retention": {
    type: "string",
    env: "GAVEL_POD_RETENTION_SECONDS",
    schema: { pattern: "^\\s*\\d+\\s*$" },
    must: "a whole number of seconds (0 deletes finished pods at once)",
  },
  // Warm judge pods per tool_validation judge at most (the chart's warmJudges.max; an Agent asks for fewer or more by annotation).
  "warm-judges": {
    type: "string",
    env: "GAVEL_WARM_JUDGES_MAX",
    fallback: "4",
    schema: { pattern: "^\\s*\\d{1,3}\\s*$" },
    must: "a whole number of pods (0 keeps no warm judge pods)",
  },
  // An operator's URL told of each tool call that waits for a person (the chart's approvals.webhookUrl).
  "approval-webhook-url": {
    type: "string",
    env: "GAVEL_APPROVAL_WEBHOOK_URL",
    schema: { pattern: "^https?://[^\\s]+$" },
    must: "an http:// or https:// URL",
  },
  // The signing secret's file (the chart's approvals.webhookSecret, mounted): Standard Webhooks signatures (ADR 0082).
  "approval-webhook-secret-file": {
    type: "string",
    env: "GAVEL_APPROVAL_WEBHOOK_SECRET_FILE",
    schema: { minLength: 1 },
    must: "a file name",
  },
  // Seconds decided calls are kept with their arguments for `gavel replay` (ADR 0076); 0 records none.
  "recorded-calls-max-age": {
    type: "string",
    env: "GAVEL_RECORDED_CALLS_MAX_AGE",
    fallback: "86400",
    schema: { pattern: "^\\s*\\d{1,9}\\s*$" },
    must: "a whole number of seconds (0 records no calls)",
  },
  // controller-runtime's flag: /healthz and /readyz (":8081"; "0", the default, serves none).
  "health-probe-bind-address": {
    type: "string",
    env: "GAVEL_HEALTH_PROBE_BIND_ADDRESS",
    fallback: "0",
    schema: { pattern: BIND },
    must: "HOST:PORT or :PORT (0 turns it off)",
  },
  // controller-runtime's flag: /metrics in Prometheus' text format (":8080"; "0", the default, serves none).
  "metrics-bind-address": {
    type: "string",
    env: "GAVEL_METRICS_BIND_ADDRESS",
    fallback: "0",
    schema: { pattern: BIND },
    must: "HOST:PORT or :PORT (0 turns it off)",
  },
  // The web view (`gavel ui`'s pages) under /ui/ on the probe address (the chart's ui.enabled).
  "web-view": { type: "boolean", env: "GAVEL_WEB_VIEW" },
} satisfies Record<string, Flag>;

type FlagName = keyof typeof FLAGS;
type Values = Partial<Record<FlagName, string | boolean>>;

/** The flags' schema: each value's own rule, and the flags that need another. */
const SCHEMA = {
  type: "object",
  properties: Object.fromEntries(Object.entries(FLAGS).map(([name, f]: [string, Flag]) => [name, { type: f.type, ...f.schema }])),
  dependencies: {
    "nats-creds": ["nats"],
    "nats-keys": ["nats"],
    "nats-stream-replicas": ["nats"],
    "approval-webhook-secret-file": ["approval-webhook-url"],
  },
} as const;

const validate = new Ajv({ allErrors: true, strict: true }).compile<Values>(SCHEMA);

/** The flag a schema error is about, named with its variable: `--pod-retention (GAVEL_POD_RETENTION_SECONDS)`. */
function flagName(name: string): string {
  const env = (FLAGS[name as FlagName] as Flag | undefined)?.env;
  return `--${name}${env !== undefined ? ` (${env})` : ""}`;
}

function problem(e: ErrorObject, values: Values): string {
  if (e.keyword === "dependencies") {
    const p = e.params as { property: string; missingProperty: string };
    return `${flagName(p.property)} needs ${flagName(p.missingProperty)}`;
  }
  const name = e.instancePath.slice(1).replace(/~1/g, "/");
  const flag = FLAGS[name as FlagName] as Flag | undefined;
  return `${flagName(name)} must be ${flag?.must ?? e.message ?? "valid"}, got ${JSON.stringify(values[name as FlagName])}`;
}

/** Flags over their variables: the values the schema checks (unset and empty variables are absent). */
function readValues(argv: string[], env: NodeJS.ProcessEnv): Values {
  let parsed: ReturnType<typeof parseArgs>;
  const options = Object.fromEntries(
    Object.entries(FLAGS).map(([name, f]: [string, Flag]) => [
      name,
      { type: f.type, ...(f.short !== undefined ? { short: f.short } : {}) },
    ]),
  );
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options });
  } catch (err) {
    throw new UsageError(messageOf(err));
  }
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument ${parsed.positionals[0] ?? ""}`);
  const values: Values = {};
  for (const [name, f] of Object.entries(FLAGS) as [FlagName, Flag][]) {
    const fromEnv = f.env === undefined || env[f.env] === undefined || env[f.env] === "" ? undefined : (env[f.env] as string);
    const given =
      (parsed.values[name] as string | boolean | undefined) ??
      (f.type === "boolean" ? (fromEnv === undefined ? undefined : fromEnv === "true") : fromEnv) ??
      f.fallback;
    if (given !== undefined) values[name] = given;
  }
  return values;
}

/** The `nats` part of the configuration from its flags' checked values. */
function natsOf(url: string, creds?: string, keys?: string, replicas?: string): NonNullable<ControllerConfig["nats"]> {
  return {
    url,
    ...(creds !== undefined ? { creds } : {}),
    ...(keys !== undefined ? { keys } : {}),
    ...(replicas !== undefined ? { streamReplicas: Number(replicas.trim()) } : {}),
  };
}

/** Reads `gavel controller`'s configuration from its arguments and environment; a UsageError names every bad flag. */
export function controllerConfig(argv: string[], env: NodeJS.ProcessEnv): ControllerConfig {
  const values = readValues(argv, env);
  if (!validate(values)) throw new UsageError((validate.errors ?? []).map((e) => problem(e, values)).join("; "));
  const str = (name: FlagName) => values[name] as string | undefined;
  const bind = (name: FlagName) => {
    try {
      return parseBindAddress(`--${name}`, str(name) ?? "0");
    } catch (err) {
      throw new UsageError(messageOf(err));
    }
  };
  const healthProbe = bind("health-probe-bind-address");
  const metrics = bind("metrics-bind-address");
  if (values["web-view"] === true && healthProbe === undefined)
    throw new UsageError("--web-view needs --health-probe-bind-address: the view is served there, under /ui/");
  if (str("namespace") !== undefined && str("namespace-selector") !== undefined)
    throw new UsageError(
      "--namespace and --namespace-selector (GAVEL_NAMESPACE_SELECTOR) exclude each other: watch one namespace, or those a selector matches",
    );
  const nats = str("nats");
  const optional = <K extends string>(key: K, v: string | undefined) => (v === undefined ? {} : ({ [key]: v } as Record<K, string>));
  return {
    ...optional("kubeconfig", str("kubeconfig")),
    ...optional("namespace", str("namespace")),
    ...optional("namespaceSelector", str("namespace-selector")),
    controllerNamespace: str("controller-namespace") as string,
    logLevel: str("log-level") as string,
    leaderElect: values["leader-elect"] === true,
    ...(nats !== undefined ? { nats: natsOf(nats, str("nats-creds"), str("nats-keys"), str("nats-stream-replicas")) } : {}),
    ...optional("workerNatsUrl", str("nats-worker-url") ?? nats),
    ...optional("runtimes", str("runtimes")),
    ...optional("launcher", str("launcher")),
    ...(str("pod-retention") !== undefined ? { podRetentionSeconds: Number(str("pod-retention")?.trim()) } : {}),
    warmJudges: Number(str("warm-judges")?.trim() ?? "0"),
    recordedCallsMaxAgeSeconds: Number(str("recorded-calls-max-age")?.trim() ?? "0"),
    ...optional("approvalWebhookUrl", str("approval-webhook-url")),
    ...optional("approvalWebhookSecretFile", str("approval-webhook-secret-file")),
    ...(healthProbe !== undefined ? { healthProbe } : {}),
    ...(metrics !== undefined ? { metrics } : {}),
    webView: values["web-view"] === true,
    ...optional("podName", env.GAVEL_POD_NAME === "" ? undefined : env.GAVEL_POD_NAME),
  };
}
