// `gavel controller`'s probes as a real process, against the real kube-apiserver and a real
// NATS with JetStream, each reached through a TCP proxy the test cuts and restores: started
// while neither the API server nor NATS can be reached (the chart's pods start in any order)
// it stays up, /healthz answers and /readyz names the informers, the API server and nats;
// once both are reachable it syncs and is ready; cut again it is not ready (and does not
// exit); NATS cut, /readyz names nats.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/cluster.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { REPO_DIR } from "../harness/paths.js";
import { TcpProxy } from "../harness/tcp-proxy.js";

describe("gavel controller's /healthz and /readyz (real process, kube-apiserver and NATS behind proxies)", () => {
  let cp: ControlPlane;
  let nats: NatsServer;
  let api: TcpProxy;
  let natsProxy: TcpProxy;
  let proc: ChildProcess | undefined;
  let exited: Promise<number | null>;
  let stderr = "";
  let base = "";
  let dir = "";
  let metricsUrl = "";

  const get = async (path: string): Promise<{ status: number; body: string }> => {
    const r = await fetch(`${base}${path}`);
    return { status: r.status, body: await r.text() };
  };
  /** /readyz?verbose once `want(status, body)` holds. */
  const readyz = (want: (r: { status: number; body: string }) => boolean, what: string, ms = 60_000) =>
    eventually(
      async () => {
        const r = await get("/readyz?verbose");
        return want(r) ? r : undefined;
      },
      ms,
      `${what} (controller log: ${stderr.slice(-2000)})`,
    );

  beforeAll(async () => {
    [cp, nats] = await Promise.all([startControlPlane(), startNats()]);
    const ns = await cp.createNamespace("health");
    const kubeconfig = await readFile(cp.kubeconfigPath, "utf8");
    const server = new URL(/server: (\S+)/.exec(kubeconfig)?.[1] ?? "");
    api = await TcpProxy.create({ host: server.hostname, port: Number(server.port) });
    // Down too at the start: the gate and the event stream wait for it.
    natsProxy = await TcpProxy.create({ host: "127.0.0.1", port: nats.port });
    // The API server's certificate names 127.0.0.1: the proxy's address verifies as its own.
    dir = await mkdtemp(join(tmpdir(), "gavel-health-"));
    const proxied = join(dir, "kubeconfig");
    await writeFile(proxied, kubeconfig.replace(/server: \S+/, `server: https://127.0.0.1:${api.port}`));
    // Started while the API server cannot be reached (the proxy is down: connections refused).
    proc = spawn(
      join(REPO_DIR, "bin", "gavel"),
      [
        "controller",
        "--kubeconfig",
        proxied,
        "-n",
        ns,
        "--controller-namespace",
        ns,
        "--nats",
        `nats://127.0.0.1:${natsProxy.port}`,
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--metrics-bind-address",
        "127.0.0.1:0",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    exited = new Promise((resolve) => proc?.once("exit", (code) => resolve(code)));
    proc.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
    const address = (serves: string) =>
      [...stderr.matchAll(/"address":"127\.0\.0\.1:(\d+)","serves":"([a-z-]+)"/g)].find((m) => m[2] === serves)?.[1];
    const port = await eventually(() => address("health-probe"), 20_000, "the probe address in the log");
    base = `http://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.1:${await eventually(() => address("metrics"), 20_000, "the metrics address in the log")}/metrics`;
  }, 120_000);

  afterAll(async () => {
    if (proc && proc.exitCode === null) proc.kill("SIGKILL");
    await Promise.all([api?.down(), natsProxy?.down()]);
    await Promise.all([cp?.stop(), nats?.stop()]);
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it("started while the API server and NATS are unreachable: alive, not ready naming the informers, the API server and nats, no exit", async () => {
    expect(await get("/healthz")).toEqual({ status: 200, body: "ok\n" });
    const r = await readyz(
      (x) => x.body.includes("[-]apiserver failed: GET") && x.body.includes("not listed yet: "),
      "not ready while the API server is unreachable",
    );
    expect(r.status).toBe(500);
    expect(r.body).toMatch(/\[-\]informers failed: guardpolicy: guardpolicy \(.*\) not listed yet: .*ECONNREFUSED/);
    expect(r.body).toContain("[+]shutdown ok");
    expect(r.body).toContain(`[-]nats failed: the tool-call gate cannot reach NATS at nats://127.0.0.1:${natsProxy.port}`);
    // It keeps retrying: a few seconds later it is still running and still says why.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(proc?.exitCode).toBeNull();
    expect(stderr).toContain("first list failed, retrying");
    expect(stderr).not.toContain("controllers started");
    expect(stderr).toContain("event stream not ready yet (retried on use)");
  }, 60_000);

  it("once the API server and then NATS are reachable its caches sync, the gate serves and it is ready", async () => {
    await api.up();
    const waiting = await readyz((x) => x.body.includes("[+]informers ok"), "informers synced while NATS is still down");
    expect(waiting.body).toContain("[-]nats failed: the tool-call gate cannot reach NATS");
    expect(proc?.exitCode).toBeNull();
    // The gate starts once the GuardPolicies are listed, and keeps dialing NATS.
    expect(stderr).toContain("tool-call gate: NATS not reachable yet");
    const t0 = Date.now();
    await natsProxy.up();
    const r = await readyz((x) => x.status === 200, "ready once NATS came up");
    console.log(`ready ${Date.now() - t0} ms after NATS became reachable`);
    expect(stderr).toContain("tool-call gate serving");
    expect(r.body).toBe("[+]shutdown ok\n[+]informers ok\n[+]apiserver ok\n[+]nats ok\nreadyz check passed\n");
    expect(stderr).toContain("controllers started");
    // Its own port, its own content: the runtime's counters under controller-runtime's names.
    const m = await fetch(metricsUrl);
    const text = await m.text();
    expect(m.status).toBe(200);
    expect(text).toMatch(/^controller_runtime_reconcile_total\{controller="guardpolicy",result="success"\} \d+$/m);
    expect(text).toMatch(/^workqueue_depth\{controller="execution",name="execution"\} \d+$/m);
    expect(text).toMatch(/^process_start_time_seconds \d+$/m);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
  }, 90_000);

  it("API server cut while running: not ready naming the API server, alive, ready again once it is back", async () => {
    const t0 = Date.now();
    await api.down();
    const r = await readyz((x) => x.status === 500, "not ready after the API server went away", 40_000);
    console.log(`not ready ${Date.now() - t0} ms after the API server went away`);
    expect(r.body).toContain("[-]apiserver failed: GET https://127.0.0.1:");
    expect(r.body).toContain("[+]informers ok");
    expect(await get("/healthz")).toEqual({ status: 200, body: "ok\n" });
    expect(proc?.exitCode).toBeNull();
    await api.up();
    await readyz((x) => x.status === 200, "ready again after the API server came back", 40_000);
  }, 90_000);

  it("NATS cut: /readyz fails naming nats; ready again once NATS is back", async () => {
    await natsProxy.down();
    const r = await readyz((x) => x.status === 500, "not ready without NATS", 30_000);
    expect(r.body).toMatch(/\[-\]nats failed: the tool-call gate (lost NATS|cannot reach NATS)/);
    expect((await get("/readyz/nats")).status).toBe(500);
    expect((await get("/readyz/apiserver")).status).toBe(200);
    expect(proc?.exitCode).toBeNull();
    await natsProxy.up();
    await readyz((x) => x.status === 200, "ready again with NATS", 30_000);
  }, 90_000);

  it("on SIGTERM it stops cleanly", async () => {
    proc?.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 30_000);
});
