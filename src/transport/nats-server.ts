// Starts a private nats-server with JetStream on a free loopback port, its store in a
// temp dir: what local mode (`gavel run`) talks to, and what the tests use.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface NatsServer {
  url: string;
  port: number;
  /** Path of the server's configuration file (tests that reload config rewrite it). */
  configPath: string;
  /** The server's stderr so far (its last 8 KiB). */
  log(): string;
  stop(): Promise<void>;
}

/** Returns a TCP port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      s.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = tcpConnect(port, "127.0.0.1");
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
  });
}

/**
 * Starts nats-server -js with the given extra config text (and `jetstream`, extra lines of its
 * jetstream block, such as `sync_interval: always`); resolves once it accepts connections.
 */
export async function startNats(opts: { extraConfig?: string; jetstream?: string; binary?: string } = {}): Promise<NatsServer> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-nats-"));
  const port = await freePort();
  const configPath = join(dir, "nats.conf");
  const js = `jetstream { store_dir: "${join(dir, "js")}"${opts.jetstream !== undefined ? `, ${opts.jetstream}` : ""} }`;
  await writeFile(configPath, `listen: 127.0.0.1:${port}\n${js}\n${opts.extraConfig ?? ""}\n`);
  // In its own directory: relative paths of the config (an operator-mode resolver's "jwt") land there.
  const child = spawn(opts.binary ?? "nats-server", ["-c", configPath], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-8192)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killOnExit = () => child.kill("SIGKILL");
  process.on("exit", killOnExit);
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`nats-server did not start on port ${port}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    configPath,
    log: () => log,
    async stop() {
      process.off("exit", killOnExit);
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    },
  };
}
