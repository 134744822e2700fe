// The scale harness's cluster: a control plane of its own (control-plane.sh on free ports, in a
// temp dir, so it needs no lock of the shared single-node cluster), kube-scheduler placing pods
// on nodes that kwok simulates, and kwok playing each pod's life (kwok-stages.ts) and serving
// its log on the nodes' kubelet endpoint, as a kubelet does (docs/scale.md).
import { spawn, type ChildProcess } from "node:child_process";
import { openSync, closeSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { startControlPlane, type ControlPlane } from "./control-plane.js";
import { eventually } from "./eventually.js";
import { runOk } from "./exec.js";
import { kwokConfig, type KwokPlay } from "./kwok-stages.js";
import { GAVEL_CACHE, HARNESS_DIR, K8S_BIN } from "./paths.js";

/** lib.sh KWOK_VERSION and KWOK_BIN. */
export const KWOK_VERSION = "v0.8.0";
export const KWOK = join(GAVEL_CACHE, "kwok", KWOK_VERSION, "bin", "kwok");

/** The harness's cluster of simulated nodes. */
export interface KwokCluster {
  cp: ControlPlane;
  /** The API server's own /metrics, as Prometheus reads it. */
  apiMetrics(): Promise<string>;
  stop(): Promise<void>;
}

/** Options of startKwokCluster. */
export interface KwokClusterOptions extends KwokPlay {
  /** Simulated nodes (each takes any number of pods). */
  nodes: number;
}

// The API server reaches kwok's kubelet endpoint (logs) on the node's InternalIP, kwok's
// --node-ip; kwok serves it with the test PKI's kubelet serving certificate (SAN 127.0.0.1).
const KUBELET_IP = "127.0.0.1";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts `file args` with its output appended to `log`; killed with the cluster. */
function daemon(file: string, args: string[], log: string): ChildProcess {
  const fd = openSync(log, "a");
  const child = spawn(file, args, { stdio: ["ignore", fd, fd] });
  closeSync(fd);
  return child;
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => p.once("exit", () => resolve()));
  p.kill("SIGTERM");
  const timer = setTimeout(() => p.kill("SIGKILL"), 5000);
  await gone;
  clearTimeout(timer);
}

/** Builds kwok into the cache when it is missing (test/harness/build-kwok.sh, as `make kwok` does). */
export async function buildKwok(): Promise<void> {
  await runOk(join(HARNESS_DIR, "build-kwok.sh"), [], { timeoutMs: 1_800_000 });
}

/** kube-scheduler against the control plane (as admin), placing every pod on a kwok node. */
function startScheduler(cp: ControlPlane): ChildProcess {
  const kubeconfig = cp.kubeconfigPath;
  return daemon(
    join(K8S_BIN, "kube-scheduler"),
    [
      ...["--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig],
      ...["--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false", "--v=1"],
    ],
    join(cp.dir, "kube-scheduler.log"),
  );
}

/** kwok managing every node, playing `play`, serving logs on KUBELET_IP with the test PKI's kubelet certificate. */
async function startKwok(cp: ControlPlane, play: KwokPlay): Promise<ChildProcess> {
  const config = join(cp.dir, "kwok.yaml");
  await writeFile(config, kwokConfig(play));
  const port = await freePort();
  const pki = join(GAVEL_CACHE, "pki");
  return daemon(
    KWOK,
    [
      ...["--kubeconfig", cp.kubeconfigPath, "--config", config, "--manage-all-nodes", "--cidr", "10.244.0.0/16"],
      ...["--node-ip", KUBELET_IP, "--node-port", String(port), "--server-address", `${KUBELET_IP}:${port}`],
      ...["--tls-cert-file", join(pki, "kubelet-serving.crt"), "--tls-private-key-file", join(pki, "kubelet-serving.key")],
    ],
    join(cp.dir, "kwok.log"),
  );
}

/** Creates `count` nodes for kwok and waits until kwok has made them Ready. */
async function createNodes(cp: ControlPlane, count: number): Promise<void> {
  const core = cp.kc.makeApiClient(k8s.CoreV1Api);
  for (let i = 0; i < count; i++) {
    const name = `kwok-node-${i}`;
    await core.createNode({
      body: {
        metadata: {
          name,
          labels: { type: "kwok", "kubernetes.io/hostname": name },
          annotations: { "kwok.x-k8s.io/node": "fake" },
        },
      },
    });
  }
  await eventually(
    async () => {
      const nodes = (await core.listNode()).items;
      const ready = nodes.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
      return ready.length === count ? true : undefined;
    },
    { timeoutMs: 60_000, what: `${count} kwok nodes Ready (logs in ${cp.dir})` },
  );
  // The API server's admission taints a new node not-ready; on a cluster the node lifecycle
  // controller (kube-controller-manager, which this harness does not run) lifts it once the
  // node is Ready. Lift it as that controller would, or no pod is ever scheduled.
  const untaint = await cp.kubectl(["taint", "nodes", "--all", "node.kubernetes.io/not-ready:NoSchedule-"]);
  if (untaint.code !== 0) throw new Error(`lifting the kwok nodes' not-ready taint: ${untaint.stderr}`);
}

/**
 * Starts the control plane, kube-scheduler and kwok with `nodes` Ready simulated nodes; every
 * pod scheduled there starts at once and exits 0 after `podRunMs`, and serves the log of its
 * PodLogs entry.
 */
export async function startKwokCluster(opts: KwokClusterOptions): Promise<KwokCluster> {
  await buildKwok();
  const cp = await startControlPlane({ env: { KUBELET_ADDRESS_TYPES: "InternalIP" } });
  const procs: ChildProcess[] = [];
  const stop = async () => {
    for (const p of procs.reverse()) await stopProcess(p);
    await cp.stop();
  };
  try {
    procs.push(startScheduler(cp));
    procs.push(await startKwok(cp, opts));
    await createNodes(cp, opts.nodes);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    cp,
    async apiMetrics() {
      const r = await cp.kubectl(["get", "--raw", "/metrics"]);
      if (r.code !== 0) throw new Error(`kube-apiserver /metrics: ${r.stderr}`);
      return r.stdout;
    },
    stop,
  };
}
