// The tests' NATS: the same launcher local mode uses (src/transport/nats-server.ts), and one
// that pods of the single-node cluster can reach (it listens on the node's address). Both run
// the nats-server test/harness/build-nats.sh builds (the version of the chart's image), or
// Debian's when that has not been built yet.
import { existsSync } from "node:fs";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import type { GavelEvent } from "../../src/api/events.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { freePort, startNats as start, type NatsServer } from "../../src/transport/nats-server.js";
import { eventually } from "./cluster.js";
import { GAVEL_CACHE, NODE_IP } from "./paths.js";

export { freePort, type NatsServer } from "../../src/transport/nats-server.js";

/** Mirrors lib.sh's NATS_VERSION. */
export const NATS_VERSION = "v2.15.2";
const BUILT = join(GAVEL_CACHE, "nats", NATS_VERSION, "bin", "nats-server");
/** The nats-server binary tests run. */
export const NATS_SERVER = existsSync(BUILT) ? BUILT : "nats-server";

/** Starts a nats-server with JetStream on a free loopback port (see src/transport/nats-server.ts). */
export function startNats(opts: { extraConfig?: string; jetstream?: string; binary?: string } = {}): Promise<NatsServer> {
  return start({ binary: NATS_SERVER, ...opts });
}

/**
 * nats-server -js on NODE_IP, where the chart's controller pod reaches it as
 * nats://NODE_IP:PORT (so does the host); on `port` when given (a restart at the same address).
 */
export async function startNatsForPods(opts: { port?: number; extraConfig?: string } = {}): Promise<NatsServer> {
  const port = opts.port ?? (await freePort());
  const dir = await mkdtemp(join(tmpdir(), "gavel-pod-nats-"));
  const configPath = join(dir, "nats.conf");
  await writeFile(configPath, `listen: ${NODE_IP}:${port}\njetstream { store_dir: "${join(dir, "js")}" }\n${opts.extraConfig ?? ""}\n`);
  const server = spawn(NATS_SERVER, ["-c", configPath], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  server.stderr.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-8192)));
  const exited = new Promise((r) => server.once("exit", r));
  const killOnExit = () => server.kill("SIGKILL");
  process.on("exit", killOnExit);
  await eventually(
    () =>
      new Promise<true | undefined>((resolve) => {
        const sock = tcpConnect(port, NODE_IP);
        sock.once("connect", () => (sock.destroy(), resolve(true)));
        sock.once("error", () => resolve(undefined));
      }),
    10_000,
    `nats-server on ${NODE_IP}:${port}`,
  );
  return {
    url: `nats://${NODE_IP}:${port}`,
    port,
    configPath,
    log: () => log,
    async stop() {
      process.off("exit", killOnExit);
      server.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Reads the events of one tree (or a namespace) from the event stream until it is idle. */
export async function readEvents(nc: NatsConnection, namespace: string, root?: string): Promise<GavelEvent[]> {
  const stream = await EventStream.open(nc);
  const out: GavelEvent[] = [];
  for await (const e of stream.read({ namespace, ...(root !== undefined ? { root } : {}), untilIdleMs: 700 })) out.push(e);
  return out;
}

/** A nats-server that can be stopped and started again at the same address with the same JetStream store (a restarted NATS pod). */
export interface RestartableNats {
  url: string;
  port: number;
  /** Starts the server (again); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it the way a deleted pod does (SIGTERM); its store stays. */
  stop(): Promise<void>;
  /** Stops it for good and removes its store. */
  dispose(): Promise<void>;
}

/** A restartable nats-server with JetStream on 127.0.0.1 (started once before it returns); `extraConfig` as startNats. */
export async function restartableNats(opts: { extraConfig?: string } = {}): Promise<RestartableNats> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "gavel-restart-nats-"));
  const configPath = join(dir, "nats.conf");
  await writeFile(configPath, `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(dir, "js")}" }\n${opts.extraConfig ?? ""}\n`);
  let server: ReturnType<typeof spawn> | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  let log = "";
  const killOnExit = () => server?.kill("SIGKILL");
  process.on("exit", killOnExit);
  const up = () =>
    new Promise<true | undefined>((resolve) => {
      const sock = tcpConnect(port, "127.0.0.1");
      sock.once("connect", () => (sock.destroy(), resolve(true)));
      sock.once("error", () => resolve(undefined));
    });
  const nats: RestartableNats = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      // In its own directory: an operator-mode resolver's relative "jwt" dir lands there.
      const child = spawn(NATS_SERVER, ["-c", configPath], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
      child.stderr?.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-8192)));
      exited = new Promise((r) => child.once("exit", r));
      server = child;
      await eventually(up, { timeoutMs: 10_000, everyMs: 50, what: `nats-server on 127.0.0.1:${port} (its log: ${log.slice(-500)})` });
    },
    async stop() {
      server?.kill("SIGTERM");
      await exited;
      server = undefined;
    },
    async dispose() {
      await nats.stop();
      process.off("exit", killOnExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
  await nats.start();
  return nats;
}
