// examples/kubernetes/rbac.yaml is enough: the Execution reconciler, with leader election,
// runs an Execution (worker, file reader, judge child) on a ServiceAccount token bound to
// that ClusterRole, and nothing is forbidden along the way.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { ExecutionReconciler } from "../../src/controller/execution-reconciler.js";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { runOk } from "../harness/exec.js";
import { BASE_IMAGE, REPO_DIR } from "../harness/paths.js";

const WORKER_IMAGE = "gavel/example-k8s-worker:dev";

describe("the controller's RBAC (examples/kubernetes/rbac.yaml)", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ns: string;
  let dir: string | undefined;
  let reconciler: ExecutionReconciler | undefined;

  beforeAll(async () => {
    await runOk("docker", ["build", "-q", "--build-arg", `BASE_IMAGE=${BASE_IMAGE}`, "-t", WORKER_IMAGE, join(REPO_DIR, "examples", "kubernetes", "worker")], { timeoutMs: 300_000 });
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    ns = await cluster.createNamespace("e2e-rbac");
  }, 900_000);

  afterAll(async () => {
    await reconciler?.stop();
    if (cluster !== undefined && ns !== undefined) await cluster.deleteNamespace(ns);
    await core?.deletePersistentVolume({ name: `${ns}-rbac` }).catch(() => undefined);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("Given only the example ClusterRole, the reconciler runs an Execution to Succeeded without a forbidden call", async () => {
    const kubectl = async (args: string[], stdin?: string) => {
      const r = await cluster.kubectl(args, stdin !== undefined ? { stdin } : {});
      if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    await kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, "examples/kubernetes/rbac.yaml")]);
    await kubectl(["create", "rolebinding", "gavel-controller", "-n", ns, "--clusterrole=gavel-controller", `--serviceaccount=${ns}:gavel-controller`]);
    const token = (await kubectl(["create", "token", "gavel-controller", "-n", ns, "--duration=1h"])).trim();
    const admin = cluster.kc.getCurrentCluster();
    if (admin === null) throw new Error("no current cluster in the admin kubeconfig");
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [admin],
      users: [{ name: "gavel-controller", token }],
      contexts: [{ name: "sa", cluster: admin.name, user: "gavel-controller" }],
      currentContext: "sa",
    });
    // The token is really restricted: secrets are not in the role
    const asController = kc.makeApiClient(k8s.CoreV1Api);
    await expect(asController.listNamespacedSecret({ namespace: ns })).rejects.toMatchObject({ code: 403 });

    await kubectl(["apply", "-n", ns, "-f", join(REPO_DIR, "judges/rule-judge/agent.yaml")]);
    await kubectl(["apply", "-n", ns, "-f", "-"], `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: quick-writer
spec:
  runtime: { image: ${WORKER_IMAGE}, pull_policy: Never }
  security: { network: { mode: none }, resources: { timeout: "120s" } }
  volumes: [{ name: workspace, mount_path: /workspace, size: 64Mi }]
  execution:
    mode: iterative
    max_iterations: 1
    validation:
      - type: exit_code
      - type: json_schema
        target_path: /workspace/report.json
        schema: { type: object, required: [status] }
      - type: semantic
        judge_agent: rule-judge
        criteria: "file_exists: sum.js"
        timeout_seconds: 60
`);
    dir = await mkdtemp(join(tmpdir(), "gavel-rbac-"));
    await chmod(dir, 0o777);
    await core.createPersistentVolume({
      body: {
        metadata: { name: `${ns}-rbac` },
        spec: { capacity: { storage: "64Mi" }, accessModes: ["ReadWriteOnce"], persistentVolumeReclaimPolicy: "Retain", hostPath: { path: dir, type: "Directory" }, claimRef: { namespace: ns, name: "rbac-workspace" } },
      },
    });

    const log: string[] = [];
    reconciler = new ExecutionReconciler({ kc, namespace: ns, log: (l) => log.push(l), leaderElection: { namespace: ns, identity: "rbac-test", retryMs: 300 } });
    await reconciler.start();
    await kubectl(["apply", "-n", ns, "-f", "-"], `
apiVersion: 100monkeys.ai/v1
kind: Execution
metadata:
  name: rbac
spec:
  agentRef: { name: quick-writer }
  input: { correct_first_time: true }
`);
    const api = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
    const ex = await eventually(async () => {
      const got = (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name: "rbac" })) as Execution;
      return got.status?.phase === "Succeeded" || got.status?.phase === "Failed" ? got : undefined;
    }, 180_000, "the Execution to finish").catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${log.filter((l) => /fail|forbidden/i.test(l)).slice(0, 5).join("\n")}`);
    });

    expect(ex.status?.phase, ex.status?.message).toBe("Succeeded");
    expect(ex.status?.iterations?.[0]?.validators?.map((v) => [v.type, v.passed])).toEqual([["exit_code", true], ["json_schema", true], ["semantic", true]]);
    expect(log.filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
    expect(reconciler.stats.errors).toBe(0);
  });
});
