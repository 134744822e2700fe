import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startRelay, unixSocketPath, type Relay } from "./socket-relay.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A TCP server that answers every line with "echo: " and the line. */
async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => s.on("data", (d: Buffer) => s.write(`echo: ${d.toString()}`)));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  const addr = server.address();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return { server, port: addr.port };
}

function exchange(endpoint: { path: string } | { host: string; port: number }, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect("path" in endpoint ? { path: endpoint.path } : endpoint);
    s.once("error", reject);
    s.once("data", (d: Buffer) => {
      resolve(d.toString());
      s.end();
    });
    s.write(text);
  });
}

describe("socket relay", () => {
  it("carries bytes both ways over a Unix socket and a loopback port, as a none worker reaches its gate", async () => {
    const { port } = await echoServer();
    const dir = await mkdtemp(join(tmpdir(), "gavel-relay-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // gavel's side: the socket in the mounted directory, relayed to the nats-server port.
    const host: Relay = await startRelay({ path: join(dir, "nats.sock") }, { host: "127.0.0.1", port });
    cleanups.push(() => host.close());
    // The worker's side: a loopback port relayed to the socket.
    const worker = await startRelay({ host: "127.0.0.1", port: 0 }, { path: join(dir, "nats.sock") }, { unref: true });
    cleanups.push(() => worker.close());
    expect("port" in worker.endpoint && worker.endpoint.port).toBeGreaterThan(0);
    expect(await exchange(worker.endpoint, "PING\r\n")).toBe("echo: PING\r\n");
    expect(await exchange(worker.endpoint, "again\r\n")).toBe("echo: again\r\n");
  });

  it("closes the accepted connection when the target cannot be reached", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gavel-relay-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const relay = await startRelay({ host: "127.0.0.1", port: 0 }, { path: join(dir, "absent.sock") });
    cleanups.push(() => relay.close());
    const closed = await new Promise<boolean>((resolve) => {
      const s = connect((relay.endpoint as { host: string; port: number }).port, "127.0.0.1");
      s.once("close", () => resolve(true));
      s.once("error", () => undefined);
    });
    expect(closed).toBe(true);
  });

  it("reads the unix:// form of GAVEL_NATS_URL and nothing else", () => {
    expect(unixSocketPath("unix:///run/gavel-gate/nats.sock")).toBe("/run/gavel-gate/nats.sock");
    expect(unixSocketPath("nats://10.0.0.5:4222")).toBeUndefined();
  });
});
