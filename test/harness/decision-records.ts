// The tool-call store (JetStream stream GAVEL_DECISIONS) of the chart's own NATS, read from a
// test on the node: every record stored from some moment on, as a consumer sees it, and the
// last record of each call now. What the e2e files that crash the controller or NATS count
// "one decision per call" with (gate-faults, soak): the store's own word, not gavel's counters.
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from "@nats-io/jetstream";
import { DECISION_STREAM, DECISION_SUBJECT_PREFIX, type ToolCallRecord } from "../../src/gate/tool-call.js";
import { token } from "../../src/transport/subjects.js";
import { eventually, type Cluster } from "./cluster.js";
import { RELEASE_NAMESPACE } from "./gavel-chart.js";

/** The chart's NATS server pod (one server: the chart's default). */
const NATS_POD = "gavel-nats-0";
/** The chart's NATS Service: every Ready server. */
const NATS_SERVICE = "gavel-nats";
/** The Secret holding the controller's (gavel's own) NATS credentials. */
const GAVEL_CREDS_SECRET = "gavel-nats-credentials";

/** Every record stored after the watch began, in stream order, with the subject it was stored under. */
export interface RecordWatch {
  records: ToolCallRecord[];
  subjects: string[];
  /** When the server stored each record (ms, the node's clock, which the test shares). */
  storedAt: number[];
  stop(): Promise<void>;
}

/** A test's handle on the chart's NATS: connections with gavel's credentials or a worker's, and the decision stream. */
export interface ChartNats {
  /** nats:// of the NATS pod once it is Ready (waits for it, e.g. after its deletion). */
  url(): Promise<string>;
  /** A connection with `creds` (gavel's by default), closed by close(). */
  dial(creds?: Buffer, opts?: { inboxPrefix?: string }): Promise<NatsConnection>;
  /** Every record stored from now on for the calls of `namespace` (and of `execution` in it, when given), across NATS restarts. */
  watchRecords(namespace: string, execution?: string): Promise<RecordWatch>;
  /** The record each call of one Execution holds now (the last of its subject), by toolCallId. */
  storedRecords(namespace: string, execution: string): Promise<Map<string, ToolCallRecord>>;
  close(): Promise<void>;
}

/** The chart's NATS pod once it is Ready and not being deleted (waits up to 3 min). */
export function natsPodReady(core: k8s.CoreV1Api): Promise<k8s.V1Pod> {
  return eventually(
    async () => {
      const p = await core.readNamespacedPod({ name: NATS_POD, namespace: RELEASE_NAMESPACE }).catch(() => undefined);
      return p?.metadata?.deletionTimestamp === undefined && p?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
        ? p
        : undefined;
    },
    180_000,
    `pod ${NATS_POD} Ready`,
  );
}

/** The chart's NATS of the e2e fixture (gavel-system), reached at its pod's address from the node. */
export async function chartNats(cluster: Cluster): Promise<ChartNats> {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const secret = await core.readNamespacedSecret({ name: GAVEL_CREDS_SECRET, namespace: RELEASE_NAMESPACE });
  const gavelCreds = Buffer.from(secret.data?.["nats.creds"] ?? "", "base64");
  const conns: NatsConnection[] = [];
  const url = async (): Promise<string> => `nats://${(await natsPodReady(core)).status?.podIP ?? ""}:4222`;
  const dial = async (creds = gavelCreds, opts: { inboxPrefix?: string } = {}): Promise<NatsConnection> => {
    const nc = await connect({ servers: await url(), reconnect: false, authenticator: credsAuthenticator(creds), ...opts });
    conns.push(nc);
    return nc;
  };
  return {
    url,
    dial,
    async watchRecords(namespace, execution) {
      const filter = `${DECISION_SUBJECT_PREFIX}.${token(namespace)}.${execution === undefined ? "" : `${token(execution)}.`}>`;
      // Through the Service, reconnecting for as long as it takes: the watch outlives a NATS
      // server's restart (a new pod, a new address) or loss (another server of a cluster), and
      // its ordered consumer resumes after the last record it saw.
      const svc = await core.readNamespacedService({ name: NATS_SERVICE, namespace: RELEASE_NAMESPACE });
      const nc = await connect({
        servers: `nats://${svc.spec?.clusterIP ?? ""}:4222`,
        ignoreClusterUpdates: true,
        reconnect: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        authenticator: credsAuthenticator(gavelCreds),
      });
      conns.push(nc);
      return watchDecisionRecords(nc, filter);
    },
    async storedRecords(namespace, execution) {
      const nc = await dial();
      const jsm = await jetstreamManager(nc);
      const prefix = `${DECISION_SUBJECT_PREFIX}.${token(namespace)}.${token(execution)}.`;
      const info = await jsm.streams.info(DECISION_STREAM, { subjects_filter: `${prefix}>` });
      const out = new Map<string, ToolCallRecord>();
      for (const subject of Object.keys(info.state.subjects ?? {})) {
        const m = await jsm.streams.getMessage(DECISION_STREAM, { last_by_subj: subject });
        // <prefix><run (the Execution's uid)>.<toolCallId>
        if (m !== null) out.set(subject.slice(prefix.length).split(".")[1] ?? "", m.json<ToolCallRecord>());
      }
      await nc.close();
      return out;
    },
    async close() {
      for (const c of conns) await c.close().catch(() => undefined);
    },
  };
}

/** Every record stored on `filter` of the decision stream from now on, on the connection `nc`. */
export async function watchDecisionRecords(nc: NatsConnection, filter: string): Promise<RecordWatch> {
  const consumer = await jetstream(nc).consumers.get(DECISION_STREAM, { filter_subjects: filter, deliver_policy: DeliverPolicy.New });
  const messages: ConsumerMessages = await consumer.consume();
  const watch: RecordWatch = { records: [], subjects: [], storedAt: [], stop: () => Promise.resolve() };
  const done = (async () => {
    for await (const m of messages) {
      watch.records.push(m.json<ToolCallRecord>());
      watch.subjects.push(m.subject);
      watch.storedAt.push(Math.floor(m.info.timestampNanos / 1e6));
    }
  })();
  watch.stop = async () => {
    await messages.close();
    await done;
  };
  return watch;
}
