// Test API for the single-node cluster of cluster.sh: brings it up when it is not (the
// call is idempotent and quick when it is) and returns clients for it.
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { run, runOk, type ExecResult } from "./exec.js";
import { GAVEL_CACHE, HARNESS_DIR, KUBECTL } from "./paths.js";

export { eventually, eventuallyGone } from "./eventually.js";

/**
 * The label on every namespace a test makes through `createNamespace`: the e2e global teardown
 * deletes what carries it, so a file that ends without deleting its namespace (or fails before
 * its own clean-up) leaves nothing on the shared cluster for the next run.
 */
export const TEST_NAMESPACE_LABEL = "e2e.gavel.dev/test-namespace";

export interface Cluster {
  kubeconfigPath: string;
  kc: k8s.KubeConfig;
  kubectl(args: string[], opts?: { stdin?: string }): Promise<ExecResult>;
  /** kubectl that must succeed: its stdout, or an error naming the command and its stderr. */
  kubectlOk(args: string[]): Promise<string>;
  createNamespace(prefix: string): Promise<string>;
  deleteNamespace(name: string): Promise<void>;
}

/**
 * Ensures the single-node cluster is up and returns clients for it. In the e2e tier the global
 * setup has brought it up already (GAVEL_CLUSTER_READY), so test files skip cluster.sh up.
 */
export async function useCluster(): Promise<Cluster> {
  if (process.env.GAVEL_CLUSTER_READY !== "1") await runOk(join(HARNESS_DIR, "cluster.sh"), ["up"], { timeoutMs: 900_000 });
  const kubeconfigPath = join(GAVEL_CACHE, "cluster", "kubeconfig");
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    kubeconfigPath,
    kc,
    kubectl: (args, o = {}) => run(KUBECTL, ["--kubeconfig", kubeconfigPath, ...args], { stdin: o.stdin }),
    async kubectlOk(args) {
      const r = await run(KUBECTL, ["--kubeconfig", kubeconfigPath, ...args]);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    },
    async createNamespace(prefix) {
      const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
      await core.createNamespace({ body: { metadata: { name, labels: { [TEST_NAMESPACE_LABEL]: "true" } } } });
      // Pods need the namespace's default service account, made by the controller-manager.
      for (let i = 0; i < 100; i++) {
        try {
          await core.readNamespacedServiceAccount({ name: "default", namespace: name });
          return name;
        } catch {
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      throw new Error(`namespace ${name}: default service account never appeared`);
    },
    async deleteNamespace(name) {
      await run(KUBECTL, ["--kubeconfig", kubeconfigPath, "delete", "namespace", name, "--wait=false"]);
    },
  };
}

/** Deletes every namespace a test made (TEST_NAMESPACE_LABEL) without waiting: their count. */
export async function deleteTestNamespaces(cluster: Cluster): Promise<number> {
  const out = await cluster.kubectlOk(["delete", "namespace", "-l", `${TEST_NAMESPACE_LABEL}=true`, "--wait=false", "-o", "name"]);
  return out.split("\n").filter((l) => l.trim() !== "").length;
}
