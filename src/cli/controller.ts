// `gavel controller`: the composition root of the in-cluster parts built so far — Agent
// readiness (the Ready condition) and GuardPolicy hot reload into the guard's policy store.
// It runs until SIGINT/SIGTERM (or the abort signal tests pass in) and then stops cleanly.
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Agent } from "../api/types.js";
import { ApiServerCheck, type Check, EndpointServer, loadKubeConfig, probeRoutes, type Routes } from "../controller/runtime.js";
import { EXPOSITION_CONTENT_TYPE, processMetrics, Registry } from "../telemetry/metrics.js";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { loadRuntimeTable } from "../children/runtime-table.js";
import { AgentReadinessController } from "../controller/agent-readiness.js";
import { executionCredentials, type ExecutionCredentials } from "../controller/execution-credentials.js";
import { readMintingKeys } from "../controller/nats-secrets.js";
import { ExecutionEventPublisher } from "../controller/execution-events.js";
import { GateSupervisor } from "../controller/gate-supervisor.js";
import { NO_GATE } from "../controller/gate-guarding.js";
import { requeueUnfinished } from "../controller/gate-availability.js";
import { ExecutionReconciler, podWorkloadsFor } from "../controller/execution-reconciler.js";
import { GuardPolicySource } from "../controller/guard-policy-source.js";
import { PolicyStore } from "../gate/guard.js";
import { createLogger, type Logger } from "../telemetry/logger.js";
import { controllerConfig, type ControllerConfig } from "./controller-config.js";
import { ExecutionTraces } from "../telemetry/execution-trace.js";
import { tracingFromEnv, type Tracing } from "../telemetry/tracing.js";
import { UsageError, type Command, type CommandIO } from "./command.js";
import { messageOf } from "../errors.js";
import { fileURLToPath } from "node:url";
import { kubeOf } from "../views/kube.js";
import { CONTROLLER_UI_BASE, controllerWebView } from "../webui/server.js";

/** gavel-launch as `make build` leaves it (dist/bin), beside the compiled CLI (dist/src/cli); the controller image keeps the same layout. */
const DEFAULT_LAUNCHER = fileURLToPath(new URL("../../bin/gavel-launch", import.meta.url));

/** What the controller's endpoints serve. */
interface Endpoints {
  liveChecks: readonly Check[];
  readyChecks: readonly Check[];
  metrics: Registry;
  /** The web view, mounted on the probe address. */
  view: ReturnType<typeof controllerWebView> | undefined;
}

/**
 * Listens on the probe and metrics addresses: /healthz, /livez, /readyz (and the web view) on
 * one, /metrics on the other, or all on one server when both name the same address.
 */
async function listenEndpoints(config: ControllerConfig, e: Endpoints, logger: Logger): Promise<EndpointServer[]> {
  const probe: Routes = { ...probeRoutes("healthz", () => e.liveChecks), ...probeRoutes("livez", () => e.liveChecks), ...probeRoutes("readyz", () => e.readyChecks) };
  const metrics: Routes = { "/metrics": () => ({ status: 200, body: e.metrics.render(), contentType: EXPOSITION_CONTENT_TYPE }) };
  const { healthProbe, metrics: metricsAddress } = config;
  const same = healthProbe !== undefined && metricsAddress !== undefined && healthProbe.host === metricsAddress.host && healthProbe.port === metricsAddress.port && healthProbe.port !== 0;
  const servers: EndpointServer[] = [];
  try {
    for (const [flag, address, routes, what] of [
      ["--health-probe-bind-address", healthProbe, same ? { ...probe, ...metrics } : probe, same ? "health probes and metrics (/healthz, /readyz, /metrics)" : "health probes (/healthz, /readyz)"],
      ["--metrics-bind-address", same ? undefined : metricsAddress, metrics, "metrics (/metrics)"],
    ] as const) {
      if (address === undefined) continue;
      const view = flag === "--health-probe-bind-address" ? e.view : undefined;
      const server = await EndpointServer.listen(address, routes, view).catch((err: unknown) => {
        throw new UsageError(`${flag} ${address.host ?? ""}:${address.port}: ${messageOf(err)}`);
      });
      servers.push(server);
      logger.info({ address: `${server.address.address}:${server.address.port}`, serves: flag.slice(2, -"-bind-address".length) }, `${what} listening`);
      if (view !== undefined) logger.info({ path: CONTROLLER_UI_BASE, port: server.address.port }, "web view listening (read-only; reach it with kubectl port-forward)");
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw err;
  }
  return servers;
}

interface NatsParts {
  creds?: Buffer;
  events?: ExecutionEventPublisher;
  credentials?: ExecutionCredentials;
}

/**
 * The parts that need NATS (--nats): gavel's own credential (--nats-creds), the publisher of
 * every Execution's engine events to the durable event stream (`gavel events`), and with
 * --nats-keys the minting of each Execution's worker credential (docs/nats.md).
 */
async function natsParts(config: ControllerConfig, kc: KubeConfig, logger: Logger, metrics: Registry, isLeader: () => boolean): Promise<NatsParts> {
  const nats = config.nats;
  if (nats === undefined) return {};
  const creds = nats.creds === undefined ? undefined : await readFile(nats.creds).catch((err: unknown) => {
    throw new UsageError(`--nats-creds ${nats.creds ?? ""}: ${messageOf(err)}`);
  });
  const authenticator = creds !== undefined ? credsAuthenticator(creds) : undefined;
  // Once connected it reconnects forever; a first connect that fails is tried again on the next event.
  const events = new ExecutionEventPublisher({
    connect: () => connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 1000, ...(authenticator !== undefined ? { authenticator } : {}) }),
    logger,
    metrics,
  });
  await events.start();
  if (nats.keys === undefined) return { ...(creds !== undefined ? { creds } : {}), events };
  const keys = await readMintingKeys(nats.keys).catch((err: unknown) => {
    throw new UsageError(`--nats-keys ${nats.keys ?? ""}: ${messageOf(err)}`);
  });
  if (keys === undefined) {
    logger.warn({ dir: nats.keys }, "no account-signing.nk in --nats-keys: worker pods get no NATS credential");
    return { ...(creds !== undefined ? { creds } : {}), events };
  }
  const credentials: ExecutionCredentials = executionCredentials({ kc, keys, servers: nats.url, ...(creds !== undefined ? { controllerCreds: creds } : {}), isLeader, logger });
  return { ...(creds !== undefined ? { creds } : {}), events, credentials };
}

/**
 * /healthz answers while the event loop runs; /readyz once the caches are synced, the API
 * server answers and (with --nats) the gate serves. Up before anything waits on the API.
 */
async function serveProbes(
  config: ControllerConfig,
  p: { policies: GuardPolicySource; readiness: AgentReadinessController; executions: ExecutionReconciler; gate: GateSupervisor | undefined; apiServer: ApiServerCheck; shutdown: { since?: string }; metrics: Registry },
  kube: ReturnType<typeof kubeOf>,
  logger: Logger,
): Promise<EndpointServer[]> {
  const { gate, shutdown } = p;
  const readyChecks: Check[] = [
    { name: "shutdown", check: () => (shutdown.since === undefined ? undefined : `stopping since ${shutdown.since}`) },
    { name: "informers", check: () => [p.policies, p.readiness, p.executions].map((c) => c.unsynced()).filter((w) => w !== undefined).join("; ") || undefined },
    p.apiServer,
    ...(gate !== undefined ? [{ name: "nats", check: () => gate.unavailable() }] : []),
  ];
  const liveChecks: Check[] = [{ name: "ping", check: () => undefined }];
  p.apiServer.start();
  try {
    return await listenEndpoints(config, { liveChecks, readyChecks, metrics: p.metrics, view: config.webView ? controllerWebView(kube, logger) : undefined }, logger);
  } catch (err) {
    p.apiServer.stop();
    throw err;
  }
}

/** Everything `gavel controller` started, to stop in order. */
interface Running {
  /** Stopped while still starting: the starts waiting on a first list are stopped first. */
  stillStarting: boolean;
  policies: GuardPolicySource;
  readiness: AgentReadinessController;
  executions: ExecutionReconciler;
  gate: GateSupervisor | undefined;
  events: ExecutionEventPublisher | undefined;
  credentials: ExecutionCredentials | undefined;
  tracing: Tracing | undefined;
  apiServer: ApiServerCheck;
  servers: EndpointServer[];
  logger: Logger;
}

/** Stops what runs: reconciling first, the endpoints last. */
async function stopAll(r: Running): Promise<void> {
  // Stopped while still starting: every start waiting on a first list gives up (a list
  // request in flight finishes on its own; nothing starts after it).
  if (r.stillStarting) await Promise.all([r.readiness.stop(), r.policies.stop()]);
  await r.executions.stop();
  await r.credentials?.stop();
  await r.gate?.stop();
  await r.events?.stop();
  if (r.events !== undefined) r.logger.info({ events: r.events.stats }, "event stream");
  await r.readiness.stop();
  await r.policies.stop();
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

export const controllerCommand: Command = {
  name: "controller",
  summary: "run gavel's controllers against a cluster (Agent Ready condition, GuardPolicy hot reload, Executions on pods)",
  usage: "gavel controller [--kubeconfig FILE] [-n NAMESPACE] [--controller-namespace NS] [--leader-elect] [--nats URL [--nats-creds FILE] [--nats-keys DIR] [--nats-worker-url URL]] [--runtimes FILE] [--launcher FILE] [--pod-retention SECONDS] [--health-probe-bind-address ADDR [--web-view]] [--metrics-bind-address ADDR] [--log-level LEVEL]",
  async run(argv: string[], io: CommandIO) {
    const config = controllerConfig(argv, io.env);
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
    const namespaces = config.namespace === undefined ? undefined : [config.namespace];
    const identity = config.podName ?? `${hostname()}-${process.pid}`;

    const store = new PolicyStore();
    const policies = new GuardPolicySource({ kc, store, controllerNamespace: config.controllerNamespace, namespaces, logger, metrics });
    // isLeader is the reconciler's, once it exists: credentials are minted by the leader only.
    let isLeader = () => true;
    const { creds, events, credentials } = await natsParts(config, kc, logger, metrics, () => isLeader());
    // With --nats every replica also runs the tool-call gate (queue group): workers' calls are
    // decided once across replicas; without it, Executions that need a gate never start.
    const gate = config.nats
      ? new GateSupervisor({
          ...{ kc, servers: config.nats.url, policies: store, gateId: identity, logger, metrics },
          ...(namespaces !== undefined ? { namespaces } : {}),
          ...(creds !== undefined ? { creds } : {}),
          onToolCall: (ns, name) => executions.queue.addAfter(`${ns}/${name}`, 1000),
          executions: (ns, name) => executions.cached(ns, name),
          // Agents' Ready and unfinished Executions' Guarded condition follow the gate's NATS.
          onAvailabilityChange: () => {
            readiness.requeueAll();
            requeueUnfinished(kc, config.namespace, (key) => executions.queue.add(key)).catch((err: unknown) => logger.warn({ err: messageOf(err) }, "requeueing Executions after a change of the gate's NATS failed"));
          },
          ...(tracing !== undefined ? { tracing } : {}),
        })
      : undefined;
    const enforcement = (agent: Agent) => (gate ?? NO_GATE).guarding(agent, agent.metadata.namespace ?? "default").blocked;
    const readiness = new AgentReadinessController({ kc, namespace: config.namespace, logger, enforcement, metrics, runtimes });
    // With --leader-elect only the replica holding the Lease runs Executions; losing it ends the process.
    let lostLease: (() => void) | undefined;
    const lost = new Promise<string>((resolve) => (lostLease = () => resolve("lost leader lease")));
    const leaderElection = config.leaderElect ? { namespace: config.controllerNamespace, identity, onLost: () => lostLease?.() } : undefined;
    const natsUrl = config.workerNatsUrl;
    const retention = config.podRetentionSeconds;
    const pods = podWorkloadsFor(kc, { ...(config.namespace !== undefined ? { namespace: config.namespace } : {}), ...(launcher !== undefined ? { launcher } : {}), logger });
    const executions: ExecutionReconciler = new ExecutionReconciler({
      ...{ kc, pods, namespace: config.namespace, runtimes, logger, metrics },
      ...(retention !== undefined ? { podRetentionSeconds: retention } : {}),
      ...(leaderElection !== undefined ? { leaderElection } : {}),
      ...(events !== undefined ? { events } : {}),
      ...(credentials !== undefined ? { credentials } : {}),
      ...(natsUrl !== undefined ? { natsUrl } : {}),
      ...(gate !== undefined ? { gate } : {}),
      ...(traces !== undefined ? { traces } : {}),
    });
    isLeader = () => executions.isLeader;

    const shutdown: { since?: string } = {};
    const apiServer = new ApiServerCheck({ kc });
    const servers = await serveProbes(config, { policies, readiness, executions, gate, apiServer, shutdown, metrics }, kubeOf(kc, config.namespace ?? "default"), logger);

    // Each start waits for its caches: while the API server cannot be reached they retry with
    // backoff (the controller is not ready meanwhile); a signal then still stops everything.
    const starting = (async () => {
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
      logger.info({ namespace: config.namespace ?? "*", controllerNamespace: config.controllerNamespace, eventStream: config.nats !== undefined }, "controllers started");
      io.stdout.write(`gavel controller: running (Agent readiness, GuardPolicy hot reload, Execution reconciler${gate !== undefined ? ", tool-call gate" : ""})\n`);
      signal = await Promise.race([stopping, lost]);
    }
    shutdown.since = new Date().toISOString();
    logger.info({ signal }, "stopping");
    await stopAll({ stillStarting: early !== undefined, policies, readiness, executions, gate, events, credentials, tracing, apiServer, servers, logger });
    return signal === "lost leader lease" ? 1 : 0;
  },
};
