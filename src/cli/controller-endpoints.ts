// The endpoints of `gavel controller`: /healthz, /livez and /readyz (with the web view) on the
// probe address, /metrics on the metrics address, or all on one server when both name the same.
import { EndpointServer, probeRoutes, type ApiServerCheck, type Check, type Routes } from "../controller/runtime.js";
import type { AgentReadinessController } from "../controller/agent-readiness.js";
import type { ExecutionReconciler } from "../controller/execution-reconciler.js";
import type { GateSupervisor } from "../controller/gate-supervisor.js";
import type { GuardPolicySource } from "../controller/guard-policy-source.js";
import { messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { EXPOSITION_CONTENT_TYPE, type Registry } from "../telemetry/metrics.js";
import type { kubeOf } from "../views/kube.js";
import { CONTROLLER_UI_BASE, controllerWebView } from "../webui/server.js";
import { UsageError } from "./command.js";
import type { ControllerConfig } from "./controller-config.js";

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
  const probe: Routes = {
    ...probeRoutes("healthz", () => e.liveChecks),
    ...probeRoutes("livez", () => e.liveChecks),
    ...probeRoutes("readyz", () => e.readyChecks),
  };
  const metrics: Routes = { "/metrics": () => ({ status: 200, body: e.metrics.render(), contentType: EXPOSITION_CONTENT_TYPE }) };
  const { healthProbe, metrics: metricsAddress } = config;
  const same =
    healthProbe !== undefined &&
    metricsAddress !== undefined &&
    healthProbe.host === metricsAddress.host &&
    healthProbe.port === metricsAddress.port &&
    healthProbe.port !== 0;
  const servers: EndpointServer[] = [];
  try {
    for (const [flag, address, routes, what] of [
      [
        "--health-probe-bind-address",
        healthProbe,
        same ? { ...probe, ...metrics } : probe,
        same ? "health probes and metrics (/healthz, /readyz, /metrics)" : "health probes (/healthz, /readyz)",
      ],
      ["--metrics-bind-address", same ? undefined : metricsAddress, metrics, "metrics (/metrics)"],
    ] as const) {
      if (address === undefined) continue;
      const view = flag === "--health-probe-bind-address" ? e.view : undefined;
      const server = await EndpointServer.listen(address, routes, view).catch((err: unknown) => {
        throw new UsageError(`${flag} ${address.host ?? ""}:${address.port}: ${messageOf(err)}`);
      });
      servers.push(server);
      logger.info(
        { address: `${server.address.address}:${server.address.port}`, serves: flag.slice(2, -"-bind-address".length) },
        `${what} listening`,
      );
      if (view !== undefined)
        logger.info(
          { path: CONTROLLER_UI_BASE, port: server.address.port },
          "web view listening (read-only; reach it with kubectl port-forward)",
        );
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw err;
  }
  return servers;
}

/**
 * Serves the probes and metrics: /healthz answers while the event loop runs; /readyz once the caches are synced, the API
 * server answers and (with --nats) the gate serves. Up before anything waits on the API.
 */
export async function serveProbes(
  config: ControllerConfig,
  p: {
    policies: GuardPolicySource;
    readiness: AgentReadinessController;
    executions: ExecutionReconciler;
    gate: GateSupervisor | undefined;
    apiServer: ApiServerCheck;
    shutdown: { since?: string };
    metrics: Registry;
  },
  kube: ReturnType<typeof kubeOf>,
  logger: Logger,
): Promise<EndpointServer[]> {
  const { gate, shutdown } = p;
  const readyChecks: Check[] = [
    { name: "shutdown", check: () => (shutdown.since === undefined ? undefined : `stopping since ${shutdown.since}`) },
    {
      name: "informers",
      check: () =>
        [p.policies, p.readiness, p.executions]
          .map((c) => c.unsynced())
          .filter((w) => w !== undefined)
          .join("; ") || undefined,
    },
    p.apiServer,
    ...(gate !== undefined ? [{ name: "nats", check: () => gate.unavailable() }] : []),
  ];
  const liveChecks: Check[] = [{ name: "ping", check: () => undefined }];
  p.apiServer.start();
  try {
    return await listenEndpoints(
      config,
      { liveChecks, readyChecks, metrics: p.metrics, view: config.webView ? controllerWebView(kube, logger) : undefined },
      logger,
    );
  } catch (err) {
    p.apiServer.stop();
    throw err;
  }
}
