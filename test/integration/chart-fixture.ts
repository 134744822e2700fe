// The real parts the chart's tests run on: a bare kube-apiserver (the chart installs the CRDs
// and admission policies itself), a namespace for the team, helm with a home of its own, and
// kubectl, including `kubectl auth can-i` as the controller's ServiceAccount.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { run, type ExecResult } from "../harness/exec.js";
import { HELM, KUBECTL, REPO_DIR } from "../harness/paths.js";

export const RELEASE = "gavel";
export const NS = "gavel-system";
export const SA = `system:serviceaccount:${NS}:gavel`;
export const CHART = join(REPO_DIR, "charts", "gavel");
/** The CSI snapshot API group (external-snapshotter's CRDs, not installed here): RBAC still grants on it. */
const SNAPSHOT_GROUP = "snapshot.storage.k8s.io";
export const IMAGE = "gavel/controller:dev";
export const CRDS = ["agents.100monkeys.ai", "executions.100monkeys.ai", "guardpolicies.100monkeys.ai", "toolapprovals.100monkeys.ai"];

/** A Kubernetes object as the chart's tests read one: kind, name, namespace, labels. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

/** Where an access of the ServiceAccount is asked: a namespace (the team's unless named), a subresource, or all namespaces. */
export interface AccessScope {
  ns?: string;
  sub?: string;
  all?: boolean;
}

/** A Ready condition as the controllers write it. */
export interface ReadyCondition {
  status: string;
  reason?: string;
  message?: string;
}

/** The parts, set once the suite's beforeAll has run. */
export interface ChartCluster {
  cp: ControlPlane;
  team: string;
  /** The controller container running now (chart-controller.ts); afterAll removes one a failed test left. */
  container: string | undefined;
  /** helm against this control plane, with its own config, cache and data directories. */
  h: (args: string[]) => Promise<ExecResult>;
  /** kubectl against this control plane. */
  k: (args: string[], stdin?: string) => Promise<ExecResult>;
  /** `kubectl get ... -o json`, parsed; throws with kubectl's stderr. */
  getJson: <T>(args: string[]) => Promise<T>;
  /** `kubectl auth can-i` as the controller's ServiceAccount: true for yes, false for no. */
  canI: (verb: string, resource: string, opts?: AccessScope) => Promise<boolean>;
  /** The Ready condition of an object in the team's namespace; throws while it has none. */
  ready: (kind: string, name: string) => Promise<ReadyCondition>;
}

/**
 * Registers the suite's beforeAll (helm's home, the control plane, the team's namespace) and
 * afterAll; the returned object is filled in by the beforeAll.
 */
export function chartCluster(): ChartCluster {
  let helmHome = "";
  const h = (args: string[]): Promise<ExecResult> =>
    run(HELM, [...args, "--kubeconfig", chart.cp.kubeconfigPath], {
      env: {
        ...process.env,
        HELM_CONFIG_HOME: join(helmHome, "config"),
        HELM_CACHE_HOME: join(helmHome, "cache"),
        HELM_DATA_HOME: join(helmHome, "data"),
      },
    });
  const k = (args: string[], stdin?: string): Promise<ExecResult> =>
    run(KUBECTL, ["--kubeconfig", chart.cp.kubeconfigPath, ...args], stdin === undefined ? {} : { stdin });
  const getJson = async <T>(args: string[]): Promise<T> => {
    const r = await k(["get", ...args, "-o", "json"]);
    if (r.code !== 0) throw new Error(`kubectl get ${args.join(" ")}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };
  const canI = async (verb: string, resource: string, opts: AccessScope = {}): Promise<boolean> => {
    // kubectl resolves a resource through discovery: one of an API this server does not serve
    // (the CSI snapshot CRDs) is asked as a SubjectAccessReview, which RBAC answers all the same.
    if (resource.endsWith(`.${SNAPSHOT_GROUP}`)) return reviewed(verb, SNAPSHOT_GROUP, resource.slice(0, -SNAPSHOT_GROUP.length - 1), opts);
    const args = ["auth", "can-i", verb, resource, `--as=${SA}`];
    if (opts.sub !== undefined) args.push(`--subresource=${opts.sub}`);
    args.push(...(opts.all === true ? ["--all-namespaces"] : ["-n", opts.ns ?? chart.team]));
    const r = await k(args);
    if (r.stdout.trim() !== "yes" && r.stdout.trim() !== "no") throw new Error(`kubectl ${args.join(" ")}: ${r.stdout}${r.stderr}`);
    return r.stdout.trim() === "yes";
  };
  const reviewed = async (verb: string, group: string, resource: string, opts: AccessScope): Promise<boolean> => {
    const review = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: SA,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"],
        resourceAttributes: { verb, group, resource, ...(opts.all === true ? {} : { namespace: opts.ns ?? chart.team }) },
      },
    };
    const r = await k(["create", "-f", "-", "-o", "jsonpath={.status.allowed}"], JSON.stringify(review));
    if (r.code !== 0) throw new Error(`SubjectAccessReview ${verb} ${resource}.${group}: ${r.stderr}`);
    return r.stdout.trim() === "true";
  };
  const ready = async (kind: string, name: string): Promise<ReadyCondition> => {
    const r = await k(["get", kind, name, "-n", chart.team, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")]}']);
    if (r.code !== 0 || r.stdout.trim() === "") throw new Error(`no Ready condition on ${kind}/${name} yet: ${r.stderr}`);
    return JSON.parse(r.stdout) as ReadyCondition;
  };
  const chart = { container: undefined, h, k, getJson, canI, ready } as unknown as ChartCluster;

  beforeAll(async () => {
    helmHome = await mkdtemp(join(tmpdir(), "gavel-helm-"));
    // The chart installs the CRDs and the admission policy itself: a bare control plane.
    chart.cp = await startControlPlane({ installCrds: false });
    chart.team = await chart.cp.createNamespace("team");
  });
  afterAll(async () => {
    if (chart.container !== undefined) await run("docker", ["rm", "-f", chart.container]);
    await chart.cp?.stop();
    if (helmHome) await rm(helmHome, { recursive: true, force: true });
  });

  return chart;
}
