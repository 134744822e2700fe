// Test API over control-plane.sh: a real etcd + kube-apiserver (TLS, RBAC, service
// account signing) with gavel's CRDs installed, and clients for it.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { run, runOk, type ExecResult } from "./exec.js";
import { HARNESS_DIR, KUBECTL } from "./paths.js";

export interface ControlPlane {
  /** Its directory: kubeconfig, env, the servers' logs. */
  dir: string;
  /** Path of an admin kubeconfig (client certificate in group system:masters). */
  kubeconfigPath: string;
  kc: k8s.KubeConfig;
  /** Seconds from "start etcd" to "apiserver ready and CRDs established". */
  startupSeconds: number;
  kubectl(args: string[], opts?: { stdin?: string }): Promise<ExecResult>;
  /** Creates a namespace named PREFIX-<random> with its `default` ServiceAccount and returns its name. */
  createNamespace(prefix: string): Promise<string>;
  /** Stops the API server (SIGTERM) and starts it again on the same port and etcd; resolves once it is ready. */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a fresh control plane in a temp dir; stop() kills it and removes the dir. */
export async function startControlPlane(opts: { installCrds?: boolean; env?: Record<string, string> } = {}): Promise<ControlPlane> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-cp-"));
  const env = { ...process.env, ...opts.env, NO_CRDS: opts.installCrds === false ? "1" : "0" };
  await runOk(join(HARNESS_DIR, "control-plane.sh"), ["up", dir], { env });
  const readVars = async () =>
    Object.fromEntries(
      (await readFile(join(dir, "env"), "utf8"))
        .split("\n")
        .filter((l) => l.includes("="))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    ) as Record<string, string>;
  let vars = await readVars();
  const kubeconfigPath = join(dir, "kubeconfig");
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off("exit", killOnExit);
    await run(join(HARNESS_DIR, "control-plane.sh"), ["down", dir]);
    await rm(dir, { recursive: true, force: true });
  };
  // If the test process dies without calling stop(), do not leave servers behind.
  const killOnExit = () => {
    for (const key of ["API_PID", "ETCD_PID"]) {
      const pid = Number(vars[key]);
      if (pid > 0) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
    }
  };
  process.on("exit", killOnExit);
  const kubectl = (args: string[], o: { stdin?: string } = {}) =>
    run(KUBECTL, ["--kubeconfig", kubeconfigPath, ...args], { stdin: o.stdin });
  return {
    dir,
    kubeconfigPath,
    kc,
    startupSeconds: Number(vars.STARTUP_SECONDS ?? "NaN"),
    kubectl,
    async createNamespace(prefix) {
      const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
      const core = kc.makeApiClient(k8s.CoreV1Api);
      await core.createNamespace({ body: { metadata: { name } } });
      // What kube-controller-manager's ServiceAccount controller does (this control plane runs none): pods need it.
      await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: "default" } } });
      return name;
    },
    async restartApiServer() {
      await runOk(join(HARNESS_DIR, "control-plane.sh"), ["restart-apiserver", dir], { env });
      vars = await readVars();
    },
    stop,
  };
}
