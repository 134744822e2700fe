// The Helm chart on the real kube-apiserver: `helm install` creates the CRDs, RBAC, ServiceAccount,
// Deployment and admission policy; impersonation proves the RBAC grants every verb the controller
// needs and nothing else; the controller image runs with the chart's security settings and the
// ServiceAccount's token (Agent Ready, GuardPolicy status, an Execution's status and worker pod); upgrade applies new values; uninstall leaves only the CRDs; and the
// committed manifests/gavel.yaml installs the same objects without helm.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { COPY_SINK_COMMAND, COPY_SOURCE_CONTAINER, copyCommitCommand, copySourceCommand, type WorkspaceCopy } from "../../src/controller/execution-pods.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { freePort } from "../harness/nats.js";
import type { ExecResult } from "../harness/exec.js";
import { HARNESS_DIR, KUBECTL, REPO_DIR } from "../harness/paths.js";
import { eventually } from "../harness/eventually.js";

const RELEASE = "gavel";
const NS = "gavel-system";
const SA = `system:serviceaccount:${NS}:gavel`;
const CHART = join(REPO_DIR, "charts", "gavel");
/** The CSI snapshot API group (external-snapshotter's CRDs, not installed here): RBAC still grants on it. */
const SNAPSHOT_GROUP = "snapshot.storage.k8s.io";
const IMAGE = "gavel/controller:dev";
const CRDS = ["agents.100monkeys.ai", "executions.100monkeys.ai", "guardpolicies.100monkeys.ai"];

/**
 * Runs a command to completion. Unlike exec.ts's run(), stdin is only opened when there is
 * input: ending an unused stdin pipe raced with fast-exiting commands (kubectl auth can-i,
 * docker) and surfaced as an uncaught EPIPE that fails the whole vitest run.
 */
function exec(file: string, args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"], env: opts.env ?? process.env });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    if (child.stdin !== null) {
      // A command that exits without reading its input is judged by its exit code, not by EPIPE.
      child.stdin.on("error", () => undefined);
      child.stdin.end(opts.stdin);
    }
  });
}

/** exec() that throws with the output when the command fails. */
async function execOk(file: string, args: string[]): Promise<string> {
  const r = await exec(file, args);
  if (r.code !== 0) throw new Error(`${file} ${args.join(" ")} exited ${r.code}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

const docker = (args: string[]): Promise<ExecResult> => exec("docker", args);



/** The helm binary exactly where test/harness/build-k8s.sh installs it (lib.sh's HELM_BIN). */
async function helmPath(): Promise<string> {
  const out = await execOk("bash", ["-c", `source "${join(HARNESS_DIR, "lib.sh")}" && printf %s "$HELM_BIN/helm"`]);
  return out.trim();
}

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
}

/** The ClusterRole the controller's code needs: one entry per (group, resource), verbs sorted. */
const EXPECTED_RULES: Record<string, string[]> = {
  "100monkeys.ai/agents": ["get", "list", "watch"],
  "100monkeys.ai/agents/status": ["patch"],
  "100monkeys.ai/guardpolicies": ["get", "list", "watch"],
  "100monkeys.ai/guardpolicies/status": ["patch"],
  "100monkeys.ai/executions": ["create", "get", "list", "watch"],
  "100monkeys.ai/executions/status": ["update"],
  "100monkeys.ai/executions/finalizers": ["update"],
  "/pods": ["create", "delete", "deletecollection", "get", "list", "watch"],
  "/pods/log": ["get"],
  "/pods/exec": ["create", "get"],
  "/configmaps": ["create", "delete", "deletecollection", "get"],
  "/persistentvolumeclaims": ["create", "get"],
  "networking.k8s.io/networkpolicies": ["create"],
  "storage.k8s.io/storageclasses": ["list"],
  "snapshot.storage.k8s.io/volumesnapshotclasses": ["list"],
  "snapshot.storage.k8s.io/volumesnapshots": ["create", "get"],
  "/events": ["create"],
};

/** Flattens rules to "group/resource" → sorted verbs (a pair named twice is merged). */
function flatten(rules: PolicyRule[]): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const r of rules) {
    for (const g of r.apiGroups ?? [""]) {
      for (const res of r.resources ?? []) {
        const set = (out[`${g}/${res}`] ??= new Set());
        for (const v of r.verbs) set.add(v);
      }
    }
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v].sort()]));
}

describe("Helm chart on the real kube-apiserver", () => {
  let cp: ControlPlane;
  let helm: string;
  let helmHome: string;
  let team: string;
  let container: string | undefined;

  const h = (args: string[]): Promise<ExecResult> =>
    exec(helm, [...args, "--kubeconfig", cp.kubeconfigPath], {
      env: {
        ...process.env,
        HELM_CONFIG_HOME: join(helmHome, "config"),
        HELM_CACHE_HOME: join(helmHome, "cache"),
        HELM_DATA_HOME: join(helmHome, "data"),
      },
    });
  const k = (args: string[], stdin?: string): Promise<ExecResult> =>
    exec(KUBECTL, ["--kubeconfig", cp.kubeconfigPath, ...args], stdin === undefined ? {} : { stdin });
  const getJson = async <T>(args: string[]): Promise<T> => {
    const r = await k(["get", ...args, "-o", "json"]);
    if (r.code !== 0) throw new Error(`kubectl get ${args.join(" ")}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };
  /** `kubectl auth can-i` as the controller's ServiceAccount: true for yes, false for no. */
  const canI = async (verb: string, resource: string, opts: { ns?: string; sub?: string; all?: boolean } = {}): Promise<boolean> => {
    // kubectl resolves a resource through discovery: one of an API this server does not serve
    // (the CSI snapshot CRDs) is asked as a SubjectAccessReview, which RBAC answers all the same.
    if (resource.endsWith(`.${SNAPSHOT_GROUP}`)) return reviewed(verb, SNAPSHOT_GROUP, resource.slice(0, -SNAPSHOT_GROUP.length - 1), opts);
    const args = ["auth", "can-i", verb, resource, `--as=${SA}`];
    if (opts.sub !== undefined) args.push(`--subresource=${opts.sub}`);
    args.push(...(opts.all === true ? ["--all-namespaces"] : ["-n", opts.ns ?? team]));
    const r = await k(args);
    if (r.stdout.trim() !== "yes" && r.stdout.trim() !== "no") throw new Error(`kubectl ${args.join(" ")}: ${r.stdout}${r.stderr}`);
    return r.stdout.trim() === "yes";
  };
  const reviewed = async (verb: string, group: string, resource: string, opts: { ns?: string; all?: boolean }): Promise<boolean> => {
    const review = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: SA,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"],
        resourceAttributes: { verb, group, resource, ...(opts.all === true ? {} : { namespace: opts.ns ?? team }) },
      },
    };
    const r = await k(["create", "-f", "-", "-o", "jsonpath={.status.allowed}"], JSON.stringify(review));
    if (r.code !== 0) throw new Error(`SubjectAccessReview ${verb} ${resource}.${group}: ${r.stderr}`);
    return r.stdout.trim() === "true";
  };
  const ready = async (kind: string, name: string): Promise<{ status: string; reason?: string; message?: string }> => {
    const r = await k(["get", kind, name, "-n", team, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")]}']);
    if (r.code !== 0 || r.stdout.trim() === "") throw new Error(`no Ready condition on ${kind}/${name} yet: ${r.stderr}`);
    return JSON.parse(r.stdout) as { status: string; reason?: string; message?: string };
  };

  beforeAll(async () => {
    helm = await helmPath();
    helmHome = await mkdtemp(join(tmpdir(), "gavel-helm-"));
    // The chart installs the CRDs and the admission policy itself: a bare control plane.
    cp = await startControlPlane({ installCrds: false });
    team = await cp.createNamespace("team");
  });
  afterAll(async () => {
    if (container !== undefined) await docker(["rm", "-f", container]);
    await cp?.stop();
    if (helmHome) await rm(helmHome, { recursive: true, force: true });
  });

  it("helm install creates the CRDs, ServiceAccount, RBAC, Deployment and admission policy", async () => {
    const started = Date.now();
    // Without the chart's NATS: this control plane runs no pods (test/e2e runs the chart's NATS on the cluster).
    const r = await h(["install", RELEASE, CHART, "--namespace", NS, "--create-namespace", "--set", "image.tag=dev", "--set", "image.pullPolicy=Never", "--set", "nats.enabled=false"]);
    expect(r.code, r.stderr).toBe(0);
    console.log(`helm install: ${Date.now() - started} ms`);
    expect(r.stdout).toContain("STATUS: deployed");

    const established = await k(["wait", "--for", "condition=established", "--timeout=60s", ...CRDS.map((c) => `crd/${c}`)]);
    expect(established.code, established.stderr).toBe(0);

    const sa = await getJson<K8sObject>(["serviceaccount", "gavel", "-n", NS]);
    expect(sa.metadata.labels?.["app.kubernetes.io/managed-by"]).toBe("Helm");
    const crb = await getJson<{ roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace: string }[] }>(["clusterrolebinding", "gavel"]);
    expect(crb.roleRef).toMatchObject({ kind: "ClusterRole", name: "gavel" });
    expect(crb.subjects).toEqual([{ kind: "ServiceAccount", name: "gavel", namespace: NS }]);
    const rb = await getJson<{ roleRef: { kind: string; name: string } }>(["rolebinding", "gavel-leader-election", "-n", NS]);
    expect(rb.roleRef).toMatchObject({ kind: "Role", name: "gavel-leader-election" });

    interface Deployment {
      spec: {
        replicas: number;
        strategy: { type: string };
        template: {
          spec: {
            serviceAccountName: string;
            securityContext: Record<string, unknown>;
            containers: {
              image: string;
              imagePullPolicy: string;
              args: string[];
              securityContext: Record<string, unknown>;
              resources: unknown;
              ports: unknown[];
              livenessProbe: unknown;
              readinessProbe: unknown;
            }[];
          };
        };
      };
    }
    const dep = await getJson<Deployment>(["deployment", "gavel-controller", "-n", NS]);
    const pod = dep.spec.template.spec;
    expect(dep.spec.replicas).toBe(1);
    expect(dep.spec.strategy.type).toBe("RollingUpdate");
    expect(pod.serviceAccountName).toBe("gavel");
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.containers).toHaveLength(1);
    const c = pod.containers[0];
    expect(c?.image).toBe(IMAGE);
    expect(c?.imagePullPolicy).toBe("Never");
    expect(c?.args).toEqual(["controller", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--leader-elect"]);
    // The kubelet probes the controller's own endpoints: alive while its event loop answers, Ready per /readyz.
    expect(c?.ports).toEqual([
      { name: "health", containerPort: 8081, protocol: "TCP" },
      { name: "metrics", containerPort: 8080, protocol: "TCP" },
    ]);
    expect(c?.livenessProbe).toMatchObject({ httpGet: { path: "/healthz", port: "health" }, periodSeconds: 10, failureThreshold: 3 });
    expect(c?.readinessProbe).toMatchObject({ httpGet: { path: "/readyz", port: "health" }, periodSeconds: 5, failureThreshold: 2 });
    expect(c?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c?.resources).toEqual({ requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "512Mi" } });

    const vap = await getJson<{ spec: { failurePolicy: string; validations: unknown[] } }>(["validatingadmissionpolicy", "agents.100monkeys.ai"]);
    expect(vap.spec.failurePolicy).toBe("Fail");
    expect(vap.spec.validations.length).toBeGreaterThan(10);
    const binding = await getJson<{ spec: { policyName: string; validationActions: string[] } }>(["validatingadmissionpolicybinding", "agents.100monkeys.ai"]);
    expect(binding.spec).toMatchObject({ policyName: "agents.100monkeys.ai", validationActions: ["Deny"] });
  });

  it("the installed CRDs take the reference manifests, and the installed policy refuses a bad Agent", async () => {
    const ref = join(REPO_DIR, "test", "fixtures", "reference");
    // A new CRD's storage answers 429/404 for a moment after it is established.
    await eventually(async () => {
      const r = await k(["apply", "-n", team, "-f", join(ref, "av-01-exit-code.yaml"), "-f", join(ref, "av-05-multi-judge.yaml")]);
      if (r.code !== 0) throw new Error(r.stderr);
      return true;
    });
    const agents = await getJson<{ items: K8sObject[] }>(["agents", "-n", team]);
    expect(agents.items.map((a) => a.metadata.name).sort()).toContain("ref-exit-code");
    expect(agents.items.length).toBeGreaterThanOrEqual(2);

    const bad = "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: bad-validator}\nspec: {execution: {validation: [{type: nope}]}}\n";
    // The server compiles a new policy asynchronously: it is enforced within seconds.
    const refused = await eventually(async () => {
      const r = await k(["apply", "-n", team, "-f", "-"], bad);
      if (r.code === 0) {
        await k(["delete", "agent", "bad-validator", "-n", team]);
        throw new Error("bad Agent accepted: policy not enforced yet");
      }
      return r;
    });
    expect(refused.stderr).toContain("ValidatingAdmissionPolicy 'agents.100monkeys.ai'");
    expect(refused.stderr).toContain("each validator needs type");
  });

  it("the ClusterRole is exactly the verbs the controller needs: no wildcards, no Secrets", async () => {
    const role = await getJson<{ rules: PolicyRule[] }>(["clusterrole", "gavel"]);
    for (const rule of role.rules) {
      for (const field of [rule.apiGroups ?? [], rule.resources ?? [], rule.verbs]) expect(field).not.toContain("*");
    }
    expect(flatten(role.rules)).toEqual(EXPECTED_RULES);
    const lease = await getJson<{ rules: PolicyRule[] }>(["role", "gavel-leader-election", "-n", NS]);
    expect(flatten(lease.rules)).toEqual({ "coordination.k8s.io/leases": ["create", "get", "update"] });
  });

  it("impersonating the ServiceAccount: every needed verb is allowed, everything around it is denied", async () => {
    const allowed: [string, string, { ns?: string; sub?: string; all?: boolean }?][] = [
      ["list", "agents.100monkeys.ai", { all: true }],
      ["watch", "agents.100monkeys.ai", { all: true }],
      ["get", "agents.100monkeys.ai"],
      ["patch", "agents.100monkeys.ai", { sub: "status" }],
      ["list", "guardpolicies.100monkeys.ai", { all: true }],
      ["watch", "guardpolicies.100monkeys.ai"],
      ["get", "guardpolicies.100monkeys.ai", { ns: NS }],
      ["patch", "guardpolicies.100monkeys.ai", { sub: "status" }],
      ...["get", "list", "watch", "create"].map((v): [string, string] => [v, "executions.100monkeys.ai"]),
      ["update", "executions.100monkeys.ai", { sub: "status" }],
      ["update", "executions.100monkeys.ai", { sub: "finalizers" }],
      ...["create", "get", "list", "watch", "delete", "deletecollection"].map((v): [string, string] => [v, "pods"]),
      ["get", "pods", { sub: "log" }],
      ["create", "pods", { sub: "exec" }],
      ["get", "pods", { sub: "exec" }],
      ...["create", "get", "delete", "deletecollection"].map((v): [string, string] => [v, "configmaps"]),
      ["create", "persistentvolumeclaims"],
      ["get", "persistentvolumeclaims"],
      ["create", "networkpolicies.networking.k8s.io"],
      ["list", "storageclasses.storage.k8s.io", { all: true }],
      ["list", "volumesnapshotclasses.snapshot.storage.k8s.io", { all: true }],
      ["create", "volumesnapshots.snapshot.storage.k8s.io"],
      ["get", "volumesnapshots.snapshot.storage.k8s.io"],
      ["create", "events"],
      ...["get", "create", "update"].map((v): [string, string, { ns: string }] => [v, "leases.coordination.k8s.io", { ns: NS }]),
    ];
    const denied: [string, string, { ns?: string; sub?: string; all?: boolean }?][] = [
      ["get", "secrets"],
      ["list", "secrets", { all: true }],
      ["get", "secrets", { ns: NS }],
      ["list", "configmaps"],
      ["watch", "configmaps"],
      ["update", "configmaps"],
      ["create", "pods", { sub: "attach" }],
      ["update", "pods"],
      ["patch", "pods"],
      ["create", "agents.100monkeys.ai"],
      ["update", "agents.100monkeys.ai"],
      ["delete", "agents.100monkeys.ai"],
      ["update", "agents.100monkeys.ai", { sub: "status" }],
      ["create", "guardpolicies.100monkeys.ai"],
      ["delete", "guardpolicies.100monkeys.ai"],
      ["update", "executions.100monkeys.ai"],
      ["patch", "executions.100monkeys.ai"],
      ["delete", "executions.100monkeys.ai"],
      ["patch", "executions.100monkeys.ai", { sub: "status" }],
      ["list", "persistentvolumeclaims"],
      ["delete", "persistentvolumeclaims"],
      ["create", "persistentvolumes", { all: true }],
      ["delete", "networkpolicies.networking.k8s.io"],
      ["create", "storageclasses.storage.k8s.io", { all: true }],
      ["create", "volumesnapshotclasses.snapshot.storage.k8s.io", { all: true }],
      ["delete", "volumesnapshots.snapshot.storage.k8s.io"],
      ["list", "volumesnapshots.snapshot.storage.k8s.io", { all: true }],
      ["patch", "events"],
      ["list", "events"],
      ["create", "events.events.k8s.io"],
      ["get", "leases.coordination.k8s.io"],
      ["delete", "leases.coordination.k8s.io", { ns: NS }],
      ["create", "serviceaccounts", { sub: "token", ns: NS }],
      ["create", "namespaces", { all: true }],
      ["list", "nodes", { all: true }],
      ["update", "customresourcedefinitions.apiextensions.k8s.io", { all: true }],
      ["bind", "clusterroles.rbac.authorization.k8s.io", { all: true }],
      ["escalate", "clusterroles.rbac.authorization.k8s.io", { all: true }],
      ["delete", "validatingadmissionpolicies.admissionregistration.k8s.io", { all: true }],
      ["*", "*", { all: true }],
    ];
    const label = (v: string, r: string, o: { ns?: string; sub?: string; all?: boolean } = {}) =>
      `${v} ${r}${o.sub !== undefined ? `/${o.sub}` : ""} in ${o.all === true ? "*" : (o.ns ?? "team")}`;
    const wrong: string[] = [];
    for (const [v, r, o] of allowed) if (!(await canI(v, r, o))) wrong.push(`denied but needed: ${label(v, r, o)}`);
    for (const [v, r, o] of denied) if (await canI(v, r, o)) wrong.push(`allowed but not needed: ${label(v, r, o)}`);
    expect(wrong).toEqual([]);
    console.log(`can-i: ${allowed.length} allowed, ${denied.length} denied as expected`);
  });

  it("the controller's pods/exec passes admission only for the workspace copy's tar and commit (the controller-exec policy), others' exec is not touched", async () => {
    // No kubelet here: an exec admitted fails later (the pod has no node), one refused names the policy.
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "gavel-w-i1-ex" }, spec: { containers: [{ name: "main", image: "x" }, { name: COPY_SOURCE_CONTAINER, image: "x" }] } };
    expect((await k(["apply", "-n", team, "-f", "-"], JSON.stringify(pod))).code).toBe(0);
    const execAs = async (as: string | undefined, container: string, command: string[]): Promise<string> => {
      const r = await k(["exec", "-n", team, "gavel-w-i1-ex", "-c", container, ...(as !== undefined ? [`--as=${as}`] : []), "--", ...command]);
      return r.stderr;
    };
    const POLICY = "ValidatingAdmissionPolicy 'gavel-controller-exec'";
    expect(await execAs(SA, "main", ["ls", "/"])).toContain(POLICY);
    expect(await execAs(SA, COPY_SOURCE_CONTAINER, ["sh", "-c", "cat /etc/shadow"])).toContain(POLICY);
    expect(await execAs(SA, COPY_SOURCE_CONTAINER, copySourceCommand([{ volume: { name: "workspace", mount_path: "/w" } } as WorkspaceCopy]))).not.toContain(POLICY);
    expect(await execAs(SA, COPY_SOURCE_CONTAINER, [...copySourceCommand([]), "-exec"])).toContain(POLICY);
    // A copier (*-copy-ex): its tar x and the copy's commit with a code, nothing else (ADR 0044).
    const copier = { ...pod, metadata: { name: "gavel-w-i1-t1-j-copy-ex" } };
    expect((await k(["apply", "-n", team, "-f", "-"], JSON.stringify(copier))).code).toBe(0);
    const inCopier = async (command: string[]): Promise<string> => (await k(["exec", "-n", team, copier.metadata.name, "-c", "main", `--as=${SA}`, "--", ...command])).stderr;
    expect(await inCopier(COPY_SINK_COMMAND)).not.toContain(POLICY);
    expect(await inCopier(copyCommitCommand(2))).not.toContain(POLICY);
    expect(await inCopier([...copyCommitCommand(0).slice(0, 4), "0; rm -rf /"])).toContain(POLICY);
    expect(await inCopier(["sh", "-c", "cat /tmp/copied"])).toContain(POLICY);
    expect(await execAs(SA, "main", copyCommitCommand(0))).toContain(POLICY);
    // The admin's own exec is not the policy's business.
    expect(await execAs(undefined, "main", ["ls", "/"])).not.toContain(POLICY);
  });

  /**
   * Runs the controller image as the kubelet would run the installed Deployment's pod: its
   * image, args, env, user, read-only root, dropped capabilities and /tmp, with the
   * ServiceAccount's token, the CA and the namespace mounted where client-node looks in a pod.
   * Calls `body` while it runs, then stops it with SIGTERM; returns its log and exit code.
   */
  const withController = async (body: (metricsUrl: string) => Promise<void>): Promise<{ text: string; exit: string; stopMs: number }> => {
    const inspect = await docker(["image", "inspect", IMAGE]);
    expect(inspect.code, `${IMAGE} is missing: run make images (test/harness/images.sh)`).toBe(0);

    interface Container {
      image: string;
      args: string[];
      env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
      securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
      volumeMounts: { name: string; mountPath: string }[];
      readinessProbe: { httpGet: { path: string; port: string } };
    }
    const dep = await getJson<{ spec: { template: { spec: { securityContext: { runAsUser: number; runAsGroup: number }; containers: Container[] } } } }>([
      "deployment",
      "gavel-controller",
      "-n",
      NS,
    ]);
    const pod = dep.spec.template.spec;
    const c = pod.containers[0];
    if (c === undefined) throw new Error("no container in the Deployment");

    // What the kubelet would mount: the ServiceAccount's token, the cluster CA and the namespace.
    const sa = await mkdtemp(join(tmpdir(), "gavel-sa-"));
    const tok = await k(["create", "token", "gavel", "-n", NS, "--duration", "1h"]);
    expect(tok.code, tok.stderr).toBe(0);
    const caFile = cp.kc.getCurrentCluster()?.caFile;
    const server = new URL(cp.kc.getCurrentCluster()?.server ?? "");
    if (caFile === undefined) throw new Error("the harness kubeconfig has no certificate-authority file");
    await writeFile(join(sa, "token"), tok.stdout.trim());
    await writeFile(join(sa, "ca.crt"), await readFile(caFile));
    await writeFile(join(sa, "namespace"), NS);
    await chmod(sa, 0o755);
    for (const f of ["token", "ca.crt", "namespace"]) await chmod(join(sa, f), 0o644);

    const name = `gavel-chart-${randomBytes(3).toString("hex")}`;
    container = name;
    const env = c.env.flatMap((e) => {
      if (e.valueFrom?.fieldRef?.fieldPath === "metadata.namespace") return ["-e", `${e.name}=${NS}`];
      if (e.valueFrom?.fieldRef?.fieldPath === "metadata.name") return ["-e", `${e.name}=${name}`];
      if (e.value !== undefined) return ["-e", `${e.name}=${e.value}`];
      throw new Error(`env ${e.name}: the test cannot translate its source`);
    });
    // On the host's network the chart's ports may be taken: the same flags, free ports.
    const probePort = await freePort();
    const metricsPort = await freePort();
    const probeArg = "--health-probe-bind-address=";
    const metricsArg = "--metrics-bind-address=";
    const args = [
      "run",
      "-d",
      "--name",
      name,
      "--network",
      "host",
      "--user",
      `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`,
      ...(c.securityContext.readOnlyRootFilesystem ? ["--read-only"] : []),
      ...(c.securityContext.allowPrivilegeEscalation ? [] : ["--security-opt", "no-new-privileges"]),
      ...c.securityContext.capabilities.drop.flatMap((cap) => ["--cap-drop", cap]),
      ...c.volumeMounts.filter((m) => m.name === "tmp").flatMap((m) => ["--tmpfs", m.mountPath]),
      "-v",
      `${sa}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
      "-e",
      `KUBERNETES_SERVICE_HOST=${server.hostname}`,
      "-e",
      `KUBERNETES_SERVICE_PORT=${server.port}`,
      ...env,
      c.image,
      ...c.args.map((a) => (a.startsWith(probeArg) ? `${probeArg}127.0.0.1:${probePort}` : a.startsWith(metricsArg) ? `${metricsArg}127.0.0.1:${metricsPort}` : a)),
    ];
    const started = await docker(args);
    expect(started.code, started.stderr).toBe(0);

    // Failures inside are reported with the controller's log, after the container is stopped.
    let failure: unknown;
    try {
      // Ready by the Deployment's own readinessProbe before anything is asked of it.
      const probe = `http://127.0.0.1:${probePort}${c.readinessProbe.httpGet.path}`;
      await eventually(async () => {
        const r = await fetch(probe);
        if (r.status !== 200) throw new Error(`${probe}: ${r.status} ${await r.text()}`);
        return true;
      }, 60_000);
      await body(`http://127.0.0.1:${metricsPort}/metrics`);
    } catch (err) {
      failure = err;
    }
    // SIGTERM, as the kubelet sends it: the controller should stop cleanly with exit code 0.
    const t1 = Date.now();
    await docker(["stop", "-t", "20", name]);
    const stopMs = Date.now() - t1;
    const exit = (await docker(["inspect", "-f", "{{.State.ExitCode}}", name])).stdout.trim();
    const logs = await docker(["logs", name]);
    const text = logs.stdout + logs.stderr;
    await docker(["rm", "-f", name]);
    container = undefined;
    await rm(sa, { recursive: true, force: true });
    if (failure !== undefined) throw new Error(`${failure instanceof Error ? failure.message : JSON.stringify(failure)}\ncontroller log:\n${text}`, { cause: failure });
    expect(text).toContain("controllers started");
    expect(text.toLowerCase(), text).not.toContain("forbidden");
    expect(exit, `exit code after SIGTERM; log:\n${text}`).toBe("0");
    return { text, exit, stopMs };
  };

  it("the controller image runs with the Deployment's security settings and the ServiceAccount's token, and reconciles Agents, GuardPolicies and an Execution", async () => {
    let reconciledMs = NaN;
    const { exit, stopMs } = await withController(async (metricsUrl) => {
      const worker =
        "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: writer}\nspec:\n  task: {instruction: Write a summary.}\n" +
        "  execution:\n    mode: iterative\n    validation:\n      - type: semantic\n        judge_agent: summary-judge\n        criteria: Is the summary faithful?\n";
      const judge =
        "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: summary-judge, labels: {role: judge}}\nspec:\n  task: {instruction: Judge.}\n  execution: {mode: one-shot}\n";
      const policy = "apiVersion: 100monkeys.ai/v1\nkind: GuardPolicy\nmetadata: {name: team-policy}\nspec:\n  revoked_tools:\n    - {tool: net.fetch, reason: exfiltration risk}\n";
      const applied = await k(["apply", "-n", team, "-f", "-"], worker + "---\n" + judge + "---\n" + policy);
      expect(applied.code, applied.stderr).toBe(0);
      const t0 = Date.now();
      await eventually(async () => {
        const w = await ready("agent", "writer");
        if (w.status !== "True") throw new Error(`writer Ready=${w.status}: ${w.message ?? ""}`);
        const p = await ready("guardpolicy", "team-policy");
        if (p.status !== "True") throw new Error(`team-policy Ready=${p.status}`);
        return true;
      }, 60_000);
      reconciledMs = Date.now() - t0;
      // The Execution reconciler, as the same ServiceAccount: it writes the status and creates the
      // first iteration's worker pod (which stays Pending: this control plane has no kubelet).
      const run1 = "apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: {name: run-1}\nspec:\n  agentRef: {name: writer}\n";
      const created = await k(["apply", "-n", team, "-f", "-"], run1);
      expect(created.code, created.stderr).toBe(0);
      await eventually(async () => {
        const phase = await k(["get", "execution", "run-1", "-n", team, "-o", "jsonpath={.status.phase}"]);
        if (phase.stdout.trim() === "") throw new Error("no status.phase on run-1 yet");
        const pods = await k(["get", "pods", "-n", team, "-l", "gavel.dev/execution=run-1", "-o", "name"]);
        if (pods.stdout.trim() === "") throw new Error(`no worker pod for run-1 yet (phase ${phase.stdout})`);
        return true;
      }, 60_000);
      // --leader-elect: the Execution ran because this replica holds the Lease in the release namespace.
      const holder = await k(["get", "lease", "gavel-execution-controller", "-n", NS, "-o", "jsonpath={.spec.holderIdentity}"]);
      expect(holder.stdout.trim(), holder.stderr).toBe(container);
      // What it did, on /metrics: controller-runtime's names, the Lease, gavel's status writes.
      const scrape = await fetch(metricsUrl);
      expect(scrape.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
      const text = await scrape.text();
      expect(text).toContain('leader_election_master_status{name="gavel-execution-controller"} 1\n');
      expect(text).toMatch(/controller_runtime_reconcile_total\{controller="agent",result="success"\} [1-9]/);
      expect(text).toMatch(/gavel_status_writes_total\{controller="execution"\} [1-9]/);
      expect(text).toMatch(/workqueue_adds_total\{controller="guardpolicy",name="guardpolicy"\} [1-9]/);
    });
    console.log(`controller container: Ready conditions written ${reconciledMs} ms after apply; stopped in ${stopMs} ms (exit ${exit})`);
    // On SIGTERM the leader hands the Lease back (update), so a successor need not wait for it to expire.
    const released = await k(["get", "lease", "gavel-execution-controller", "-n", NS, "-o", "jsonpath={.spec.holderIdentity}"]);
    expect(released.stdout.trim()).toBe("");
  });

  it("helm upgrade applies new values (one watched namespace: a Role there, enough to run an Execution) and refuses invalid ones by name", async () => {
    const up = await h(["upgrade", RELEASE, CHART, "--namespace", NS, "--reuse-values", "--set", "logLevel=debug", "--set", `watchNamespaces={${team}}`]);
    expect(up.code, up.stderr).toBe(0);
    const c = (
      await getJson<{ spec: { template: { spec: { containers: { args: string[]; env: { name: string; value?: string }[] }[] } } } }>([
        "deployment",
        "gavel-controller",
        "-n",
        NS,
      ])
    ).spec.template.spec.containers[0];
    expect(c?.args).toEqual(["controller", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--leader-elect", "--namespace", team]);
    expect(c?.env.find((e) => e.name === "GAVEL_LOG_LEVEL")?.value).toBe("debug");

    // One watched namespace: the same rules as a Role there, GuardPolicy reads in the release
    // namespace, and no cluster-wide grant any more.
    const clusterRole = await k(["get", "clusterrole", "gavel"]);
    expect(clusterRole.stderr).toContain("NotFound");
    const role = await getJson<{ rules: PolicyRule[] }>(["role", "gavel", "-n", team]);
    expect(flatten(role.rules)).toEqual(EXPECTED_RULES);
    const gp = await getJson<{ rules: PolicyRule[] }>(["role", "gavel-guardpolicies", "-n", NS]);
    expect(flatten(gp.rules)).toEqual({ "100monkeys.ai/guardpolicies": ["get", "list", "watch"], "100monkeys.ai/guardpolicies/status": ["patch"] });
    expect(await canI("create", "pods")).toBe(true);
    expect(await canI("list", "guardpolicies.100monkeys.ai", { ns: NS })).toBe(true);
    expect(await canI("create", "pods", { ns: "default" })).toBe(false);
    expect(await canI("list", "executions.100monkeys.ai", { ns: NS })).toBe(false);
    expect(await canI("list", "agents.100monkeys.ai", { all: true })).toBe(false);
    // ...and that is enough for the controller started with --namespace: a second Execution runs.
    await withController(async () => {
      const run2 = "apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: {name: run-2}\nspec:\n  agentRef: {name: writer}\n";
      const created = await k(["apply", "-n", team, "-f", "-"], run2);
      expect(created.code, created.stderr).toBe(0);
      await eventually(async () => {
        const pods = await k(["get", "pods", "-n", team, "-l", "gavel.dev/execution=run-2", "-o", "name"]);
        if (pods.stdout.trim() === "") throw new Error("no worker pod for run-2 yet");
        return true;
      }, 60_000);
    });

    const two = await h(["upgrade", RELEASE, CHART, "--namespace", NS, "--reuse-values", "--set", "watchNamespaces={a,b}"]);
    expect(two.code).not.toBe(0);
    expect(two.stderr).toContain("watchNamespaces");
    const badUrl = await h(["upgrade", RELEASE, CHART, "--namespace", NS, "--reuse-values", "--set", "nats.url=localhost:4222"]);
    expect(badUrl.code).not.toBe(0);
    expect(badUrl.stderr).toContain("nats.url");

    const status = await h(["status", RELEASE, "--namespace", NS, "-o", "json"]);
    expect(JSON.parse(status.stdout)).toMatchObject({ version: 2, info: { status: "deployed" } });
  });

  it("helm uninstall removes everything it installed except the CRDs (and so the objects stored in them)", async () => {
    const started = Date.now();
    const r = await h(["uninstall", RELEASE, "--namespace", NS, "--wait"]);
    expect(r.code, r.stderr).toBe(0);
    console.log(`helm uninstall: ${Date.now() - started} ms`);
    const gone = async (args: string[]) => {
      const g = await k(["get", ...args]);
      return g.code !== 0 && g.stderr.includes("NotFound");
    };
    for (const obj of [
      ["serviceaccount", "gavel", "-n", NS],
      ["deployment", "gavel-controller", "-n", NS],
      ["role", "gavel-leader-election", "-n", NS],
      ["rolebinding", "gavel-leader-election", "-n", NS],
      ["clusterrole", "gavel"],
      ["clusterrolebinding", "gavel"],
      ["role", "gavel", "-n", team],
      ["rolebinding", "gavel", "-n", team],
      ["role", "gavel-guardpolicies", "-n", NS],
      ["validatingadmissionpolicy", "agents.100monkeys.ai"],
      ["validatingadmissionpolicybinding", "agents.100monkeys.ai"],
    ]) {
      expect(await gone(obj), obj.join(" ")).toBe(true);
    }
    const left = await k(["get", "serviceaccounts,deployments,roles,rolebindings,secrets,configmaps", "-n", NS, "-l", "app.kubernetes.io/instance=gavel", "-o", "name"]);
    expect(left.stdout.trim()).toBe("");
    const releases = await k(["get", "secrets", "-n", NS, "-l", "owner=helm", "-o", "name"]);
    expect(releases.stdout.trim()).toBe("");
    // Helm never deletes CRDs: they and every Agent in them survive.
    for (const crd of CRDS) expect(await gone(["crd", crd]), crd).toBe(false);
    expect(await gone(["agent", "ref-exit-code", "-n", team])).toBe(false);
  });

  it("manifests/gavel.yaml installs the same objects with kubectl alone", async () => {
    const file = join(REPO_DIR, "manifests", "gavel.yaml");
    const docs = parseAllDocuments(await readFile(file, "utf8"))
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => d !== null);
    expect(docs.map((d) => d.kind)).toEqual(expect.arrayContaining(["CustomResourceDefinition", "Deployment", "ClusterRole", "ValidatingAdmissionPolicy"]));
    const r = await k(["apply", "--server-side", "--force-conflicts", "-f", file]);
    expect(r.code, r.stderr).toBe(0);
    for (const d of docs) {
      const g = await k(["get", d.kind, d.metadata.name, ...(d.metadata.namespace !== undefined ? ["-n", d.metadata.namespace] : []), "-o", "name"]);
      expect(g.code, `${d.kind}/${d.metadata.name}: ${g.stderr}`).toBe(0);
    }
    expect(await canI("create", "pods")).toBe(true);
    expect(await canI("get", "secrets")).toBe(false);
  });
});

describe("helm template: the branches default values do not take", () => {
  let helm: string;
  beforeAll(async () => {
    helm = await helmPath();
  });
  const render = async (...sets: string[]): Promise<K8sObject[]> => {
    const out = await execOk(helm, ["template", "gavel", CHART, "--namespace", NS, ...sets.flatMap((s) => ["--set", s])]);
    return parseAllDocuments(out)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => d !== null);
  };
  interface PodTemplate {
    spec: {
      replicas: number;
      strategy: { type: string };
      template: {
        spec: {
          volumes: { name: string; secret?: { secretName: string } }[];
          containers: { args: string[]; env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
        };
      };
    };
  }
  const deploymentOf = (docs: K8sObject[]) => docs.find((d) => d.kind === "Deployment") as unknown as PodTemplate;

  it("an existing NATS: the credentials Secret is mounted read-only, GAVEL_NATS_CREDS and GAVEL_NATS_KEYS point into it", async () => {
    const docs = await render("nats.enabled=false", "nats.credentialsSecret=gavel-nats", "nats.url=tls://nats.example:4222", "nodeOptions=");
    expect(docs.filter((d) => d.metadata.name.includes("nats"))).toEqual([]);
    const dep = deploymentOf(docs);
    const pod = dep.spec.template.spec;
    expect(pod.volumes).toContainEqual(expect.objectContaining({ name: "nats-credentials", secret: expect.objectContaining({ secretName: "gavel-nats" }) as unknown }));
    const c = pod.containers[0];
    expect(c?.volumeMounts).toContainEqual({ name: "nats-credentials", mountPath: "/etc/gavel/nats", readOnly: true });
    expect(c?.env).toContainEqual({ name: "GAVEL_NATS_CREDS", value: "/etc/gavel/nats/nats.creds" });
    expect(c?.env).toContainEqual({ name: "GAVEL_NATS_URL", value: "tls://nats.example:4222" });
    expect(c?.env).toContainEqual({ name: "GAVEL_NATS_KEYS", value: "/etc/gavel/nats" });
    // nodeOptions empty: no NODE_OPTIONS at all (the default's young generation is asserted below).
    expect(c?.env.map((e) => e.name)).not.toContain("NODE_OPTIONS");
    // The Lease holder is the pod, not its host: replicas on a shared host network differ.
    expect(c?.env).toContainEqual({ name: "GAVEL_POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } });
  });

  it("the chart's own NATS by default: a StatefulSet whose bootstrap makes the key Secrets the controller mounts; none without NATS", async () => {
    const docs = await render();
    const sts = docs.find((d) => d.kind === "StatefulSet") as unknown as {
      spec: { template: { spec: { automountServiceAccountToken: boolean; initContainers: { args: string[] }[]; containers: { image: string }[] } }; volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] };
    };
    expect(sts.spec.template.spec.automountServiceAccountToken).toBe(false);
    expect(sts.spec.template.spec.initContainers[0]?.args.slice(0, 6)).toEqual(["nats", "bootstrap", "--namespace", NS, "--operator-secret", "gavel-nats-operator"]);
    expect(sts.spec.template.spec.containers[0]?.image).toMatch(/^gavel\/nats:/);
    expect(sts.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("1Gi");
    const c = deploymentOf(docs).spec.template.spec;
    expect(c.containers[0]?.env).toContainEqual({ name: "GAVEL_NATS_URL", value: `nats://gavel-nats.${NS}.svc:4222` });
    // ADR 0039: V8's young generation is not left to the 512Mi limit's 1 MB semi-spaces.
    expect(c.containers[0]?.env).toContainEqual({ name: "NODE_OPTIONS", value: "--max-semi-space-size=16" });
    expect(c.volumes).toContainEqual({ name: "nats-credentials", secret: { secretName: "gavel-nats-credentials" } });
    const role = docs.find((d) => d.kind === "ClusterRole") as unknown as { rules: PolicyRule[] };
    expect(flatten(role.rules)).toEqual({ ...EXPECTED_RULES, "/secrets": ["create"] });
    // Restricted workers reach NATS through its pods (ADR 0021): the controller reads that one Service.
    const natsRole = docs.find((d) => d.kind === "Role" && d.metadata.name === "gavel-controller-nats") as unknown as { rules: PolicyRule[] };
    expect(natsRole.rules).toEqual([{ apiGroups: [""], resources: ["services"], resourceNames: ["gavel-nats"], verbs: ["get"] }]);
    const natsBinding = docs.find((d) => d.kind === "RoleBinding" && d.metadata.name === "gavel-controller-nats") as unknown as { subjects: { name: string }[] };
    expect(natsBinding.subjects.map((s) => s.name)).toEqual(["gavel"]);

    const none = await render("nats.enabled=false");
    const plain = deploymentOf(none).spec.template.spec;
    expect(plain.containers[0]?.env.map((e) => e.name)).not.toContain("GAVEL_NATS_URL");
    expect(plain.volumes.map((v) => v.name)).not.toContain("nats-credentials");
    expect(none.filter((d) => d.metadata.name.includes("nats"))).toEqual([]);
    const r = await exec(helm, ["template", "gavel", CHART, "--set", "nats.url=nats://elsewhere:4222"]);
    expect(r.stderr).toContain("nats.url: leave it empty while nats.enabled is true");
  });

  it("leader election off: no --leader-elect, Recreate, and more than one replica is refused by name", async () => {
    const dep = deploymentOf(await render("leaderElection.enabled=false"));
    expect(dep.spec.strategy.type).toBe("Recreate");
    expect(dep.spec.template.spec.containers[0]?.args).toEqual(["controller", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"]);
    const r = await exec(helm, ["template", "gavel", CHART, "--set", "leaderElection.enabled=false", "--set", "replicas=2"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("replicas: more than one controller needs leaderElection.enabled=true");
    expect(deploymentOf(await render("replicas=3")).spec.replicas).toBe(3);
  });

  it("metrics: a Service to the metrics port by default, a ServiceMonitor when asked, neither (nor the flag) with metrics.enabled=false", async () => {
    const on = await render();
    const svc = on.find((d) => d.kind === "Service" && d.metadata.name === "gavel-controller-metrics") as unknown as { spec: { selector: Record<string, string>; ports: unknown[]; publishNotReadyAddresses: boolean } };
    expect(svc.spec.publishNotReadyAddresses).toBe(true);
    expect(svc.spec.selector).toEqual({ "app.kubernetes.io/name": "gavel", "app.kubernetes.io/instance": "gavel", "app.kubernetes.io/component": "controller" });
    expect(svc.spec.ports).toEqual([{ name: "metrics", port: 8080, targetPort: "metrics", protocol: "TCP" }]);
    expect(on.map((d) => d.kind)).not.toContain("ServiceMonitor");
    const sm = (await render("metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom", "metrics.port=9090")).find((d) => d.kind === "ServiceMonitor") as unknown as K8sObject & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: unknown[] };
    };
    expect(sm.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(sm.metadata.labels?.release).toBe("prom");
    expect(sm.spec.selector.matchLabels).toEqual(svc.spec.selector);
    expect(sm.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s", scrapeTimeout: "10s" }]);
    const off = await render("metrics.enabled=false");
    expect(off.filter((d) => d.metadata.name === "gavel-controller-metrics")).toEqual([]);
    const c = deploymentOf(off).spec.template.spec.containers[0];
    expect(c?.args).toEqual(["controller", "--health-probe-bind-address=:8081", "--leader-elect"]);
  });

  it("admissionPolicy.enabled=false leaves the policies (Agents, controller-exec) out and nothing else", async () => {
    const on = await render();
    const off = await render("admissionPolicy.enabled=false");
    const kinds = (docs: K8sObject[]) => docs.map((d) => d.kind);
    expect(kinds(on)).toEqual(expect.arrayContaining(["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]));
    expect(kinds(off).filter((k) => k.startsWith("ValidatingAdmission"))).toEqual([]);
    expect(off.length).toBe(on.length - 4);
  });

  it("a release not named gavel prefixes every name, so it never collides with another's RBAC", async () => {
    const out = await execOk(helm, ["template", "team", CHART, "--namespace", "ops"]);
    const names = parseAllDocuments(out)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => d !== null && !d.kind.startsWith("ValidatingAdmission"))
      .map((d) => d.metadata.name);
    expect(names.length).toBeGreaterThan(5);
    for (const n of names) expect(n.startsWith("team-gavel"), n).toBe(true);
  });
});
