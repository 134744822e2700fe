// `gavel ui`: the web view of a namespace's Executions and their live trees, served from this
// machine with the user's own kubeconfig (read-only). Pages follow the API server's watch, or
// the event stream when --nats is given.
import { readFile } from "node:fs/promises";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { EventStream } from "../transport/event-stream.js";
import { createLogger } from "../telemetry/logger.js";
import { messageOf } from "../errors.js";
import { UsageError, type Command } from "./command.js";
import { parseFlags } from "./flags.js";
import { connectKube, KUBE_FLAGS } from "../views/kube.js";
import { apiWatchFeed, eventStreamFeed } from "../webui/changes.js";
import { LOOPBACK_HOSTS, UiServer } from "../webui/server.js";

const USAGE = "gavel ui [--addr HOST:PORT] [-n NS] [--kubeconfig FILE] [--context NAME] [--nats URL [--nats-creds FILE]]";

/** HOST:PORT (an IPv6 host in brackets) as --addr takes it. */
export function parseAddr(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  if (m === null || !(port >= 0 && port <= 65535))
    throw new UsageError(`--addr: "${value}" is not HOST:PORT (e.g. 127.0.0.1:8090; port 0 picks a free one)`);
  return { host: m[1] ?? m[2] ?? "", port };
}

/** Resolves on SIGINT or SIGTERM. */
function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

export const uiCommand: Command = {
  name: "ui",
  summary: "serve a live web view of a namespace's Executions (read-only; trees, score bars, judges, tool calls)",
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parseFlags({
      args: argv,
      allowPositionals: true,
      options: {
        ...KUBE_FLAGS,
        addr: { type: "string", default: "127.0.0.1:8090" },
        nats: { type: "string", default: io.env.NATS_URL },
        "nats-creds": { type: "string", default: io.env.NATS_CREDS },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0] ?? ""}`);
    if (values["nats-creds"] && !values.nats) throw new UsageError("--nats-creds needs --nats URL (or NATS_URL)");
    const { host, port } = parseAddr(values.addr);
    const kube = connectKube(values, io);
    const logger = createLogger({ name: "gavel-ui", destination: io.stderr });

    let nc: NatsConnection | undefined;
    let changes = apiWatchFeed(kube, logger);
    if (values.nats) {
      const creds = values["nats-creds"];
      const authenticator = creds
        ? credsAuthenticator(
            await readFile(creds).catch((err: unknown) => {
              throw new UsageError(`--nats-creds ${creds}: ${messageOf(err)}`);
            }),
          )
        : undefined;
      nc = await connect({
        servers: values.nats,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1000,
        ...(authenticator !== undefined ? { authenticator } : {}),
      });
      try {
        changes = eventStreamFeed(await EventStream.existing(nc), logger);
      } catch (err) {
        await nc.close();
        throw new Error(`the event stream on ${values.nats} cannot be read: ${messageOf(err)}`, { cause: err });
      }
    }
    const loopback = LOOPBACK_HOSTS.includes(host);
    const server = await UiServer.listen(host, port, {
      kube,
      namespace: kube.namespace,
      changes,
      logger,
      ...(loopback ? { hosts: LOOPBACK_HOSTS } : {}),
    }).catch((err: unknown) => {
      void nc?.close();
      throw new UsageError(`--addr ${values.addr}: ${messageOf(err)}`);
    });
    io.stdout.write(`gavel ui: namespace ${kube.namespace} at ${server.url} (live from the ${changes.name}; read-only; Ctrl-C stops)\n`);
    await untilSignal();
    await server.close();
    await nc?.close();
    return 0;
  },
};
