// The gate for a local worker without network (security.network.mode none): a Unix socket in
// a directory bind-mounted read-only into the worker's container, relayed to the run's own
// nats-server. The container keeps no network interface but loopback, so it reaches the gate
// and nothing else; on a cluster the same promise is kept by a NetworkPolicy (ADR 0021).
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WorkloadMount } from "../runtime/workload.js";
import { startRelay } from "../transport/socket-relay.js";

/** Where the socket's directory appears inside the worker's container. */
export const GATE_SOCKET_DIR = "/run/gavel-gate";

export interface GateSocket {
  /** GAVEL_NATS_URL for the worker: `unix:///run/gavel-gate/nats.sock`. */
  natsUrl: string;
  /** The read-only bind mount of the socket's directory. */
  mount: WorkloadMount;
  close(): Promise<void>;
}

/** Opens the socket, relayed to the nats-server on 127.0.0.1:`natsPort`. */
export async function openGateSocket(natsPort: number): Promise<GateSocket> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-gate-"));
  try {
    // The worker runs as another user: it must reach the directory and connect to the socket.
    await chmod(dir, 0o755);
    const path = join(dir, "nats.sock");
    const relay = await startRelay({ path }, { host: "127.0.0.1", port: natsPort });
    await chmod(path, 0o666);
    return {
      natsUrl: `unix://${GATE_SOCKET_DIR}/nats.sock`,
      mount: { name: "gavel-gate", source: dir, mountPath: GATE_SOCKET_DIR, readOnly: true },
      close: async () => {
        await relay.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
