// Which controllers `gavel controller` runs and how they refer to each other: the GuardPolicy
// source feeding the guard's policy store, with --nats the event publisher, the credential
// minting and the tool-call gate, the Agent readiness controller and the Execution reconciler.
import { readFile } from "node:fs/promises";
import type { KubeConfig } from "@kubernetes/client-node";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import type { Agent } from "../api/types.js";
import type { RuntimeTable } from "../children/runtime-table.js";
import { AgentReadinessController } from "../controller/agent-readiness.js";
import { ApprovalWebhook } from "../controller/approval-webhook.js";
import { executionCredentials, type ExecutionCredentials } from "../controller/execution-credentials.js";
import { ExecutionEventPublisher } from "../controller/execution-events.js";
import { ExecutionReconciler, podWorkloadsFor } from "../controller/execution-reconciler.js";
import { requeueUnfinished } from "../controller/gate-availability.js";
import { NO_GATE } from "../controller/gate-guarding.js";
import { GateSupervisor } from "../controller/gate-supervisor.js";
import { GuardPolicySource } from "../controller/guard-policy-source.js";
import { alsoAdmitting, NamespaceScope, ReplicaLeases } from "../controller/runtime.js";
import { readMintingKeys } from "../controller/nats-secrets.js";
import { messageOf } from "../errors.js";
import { PolicyStore } from "../gate/guard.js";
import type { ExecutionTraces } from "../telemetry/execution-trace.js";
import type { Logger } from "../telemetry/logger.js";
import type { Registry } from "../telemetry/metrics.js";
import type { Tracing } from "../telemetry/tracing.js";
import { UsageError } from "./command.js";
import type { ControllerConfig } from "./controller-config.js";

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
async function natsParts(
  config: ControllerConfig,
  kc: KubeConfig,
  logger: Logger,
  metrics: Registry,
  isLeader: () => boolean,
): Promise<NatsParts> {
  const nats = config.nats;
  if (nats === undefined) return {};
  const creds =
    nats.creds === undefined
      ? undefined
      : await readFile(nats.creds).catch((err: unknown) => {
          throw new UsageError(`--nats-creds ${nats.creds ?? ""}: ${messageOf(err)}`);
        });
  const authenticator = creds !== undefined ? credsAuthenticator(creds) : undefined;
  // Once connected it reconnects forever; a first connect that fails is tried again on the next event.
  const events = new ExecutionEventPublisher({
    connect: () =>
      connect({
        servers: nats.url,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1000,
        ...(authenticator !== undefined ? { authenticator } : {}),
      }),
    logger,
    metrics,
    ...(nats.streamReplicas !== undefined ? { streamReplicas: nats.streamReplicas } : {}),
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
  const credentials: ExecutionCredentials = executionCredentials({
    kc,
    keys,
    servers: nats.url,
    ...(creds !== undefined ? { controllerCreds: creds } : {}),
    ...(nats.streamReplicas !== undefined ? { streamReplicas: nats.streamReplicas } : {}),
    isLeader,
    logger,
  });
  return { ...(creds !== undefined ? { creds } : {}), events, credentials };
}

/** What the controllers are built from, made by the command before them. */
export interface ControllerDeps {
  config: ControllerConfig;
  kc: KubeConfig;
  logger: Logger;
  metrics: Registry;
  runtimes: RuntimeTable;
  /** gavel-launch, when it could be read. */
  launcher: Buffer | undefined;
  tracing: Tracing | undefined;
  traces: ExecutionTraces | undefined;
  /** This replica's name: the Lease holder and the gate's id. */
  identity: string;
}

/** The controllers of one replica, built and wired but not started. */
export interface Controllers {
  policies: GuardPolicySource;
  /** This replica's Lease and the live replicas (ADR 0074): started before the policies, stopped after the gate. */
  replicas: ReplicaLeases;
  readiness: AgentReadinessController;
  executions: ExecutionReconciler;
  gate: GateSupervisor | undefined;
  events: ExecutionEventPublisher | undefined;
  credentials: ExecutionCredentials | undefined;
  /** Resolves when this replica loses the leader Lease (--leader-elect). */
  lost: Promise<string>;
  /** The namespaces --namespace-selector matches (ADR 0081): started before the others, stopped after them. */
  scope: NamespaceScope | undefined;
}

/** The approval webhook of --approval-webhook-url (signed with --approval-webhook-secret-file), as the gate's option. */
function approvalWebhookOf(config: ControllerConfig, logger: Logger): { approvalWebhook?: ApprovalWebhook } {
  if (config.approvalWebhookUrl === undefined) return {};
  const secret = config.approvalWebhookSecretFile;
  return {
    approvalWebhook: new ApprovalWebhook({
      url: config.approvalWebhookUrl,
      logger,
      ...(secret !== undefined ? { secretFile: secret } : {}),
    }),
  };
}

/** Builds the controllers and wires them to each other (the gate requeues Executions, the reconciler's leadership gates minting). */
export async function wireControllers(d: ControllerDeps): Promise<Controllers> {
  const { config, kc, logger, metrics, runtimes, launcher, tracing, traces, identity } = d;
  const namespaces = config.namespace === undefined ? undefined : [config.namespace];
  // With --namespace-selector every informer watches all namespaces and keeps the matching ones' objects.
  const scope = config.namespaceSelector === undefined ? undefined : new NamespaceScope({ kc, selector: config.namespaceSelector, logger });
  const inScope = scope === undefined ? {} : { scope };
  // The cluster-default policy is the one in the controller's own namespace, wherever the release is installed.
  const store = new PolicyStore(config.controllerNamespace);
  // Each replica reports in a GuardPolicy's status the generation its guard took in; Agents are
  // Ready once every live replica (by its Lease) has taken in the policies that cover them.
  const replicas = new ReplicaLeases({ kc, namespace: config.controllerNamespace, identity, logger });
  const policies = new GuardPolicySource({
    ...{ kc, store, controllerNamespace: config.controllerNamespace, namespaces, logger, metrics, replicas },
    // The cluster-default policy lives in the controller's namespace, whatever its labels.
    ...(scope === undefined ? {} : { scope: alsoAdmitting(scope, config.controllerNamespace) }),
    onReconciled: () => readiness.requeueAll(),
  });
  replicas.onChange(() => {
    policies.requeueAll();
    readiness.requeueAll();
  });
  // isLeader is the reconciler's, once it exists: credentials are minted by the leader only.
  let isLeader = () => true;
  const { creds, events, credentials } = await natsParts(config, kc, logger, metrics, () => isLeader());
  // With --nats every replica also runs the tool-call gate (queue group): workers' calls are
  // decided once across replicas; without it, Executions that need a gate never start.
  const gate = config.nats
    ? new GateSupervisor({
        ...{ kc, servers: config.nats.url, policies: store, gateId: identity, logger, metrics },
        ...(namespaces !== undefined ? { namespaces } : {}),
        ...inScope,
        ...(creds !== undefined ? { creds } : {}),
        ...(config.nats.streamReplicas !== undefined ? { store: { replicas: config.nats.streamReplicas } } : {}),
        ...(config.recordedCallsMaxAgeSeconds > 0 ? { callLog: { maxAgeSeconds: config.recordedCallsMaxAgeSeconds } } : {}),
        ...approvalWebhookOf(config, logger),
        onToolCall: (ns, name) => executions.queue.addAfter(`${ns}/${name}`, 1000),
        executions: { get: (ns, name) => executions.cache.get(name, ns), on: (handler) => executions.cache.on(handler) },
        // Agents' Ready and unfinished Executions' Guarded condition follow the gate's NATS.
        onAvailabilityChange: () => {
          readiness.requeueAll();
          requeueUnfinished(kc, config.namespace, (key) => executions.queue.add(key), scope).catch((err: unknown) =>
            logger.warn({ err: messageOf(err) }, "requeueing Executions after a change of the gate's NATS failed"),
          );
        },
        ...(tracing !== undefined ? { tracing } : {}),
      })
    : undefined;
  const enforcement = (agent: Agent) => (gate ?? NO_GATE).guarding(agent, agent.metadata.namespace ?? "default").blocked;
  // Policies matter only to Agents whose calls a gate decides.
  const policyLag = (agent: Agent) => {
    const ns = agent.metadata.namespace ?? "default";
    return gate?.guarding(agent, ns).guarded === true ? policies.lagging(ns) : undefined;
  };
  const readiness = new AgentReadinessController({
    ...{ kc, namespace: config.namespace, logger, enforcement, policyLag, metrics, runtimes },
    ...inScope,
  });
  // With --leader-elect only the replica holding the Lease runs Executions; losing it ends the process.
  let lostLease: (() => void) | undefined;
  const lost = new Promise<string>((resolve) => (lostLease = () => resolve("lost leader lease")));
  const leaderElection = config.leaderElect ? { namespace: config.controllerNamespace, identity, onLost: () => lostLease?.() } : undefined;
  const natsUrl = config.workerNatsUrl;
  const retention = config.podRetentionSeconds;
  const pods = podWorkloadsFor(kc, {
    ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
    ...(launcher !== undefined ? { launcher } : {}),
    ...inScope,
    logger,
  });
  const executions: ExecutionReconciler = new ExecutionReconciler({
    ...{ kc, pods, namespace: config.namespace, runtimes, logger, metrics },
    ...inScope,
    ...(retention !== undefined ? { podRetentionSeconds: retention } : {}),
    // A warm pod waits under gavel-launch: without the launcher there are none.
    ...(launcher !== undefined ? { warmJudges: config.warmJudges } : {}),
    ...(leaderElection !== undefined ? { leaderElection } : {}),
    ...(events !== undefined ? { events } : {}),
    ...(credentials !== undefined ? { credentials } : {}),
    ...(natsUrl !== undefined ? { natsUrl } : {}),
    ...(gate !== undefined ? { gate } : {}),
    ...(traces !== undefined ? { traces } : {}),
  });
  isLeader = () => executions.isLeader;
  return { policies, replicas, readiness, executions, gate, events, credentials, lost, scope };
}
