// `gavel controller`: the composition root of the in-cluster parts built so far — Agent
// readiness (the Ready condition) and GuardPolicy hot reload into the guard's policy store.
// It runs until SIGINT/SIGTERM (or the abort signal tests pass in) and then stops cleanly.
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { loadKubeConfig } from "../controller/runtime/kube-config.js";
import { ApiServerCheck } from "../controller/runtime/api-server-check.js";
import { EndpointServer, parseBindAddress, probeRoutes, type Check, type Routes } from "../controller/runtime/health.js";
import { EXPOSITION_CONTENT_TYPE, processMetrics, Registry } from "../telemetry/metrics.js";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { loadRuntimeTable } from "../children/runtime-table.js";
import { AgentReadinessController } from "../controller/agent-readiness.js";
import { executionCredentials, type ExecutionCredentials } from "../controller/execution-credentials.js";
import { readMintingKeys } from "../controller/nats-secrets.js";
import { ExecutionEventPublisher } from "../controller/execution-events.js";
import { gateBlocks, GateSupervisor } from "../controller/cluster-gate.js";
import { ExecutionReconciler } from "../controller/execution-reconciler.js";
import { GuardPolicySource } from "../controller/guard-policy-source.js";
import { PolicyStore } from "../gate/guard/policy-store.js";
import { createLogger } from "../telemetry/logger.js";
import { ExecutionTraces } from "../telemetry/execution-trace.js";
import { tracingFromEnv } from "../telemetry/tracing.js";
import { UsageError, type Command, type CommandIO } from "./command.js";
import { messageOf } from "../errors.js";
import { kubeOf } from "./kube.js";
import { CONTROLLER_UI_BASE, controllerWebView } from "../webui/server.js";

/** A --*-bind-address flag's value, or a UsageError naming the flag. */
function bindAddress(flag: string, value: string | undefined): { host?: string; port: number } | undefined {
  try {
    return parseBindAddress(flag, value ?? "0");
  } catch (err) {
    throw new UsageError(messageOf(err));
  }
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
  usage: "gavel controller [--kubeconfig FILE] [-n NAMESPACE] [--controller-namespace NS] [--leader-elect] [--nats URL [--nats-creds FILE] [--nats-keys DIR] [--nats-worker-url URL]] [--runtimes FILE] [--pod-retention SECONDS] [--health-probe-bind-address ADDR [--web-view]] [--metrics-bind-address ADDR] [--log-level LEVEL]",
  async run(argv: string[], io: CommandIO) {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        kubeconfig: { type: "string", default: io.env.KUBECONFIG },
        namespace: { type: "string", short: "n" },
        "controller-namespace": { type: "string", default: io.env.GAVEL_NAMESPACE ?? "gavel-system" },
        "log-level": { type: "string", default: io.env.GAVEL_LOG_LEVEL ?? "info" },
        "leader-elect": { type: "boolean", default: false },
        nats: { type: "string", default: io.env.GAVEL_NATS_URL },
        "nats-creds": { type: "string", default: io.env.GAVEL_NATS_CREDS },
        // The credentials Secret mounted (docs/nats.md): keys to mint and revoke worker credentials.
        "nats-keys": { type: "string", default: io.env.GAVEL_NATS_KEYS },
        // The URL worker pods reach NATS at, when it is not the controller's own.
        "nats-worker-url": { type: "string", default: io.env.GAVEL_NATS_WORKER_URL },
        runtimes: { type: "string", default: io.env.GAVEL_RUNTIMES },
        // Seconds a finished worker or judge pod is kept for `kubectl logs` (the chart's podRetentionSeconds).
        "pod-retention": { type: "string", default: io.env.GAVEL_POD_RETENTION_SECONDS },
        // controller-runtime's flag: /healthz and /readyz (":8081"; "0", the default, serves none).
        "health-probe-bind-address": { type: "string", default: io.env.GAVEL_HEALTH_PROBE_BIND_ADDRESS ?? "0" },
        // controller-runtime's flag: /metrics in Prometheus' text format (":8080"; "0", the default, serves none).
        "metrics-bind-address": { type: "string", default: io.env.GAVEL_METRICS_BIND_ADDRESS ?? "0" },
        // The web view (`gavel ui`'s pages) under /ui/ on the probe address (the chart's ui.enabled).
        "web-view": { type: "boolean", default: io.env.GAVEL_WEB_VIEW === "true" },
      },
    });
    if (values["nats-creds"] && !values.nats) throw new UsageError("--nats-creds needs --nats URL (or GAVEL_NATS_URL)");
    if (values["nats-keys"] && !values.nats) throw new UsageError("--nats-keys needs --nats URL (or GAVEL_NATS_URL)");
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0] ?? ""}`);
    const retention = values["pod-retention"];
    if (retention !== undefined && !/^\d+$/.test(retention.trim())) throw new UsageError(`--pod-retention must be a whole number of seconds (0 deletes finished pods at once), got ${JSON.stringify(retention)}`);
    const probeAddress = bindAddress("--health-probe-bind-address", values["health-probe-bind-address"]);
    const metricsAddress = bindAddress("--metrics-bind-address", values["metrics-bind-address"]);
    if (values["web-view"] && probeAddress === undefined) throw new UsageError("--web-view needs --health-probe-bind-address: the view is served there, under /ui/");
    // Every component counts into this one registry; /metrics renders it.
    const metrics = new Registry();
    processMetrics(metrics);
    // Listen before starting anything: as PID 1 in a pod, a SIGTERM that arrives while the
    // controllers start would otherwise be ignored until the kubelet's grace period ends.
    const stopping = untilSignal();
    // Language runtimes over the built-in ones (the chart's `runtimes:` values); a bad file stops the start.
    const runtimes = await loadRuntimeTable(values.runtimes).catch((err: unknown) => {
      throw new UsageError(`--runtimes: ${messageOf(err)}`);
    });
    const logger = createLogger({ name: "gavel-controller", level: values["log-level"], destination: io.stderr });
    // Traces when OTEL_EXPORTER_OTLP_ENDPOINT (or another OTEL_* exporter setting) asks for them (chart: tracing.*).
    const tracing = await tracingFromEnv(io.env, { name: "gavel-controller" });
    const traces = tracing === undefined ? undefined : new ExecutionTraces(tracing);
    const kc = loadKubeConfig(values.kubeconfig);
    const namespaces = values.namespace === undefined ? undefined : [values.namespace];

    const store = new PolicyStore();
    const policies = new GuardPolicySource({ kc, store, controllerNamespace: values["controller-namespace"], namespaces, logger, metrics });
    const credsFile = values["nats-creds"];
    const creds = credsFile ? await readFile(credsFile).catch((err: unknown) => {
      throw new UsageError(`--nats-creds ${credsFile}: ${messageOf(err)}`);
    }) : undefined;
    // With --nats every replica also runs the tool-call gate (queue group): workers' calls are
    // decided once across replicas; without it, Executions that need a gate never start.
    const gate = values.nats
      ? new GateSupervisor({
          kc,
          servers: values.nats,
          ...(creds !== undefined ? { creds } : {}),
          policies: store,
          gateId: io.env.GAVEL_POD_NAME ?? `${hostname()}-${process.pid}`,
          onToolCall: (ns, name) => executions.queue.addAfter(`${ns}/${name}`, 1000),
          onAvailabilityChange: () => readiness.requeueAll(),
          logger,
          metrics,
          ...(tracing !== undefined ? { tracing } : {}),
        })
      : undefined;
    const readiness = new AgentReadinessController({
      kc,
      namespace: values.namespace,
      logger,
      enforcement: (agent) => gateBlocks(gate, agent, agent.metadata.namespace ?? "default"),
      metrics,
    });
    // With --leader-elect only the replica holding the Lease runs Executions; losing it ends the process.
    let lostLease: (() => void) | undefined;
    const lost = new Promise<string>((resolve) => (lostLease = () => resolve("lost leader lease")));
    const leaderElection = values["leader-elect"]
      ? { namespace: values["controller-namespace"], identity: io.env.GAVEL_POD_NAME ?? `${hostname()}-${process.pid}`, onLost: () => lostLease?.() }
      : undefined;
    // With --nats every Execution's engine events also go to the durable event stream (`gavel events`).
    let events: ExecutionEventPublisher | undefined;
    if (values.nats) {
      const authenticator = creds !== undefined ? credsAuthenticator(creds) : undefined;
      // Once connected it reconnects forever; a first connect that fails is tried again on the next event.
      events = new ExecutionEventPublisher({
        connect: () => connect({ servers: values.nats, maxReconnectAttempts: -1, reconnectTimeWait: 1000, ...(authenticator !== undefined ? { authenticator } : {}) }),
        logger,
        metrics,
      });
      await events.start();
    }
    // With --nats-keys every Execution's worker pods get their own NATS user (docs/nats.md).
    let credentials: ExecutionCredentials | undefined;
    let isLeader = () => true;
    const keysDir = values["nats-keys"];
    if (values.nats && keysDir) {
      const keys = await readMintingKeys(keysDir).catch((err: unknown) => {
        throw new UsageError(`--nats-keys ${keysDir}: ${messageOf(err)}`);
      });
      if (keys === undefined) logger.warn({ dir: keysDir }, "no account-signing.nk in --nats-keys: worker pods get no NATS credential");
      else {
        const controllerCreds = values["nats-creds"] ? await readFile(values["nats-creds"]) : undefined;
        credentials = executionCredentials({ kc, keys, servers: values.nats, ...(controllerCreds !== undefined ? { controllerCreds } : {}), isLeader: () => isLeader(), logger });
      }
    }
    const natsUrl = values["nats-worker-url"] ?? values.nats;
    const executions: ExecutionReconciler = new ExecutionReconciler({
      kc,
      namespace: values.namespace,
      runtimes,
      ...(retention !== undefined ? { podRetentionSeconds: Number(retention.trim()) } : {}),
      logger,
      metrics,
      ...(leaderElection !== undefined ? { leaderElection } : {}),
      ...(events !== undefined ? { events } : {}),
      ...(credentials !== undefined ? { credentials } : {}),
      ...(natsUrl !== undefined ? { natsUrl } : {}),
      ...(gate !== undefined ? { gate } : {}),
      ...(traces !== undefined ? { traces } : {}),
    });
    isLeader = () => executions.isLeader;

    // /healthz answers while the event loop runs; /readyz once the caches are synced, the API
    // server answers and (with --nats) the gate serves. Up before anything waits on the API.
    const shutdown: { since?: string } = {};
    const apiServer = new ApiServerCheck({ kc });
    const readyChecks: Check[] = [
      { name: "shutdown", check: () => (shutdown.since === undefined ? undefined : `stopping since ${shutdown.since}`) },
      { name: "informers", check: () => [policies, readiness, executions].map((c) => c.unsynced()).filter((w) => w !== undefined).join("; ") || undefined },
      apiServer,
      ...(gate !== undefined ? [{ name: "nats", check: () => gate.unavailable() }] : []),
    ];
    const liveChecks: Check[] = [{ name: "ping", check: () => undefined }];
    apiServer.start();
    const probeRoutesAll: Routes = { ...probeRoutes("healthz", () => liveChecks), ...probeRoutes("livez", () => liveChecks), ...probeRoutes("readyz", () => readyChecks) };
    const metricsRoutes: Routes = { "/metrics": () => ({ status: 200, body: metrics.render(), contentType: EXPOSITION_CONTENT_TYPE }) };
    const servers: EndpointServer[] = [];
    try {
      // One server when both flags name the same address.
      const same = probeAddress !== undefined && metricsAddress !== undefined && probeAddress.host === metricsAddress.host && probeAddress.port === metricsAddress.port && probeAddress.port !== 0;
      for (const [flag, address, routes, what] of [
        ["--health-probe-bind-address", probeAddress, same ? { ...probeRoutesAll, ...metricsRoutes } : probeRoutesAll, same ? "health probes and metrics (/healthz, /readyz, /metrics)" : "health probes (/healthz, /readyz)"],
        ["--metrics-bind-address", same ? undefined : metricsAddress, metricsRoutes, "metrics (/metrics)"],
      ] as const) {
        if (address === undefined) continue;
        const view = values["web-view"] && flag === "--health-probe-bind-address" ? controllerWebView(kubeOf(kc, values.namespace ?? "default"), logger) : undefined;
        const server = await EndpointServer.listen(address, routes, view).catch((err: unknown) => {
          throw new UsageError(`${flag} ${values[flag.slice(2) as "metrics-bind-address"] ?? ""}: ${messageOf(err)}`);
        });
        servers.push(server);
        logger.info({ address: `${server.address.address}:${server.address.port}`, serves: flag.slice(2, -"-bind-address".length) }, `${what} listening`);
        if (view !== undefined) logger.info({ path: CONTROLLER_UI_BASE, port: server.address.port }, "web view listening (read-only; reach it with kubectl port-forward)");
      }
    } catch (err) {
      apiServer.stop();
      await Promise.all(servers.map((s) => s.close()));
      throw err;
    }

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
      logger.info({ namespace: values.namespace ?? "*", controllerNamespace: values["controller-namespace"], eventStream: values.nats !== undefined && values.nats !== "" }, "controllers started");
      io.stdout.write(`gavel controller: running (Agent readiness, GuardPolicy hot reload, Execution reconciler${gate !== undefined ? ", tool-call gate" : ""})\n`);
      signal = await Promise.race([stopping, lost]);
    }
    shutdown.since = new Date().toISOString();
    logger.info({ signal }, "stopping");
    // Stopped while still starting: every start waiting on a first list gives up (a list
    // request in flight finishes on its own; nothing starts after it).
    if (early !== undefined) await Promise.all([readiness.stop(), policies.stop()]);
    await executions.stop();
    await credentials?.stop();
    await gate?.stop();
    await events?.stop();
    if (events !== undefined) logger.info({ events: events.stats }, "event stream");
    await readiness.stop();
    await policies.stop();
    // Spans still open stay unexported: the replica that takes over starts them at its first event of them.
    await tracing?.shutdown().catch((err: unknown) => logger.warn({ err: messageOf(err) }, "exporting traces failed"));
    apiServer.stop();
    await Promise.all(servers.map((s) => s.close()));
    return signal === "lost leader lease" ? 1 : 0;
  },
};
