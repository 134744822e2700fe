// A JetStream cluster of real nats-servers on loopback (routes between them, as the chart's
// StatefulSet runs them on a cluster): for the tests of replicated streams and the NATS bench.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { eventually } from "./eventually.js";
import { freePort, startNats, type NatsServer } from "./nats.js";

/** The servers of one JetStream cluster. */
export interface NatsCluster {
  servers: NatsServer[];
  /** Every client URL, comma-separated (what a client is given to fail over between them). */
  urls: string;
  stop(): Promise<void>;
}

/**
 * Starts `size` servers routed to each other and resolves once a stream replicated on all of
 * them can be created (JetStream has its meta leader and every peer). `jetstream` is extra lines of each server's jetstream block.
 */
export async function startNatsCluster(size: number, opts: { jetstream?: string } = {}): Promise<NatsCluster> {
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => `"nats://127.0.0.1:${p}"`).join(", ");
  const servers = await Promise.all(
    routePorts.map((port, i) =>
      startNats({
        ...(opts.jetstream !== undefined ? { jetstream: opts.jetstream } : {}),
        extraConfig: `server_name: n${i}\ncluster { name: gavel-test, listen: "127.0.0.1:${port}", routes: [${routes}] }`,
      }),
    ),
  );
  const cluster: NatsCluster = {
    servers,
    urls: servers.map((s) => s.url).join(","),
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
  const nc = await connect({ servers: cluster.urls });
  try {
    await eventually(() => metaLeader(nc, size), {
      timeoutMs: 30_000,
      everyMs: 200,
      what: `a JetStream meta leader among ${size} servers`,
    });
  } catch (err) {
    await cluster.stop();
    throw err;
  } finally {
    await nc.close();
  }
  return cluster;
}

/** True once a stream replicated on every server can be made (and is removed again). */
async function metaLeader(nc: NatsConnection, size: number): Promise<true | undefined> {
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    await jsm.streams.add({ name: "GAVEL_CLUSTER_PROBE", subjects: ["gavel.cluster-probe"], num_replicas: size });
    await jsm.streams.delete("GAVEL_CLUSTER_PROBE");
    return true;
  } catch {
    return undefined;
  }
}
