// A TCP proxy a test can cut and restore: between a process under test and a real server
// (the kube-apiserver, NATS), so that the server becomes unreachable for that process
// alone, the way a network partition looks to it (connections refused, open ones reset).
import { connect, createServer, type Server, type Socket } from "node:net";
import { freePort } from "../../src/transport/nats-server.js";

export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** A proxy on 127.0.0.1:<free port> to `target`; down until up() is called. */
  static async create(target: { host: string; port: number }): Promise<TcpProxy> {
    return new TcpProxy(await freePort(), target);
  }

  /** Accepts connections (each one piped to the target). */
  async up(): Promise<void> {
    if (this.server !== undefined) return;
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => (client.destroy(), upstream.destroy()));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.server = server;
  }

  /** Refuses new connections and resets the open ones. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
