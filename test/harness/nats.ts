// The tests' NATS: the same launcher local mode uses (src/transport/nats-server.ts), and one
// that pods of the single-node cluster can reach (it listens on the node's address).
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type NatsServer } from "../../src/transport/nats-server.js";
import { eventually } from "./cluster.js";
import { NODE_IP } from "./paths.js";

export { startNats, freePort, type NatsServer } from "../../src/transport/nats-server.js";

/**
 * nats-server -js on NODE_IP, where the chart's controller pod reaches it as
 * nats://NODE_IP:PORT (so does the host); on `port` when given (a restart at the same address).
 */
export async function startNatsForPods(opts: { port?: number; extraConfig?: string } = {}): Promise<NatsServer> {
  const port = opts.port ?? (await freePort());
  const dir = await mkdtemp(join(tmpdir(), "gavel-pod-nats-"));
  const configPath = join(dir, "nats.conf");
  await writeFile(configPath, `listen: ${NODE_IP}:${port}\njetstream { store_dir: "${join(dir, "js")}" }\n${opts.extraConfig ?? ""}\n`);
  const server = spawn("nats-server", ["-c", configPath], { stdio: "ignore" });
  const exited = new Promise((r) => server.once("exit", r));
  const killOnExit = () => server.kill("SIGKILL");
  process.on("exit", killOnExit);
  await eventually(() => new Promise<true | undefined>((resolve) => {
    const sock = tcpConnect(port, NODE_IP);
    sock.once("connect", () => (sock.destroy(), resolve(true)));
    sock.once("error", () => resolve(undefined));
  }), 10_000, `nats-server on ${NODE_IP}:${port}`);
  return {
    url: `nats://${NODE_IP}:${port}`,
    port,
    configPath,
    async stop() {
      process.off("exit", killOnExit);
      server.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
