// How the worker runtime dials the gate's NATS with its own credentials (a worker and the
// in-pod MCP endpoint alike): retried until the iteration's deadline, below its own inbox prefix.
import { readFile } from "node:fs/promises";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { startRelay, unixSocketPath } from "../transport/socket-relay.js";
import { inboxPrefix } from "../transport/subjects.js";
import type { AgentConfig } from "./config.js";
import { connectWithBackoff, logConnectionChanges } from "./gate-connection.js";

/** The server's URL without any user:password in it, for logs and outcomes. */
export function shownUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//");
}

/** Connects to the gate's NATS, retrying a refused connection until `deadlineMs` (GateUnreachableError then). */
export async function connectGate(
  c: AgentConfig,
  deadlineMs: number,
  log: (event: Record<string, unknown>) => void,
): Promise<NatsConnection> {
  const creds = c.nats.creds ?? (c.nats.credsFile !== undefined ? await readFile(c.nats.credsFile, "utf8") : undefined);
  const servers = await natsServers(c.nats.url);
  const url = shownUrl(c.nats.url);
  const nc = await connectWithBackoff(
    (timeout) =>
      connect({
        servers,
        name: `gavel-agent ${c.namespace}/${c.execution}`,
        // The worker may only subscribe below its own inbox prefix.
        inboxPrefix: inboxPrefix(c.namespace, c.execution),
        timeout,
        // A NATS restart (its pod rescheduled) can take longer than the client's default ten
        // reconnect attempts: keep trying; the gate client's deadline bounds the wait.
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1000,
        ...(creds !== undefined ? { authenticator: credsAuthenticator(new TextEncoder().encode(creds)) } : {}),
      }),
    { url, deadlineMs, log },
  );
  logConnectionChanges(nc, url, log);
  return nc;
}

/**
 * The server to dial. A `unix://PATH` URL (local mode, a worker without network) is the gate's
 * socket mounted into the container: the NATS client speaks TCP only, so a loopback port is
 * relayed to it for the life of the process.
 */
async function natsServers(url: string): Promise<string> {
  const path = unixSocketPath(url);
  if (path === undefined) return url;
  const relay = await startRelay({ host: "127.0.0.1", port: 0 }, { path }, { unref: true });
  const at = relay.endpoint as { host: string; port: number };
  return `nats://${at.host}:${at.port}`;
}
