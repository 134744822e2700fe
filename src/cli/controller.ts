// `gavel controller`: the composition root of the in-cluster parts built so far — Agent
// readiness (the Ready condition) and GuardPolicy hot reload into the guard's policy store.
// It runs until SIGINT/SIGTERM (or the abort signal tests pass in) and then stops cleanly.
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { loadRuntimeTable } from "../children/runtime-table.js";
import type { AgentReadinessController } from "../controller/agent-readiness.js";
import { readWebhookKey } from "../controller/approval-webhook.js";
import type { ExecutionCredentials } from "../controller/execution-credentials.js";
import type { ExecutionEventPublisher } from "../controller/execution-events.js";
import type { ExecutionReconciler } from "../controller/execution-reconciler.js";
import type { GateSupervisor } from "../controller/gate-supervisor.js";
import type { GuardPolicySource } from "../controller/guard-policy-source.js";
import { ApiServerCheck, loadKubeConfig, type EndpointServer, type NamespaceScope, type ReplicaLeases } from "../controller/runtime.js";
import { messageOf } from "../errors.js";
import { ExecutionTraces } from "../telemetry/execution-trace.js";
import { createLogger, type Logger } from "../telemetry/logger.js";
import { processMetrics, Registry } from "../telemetry/metrics.js";
import { tracingFromEnv, type Tracing } from "../telemetry/tracing.js";
import { kubeOf } from "../views/kube.js";
import { UsageError, type Command, type CommandIO } from "./command.js";
import { controllerConfig } from "./controller-config.js";
import { serveProbes } from "./controller-endpoints.js";
import { wireControllers } from "./controller-wiring.js";

/** gavel-launch as `make build` leaves it (dist/bin), beside the compiled CLI (dist/src/cli); the controller image keeps the same layout. */
const DEFAULT_LAUNCHER = fileURLToPath(new URL("../../bin/gavel-launch", import.meta.url));

/** Everything `gavel controller` started, to stop in order. */
interface Running {
  /** Stopped while still starting: the starts waiting on a first list are stopped first. */
  stillStarting: boolean;
  policies: GuardPolicySource;
  replicas: ReplicaLeases;
  readiness: AgentReadinessController;
  executions: ExecutionReconciler;
  gate: GateSupervisor | undefined;
  events: ExecutionEventPublisher | undefined;
  credentials: ExecutionCredentials | undefined;
  scope: NamespaceScope | undefined;
  tracing: Tracing | undefined;
  apiServer: ApiServerCheck;
  servers: EndpointServer[];
  logger: Logger;
}

/** Stops what runs: reconciling first, the endpoints last. */
async function stopAll(r: Running): Promise<void> {
  // Stopped while still starting: every start waiting on a first list gives up (a list
  // request in flight finishes on its own; nothing starts after it).
  if (r.stillStarting) await Promise.all([r.readiness.stop(), r.policies.stop(), r.scope?.stop()]);
  await r.executions.stop();
  await r.credentials?.stop();
  await r.gate?.stop();
  // This replica decides no call any more: the others stop waiting for its reports.
  await r.replicas.stop();
  await r.events?.stop();
  if (r.events !== undefined) r.logger.info({ events: r.events.stats }, "event stream");
  await r.readiness.stop();
  await r.policies.stop();
  await r.scope?.stop();
  // Spans still open stay unexported: the replica that takes over starts them at its first event of them.
  await r.tracing?.shutdown().catch((err: unknown) => r.logger.warn({ err: messageOf(err) }, "exporting traces failed"));
  r.apiServer.stop();
  await Promise.all(r.servers.map((s) => s.close()));
}

/** Resolves on SIGINT or SIGTERM. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const done = (sig: string) => () => resolve(sig);
    process.once("SIGINT", done("SIGINT"));
    process.once("SIGTERM", done("SIGTERM"));
  });
}

/** A signing secret that cannot be read or is malformed stops the start (it would fail every announcement). */
async function checkWebhookSecret(file: string | undefined): Promise<void> {
  if (file === undefined) return;
  await readWebhookKey(file).catch((err: unknown) => {
    throw new UsageError(`--approval-webhook-secret-file: ${messageOf(err)}`);
  });
}

export const controllerCommand: Command = {
  name: "controller",
  summary: "run gavel's controllers against a cluster (Agent Ready condition, GuardPolicy hot reload, Executions on pods)",
  usage:
    "gavel controller [--kubeconfig FILE] [-n NAMESPACE | --namespace-selector SELECTOR] [--controller-namespace NS] [--leader-elect] [--nats URL [--nats-creds FILE] [--nats-keys DIR] [--nats-worker-url URL]] [--runtimes FILE] [--launcher FILE] [--pod-retention SECONDS] [--warm-judges N] [--health-probe-bind-address ADDR [--web-view]] [--metrics-bind-address ADDR] [--approval-webhook-url URL [--approval-webhook-secret-file FILE]] [--log-level LEVEL]",
  async run(argv: string[], io: CommandIO) {
    const config = controllerConfig(argv, io.env);
    await checkWebhookSecret(config.approvalWebhookSecretFile);
    // Every component counts into this one registry; /metrics renders it.
    const metrics = new Registry();
    processMetrics(metrics);
    // Listen before starting anything: as PID 1 in a pod, a SIGTERM that arrives while the
    // controllers start would otherwise be ignored until the kubelet's grace period ends.
    const stopping = untilSignal();
    // Language runtimes over the built-in ones (the chart's `runtimes:` values); a bad file stops the start.
    const runtimes = await loadRuntimeTable(config.runtimes).catch((err: unknown) => {
      throw new UsageError(`--runtimes: ${messageOf(err)}`);
    });
    const logger = createLogger({ name: "gavel-controller", level: config.logLevel, destination: io.stderr });
    const launcherFile = config.launcher ?? DEFAULT_LAUNCHER;
    const launcher = await readFile(launcherFile).catch((err: unknown) => {
      // Without it pods still run; their logs merge stderr into stdout.
      logger.warn({ file: launcherFile, err: messageOf(err) }, "no gavel-launch: worker and judge pod logs merge stderr into stdout");
      return undefined;
    });
    // Traces when OTEL_EXPORTER_OTLP_ENDPOINT (or another OTEL_* exporter setting) asks for them (chart: tracing.*).
    const tracing = await tracingFromEnv(io.env, { name: "gavel-controller" });
    const traces = tracing === undefined ? undefined : new ExecutionTraces(tracing);
    const kc = loadKubeConfig(config.kubeconfig);
    const identity = config.podName ?? `${hostname()}-${process.pid}`;

    const controllers = await wireControllers({
      config,
      kc,
      logger,
      metrics,
      runtimes,
      launcher,
      tracing,
      traces,
      identity,
    });
    const { policies, replicas, readiness, executions, gate, credentials, lost, scope } = controllers;

    const shutdown: { since?: string } = {};
    const apiServer = new ApiServerCheck({ kc });
    const servers = await serveProbes(
      config,
      { policies, readiness, executions, gate, apiServer, shutdown, metrics },
      kubeOf(kc, config.namespace ?? "default"),
      logger,
    );

    // Each start waits for its caches: while the API server cannot be reached they retry with
    // backoff (the controller is not ready meanwhile); a signal then still stops everything.
    const starting = (async () => {
      // The namespaces of --namespace-selector, then its Lease: a replica's reports count while it is seen alive.
      await scope?.start();
      await replicas.start();
      await policies.start();
      // A moment for the gate first, so Agents are not marked unenforceable while it connects.
      gate?.start();
      await gate?.serving(5000).catch(() => undefined);
      await readiness.start();
      await executions.start();
      if (shutdown.since === undefined) credentials?.start();
    })();
    const early = await Promise.race([stopping.then((sig) => ({ sig })), lost.then((sig) => ({ sig })), starting.then(() => undefined)]);
    let signal: string;
    if (early !== undefined) signal = early.sig;
    else {
      logger.info(
        {
          namespace: config.namespace ?? config.namespaceSelector ?? "*",
          controllerNamespace: config.controllerNamespace,
          eventStream: config.nats !== undefined,
        },
        "controllers started",
      );
      io.stdout.write(
        `gavel controller: running (Agent readiness, GuardPolicy hot reload, Execution reconciler${gate !== undefined ? ", tool-call gate" : ""})\n`,
      );
      signal = await Promise.race([stopping, lost]);
    }
    shutdown.since = new Date().toISOString();
    logger.info({ signal }, "stopping");
    await stopAll({ ...controllers, stillStarting: early !== undefined, tracing, apiServer, servers, logger });

    return signal === "lost leader lease" ? 1 : 0;
  },
};
