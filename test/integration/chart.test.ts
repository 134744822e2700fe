// The Helm chart on the real kube-apiserver, installed once and taken through its life:
// `helm install` creates the CRDs, RBAC, ServiceAccount, Deployment and admission policy;
// impersonation proves the RBAC grants every verb the controller needs and nothing else; the
// controller image runs with the chart's security settings and the ServiceAccount's token (Agent
// Ready, GuardPolicy status, an Execution's status and worker pod); upgrade applies new values;
// uninstall leaves only the CRDs; and the committed manifests/gavel.yaml installs the same objects
// without helm. What `helm template` renders for other values is in chart-template.test.ts.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import {
  COPY_SINK_COMMAND,
  COPY_SOURCE_CONTAINER,
  copyCommitCommand,
  copySourceCommand,
  type WorkspaceCopy,
} from "../../src/controller/execution-pods.js";
import { REPO_DIR } from "../harness/paths.js";
import { eventually } from "../harness/eventually.js";
import { CHART, CRDS, IMAGE, NS, RELEASE, SA, chartCluster, type K8sObject } from "./chart-fixture.js";
import { withController } from "./chart-controller.js";
import { EXPECTED_RULES, NEEDED, NOT_NEEDED, accessLabel, flatten, type PolicyRule } from "./chart-rbac.js";

describe("Helm chart on the real kube-apiserver", () => {
  const chart = chartCluster();
  const { h, k, getJson, canI, ready } = chart;

  it("helm install creates the CRDs, ServiceAccount, RBAC, Deployment and admission policy", async () => {
    const started = Date.now();
    // Without the chart's NATS: this control plane runs no pods (test/e2e runs the chart's NATS on the cluster).
    const r = await h([
      "install",
      RELEASE,
      CHART,
      "--namespace",
      NS,
      "--create-namespace",
      "--set",
      "image.tag=dev",
      "--set",
      "image.pullPolicy=Never",
      "--set",
      "nats.enabled=false",
    ]);
    expect(r.code, r.stderr).toBe(0);
    console.log(`helm install: ${Date.now() - started} ms`);
    expect(r.stdout).toContain("STATUS: deployed");

    const established = await k(["wait", "--for", "condition=established", "--timeout=60s", ...CRDS.map((c) => `crd/${c}`)]);
    expect(established.code, established.stderr).toBe(0);

    const sa = await getJson<K8sObject>(["serviceaccount", "gavel", "-n", NS]);
    expect(sa.metadata.labels?.["app.kubernetes.io/managed-by"]).toBe("Helm");
    const crb = await getJson<{ roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace: string }[] }>([
      "clusterrolebinding",
      "gavel",
    ]);
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

    const vap = await getJson<{ spec: { failurePolicy: string; validations: unknown[] } }>([
      "validatingadmissionpolicy",
      "agents.100monkeys.ai",
    ]);
    expect(vap.spec.failurePolicy).toBe("Fail");
    expect(vap.spec.validations.length).toBeGreaterThan(10);
    const binding = await getJson<{ spec: { policyName: string; validationActions: string[] } }>([
      "validatingadmissionpolicybinding",
      "agents.100monkeys.ai",
    ]);
    expect(binding.spec).toMatchObject({ policyName: "agents.100monkeys.ai", validationActions: ["Deny"] });
  });

  it("the installed CRDs take the reference manifests, and the installed policy refuses a bad Agent", async () => {
    const ref = join(REPO_DIR, "test", "fixtures", "reference");
    // A new CRD's storage answers 429/404 for a moment after it is established.
    await eventually(async () => {
      const r = await k(["apply", "-n", chart.team, "-f", join(ref, "av-01-exit-code.yaml"), "-f", join(ref, "av-05-multi-judge.yaml")]);
      if (r.code !== 0) throw new Error(r.stderr);
      return true;
    });
    const agents = await getJson<{ items: K8sObject[] }>(["agents", "-n", chart.team]);
    expect(agents.items.map((a) => a.metadata.name).sort()).toContain("ref-exit-code");
    expect(agents.items.length).toBeGreaterThanOrEqual(2);

    const bad =
      "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: bad-validator}\nspec: {execution: {validation: [{type: nope}]}}\n";
    // The server compiles a new policy asynchronously: it is enforced within seconds.
    const refused = await eventually(async () => {
      const r = await k(["apply", "-n", chart.team, "-f", "-"], bad);
      if (r.code === 0) {
        await k(["delete", "agent", "bad-validator", "-n", chart.team]);
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
    expect(flatten(lease.rules)).toEqual({ "coordination.k8s.io/leases": ["create", "delete", "get", "list", "update", "watch"] });
  });

  it("impersonating the ServiceAccount: every needed verb is allowed, everything around it is denied", async () => {
    // Eight kubectl processes at a time: the ~90 checks one after another passed 120 s at load 40.
    const answers = await eightAtATime([...NEEDED, ...NOT_NEEDED], ([v, r, o]) => canI(v, r, o));
    const wrong = [
      ...NEEDED.filter((_, i) => !answers[i]).map(([v, r, o]) => `denied but needed: ${accessLabel(v, r, o)}`),
      ...NOT_NEEDED.filter((_, i) => answers[NEEDED.length + i]).map(([v, r, o]) => `allowed but not needed: ${accessLabel(v, r, o)}`),
    ];
    expect(wrong).toEqual([]);
    console.log(`can-i: ${NEEDED.length} allowed, ${NOT_NEEDED.length} denied as expected`);
  });

  it("the controller's pods/exec passes admission only for the workspace copy's tar and commit (the controller-exec policy), others' exec is not touched", async () => {
    // No kubelet here: an exec admitted fails later (the pod has no node), one refused names the policy.
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "gavel-w-i1-ex" },
      spec: {
        containers: [
          { name: "main", image: "x" },
          { name: COPY_SOURCE_CONTAINER, image: "x" },
        ],
      },
    };
    expect((await k(["apply", "-n", chart.team, "-f", "-"], JSON.stringify(pod))).code).toBe(0);
    const execAs = async (as: string | undefined, container: string, command: string[]): Promise<string> => {
      const r = await k([
        "exec",
        "-n",
        chart.team,
        "gavel-w-i1-ex",
        "-c",
        container,
        ...(as !== undefined ? [`--as=${as}`] : []),
        "--",
        ...command,
      ]);
      return r.stderr;
    };
    const POLICY = "ValidatingAdmissionPolicy 'gavel-controller-exec'";
    expect(await execAs(SA, "main", ["ls", "/"])).toContain(POLICY);
    expect(await execAs(SA, COPY_SOURCE_CONTAINER, ["sh", "-c", "cat /etc/shadow"])).toContain(POLICY);
    expect(
      await execAs(SA, COPY_SOURCE_CONTAINER, copySourceCommand([{ volume: { name: "workspace", mount_path: "/w" } } as WorkspaceCopy])),
    ).not.toContain(POLICY);
    expect(await execAs(SA, COPY_SOURCE_CONTAINER, [...copySourceCommand([]), "-exec"])).toContain(POLICY);
    // A copier (*-copy-ex): its tar x and the copy's commit with a code, nothing else (ADR 0044).
    const copier = { ...pod, metadata: { name: "gavel-w-i1-t1-j-copy-ex" } };
    expect((await k(["apply", "-n", chart.team, "-f", "-"], JSON.stringify(copier))).code).toBe(0);
    const inCopier = async (command: string[]): Promise<string> =>
      (await k(["exec", "-n", chart.team, copier.metadata.name, "-c", "main", `--as=${SA}`, "--", ...command])).stderr;
    expect(await inCopier(COPY_SINK_COMMAND)).not.toContain(POLICY);
    expect(await inCopier(copyCommitCommand(2))).not.toContain(POLICY);
    expect(await inCopier([...copyCommitCommand(0).slice(0, 4), "0; rm -rf /"])).toContain(POLICY);
    expect(await inCopier(["sh", "-c", "cat /tmp/copied"])).toContain(POLICY);
    expect(await execAs(SA, "main", copyCommitCommand(0))).toContain(POLICY);
    // The admin's own exec is not the policy's business.
    expect(await execAs(undefined, "main", ["ls", "/"])).not.toContain(POLICY);
  });

  it("the controller image runs with the Deployment's security settings and the ServiceAccount's token, and reconciles Agents, GuardPolicies and an Execution", async () => {
    let reconciledMs = NaN;
    const { exit, stopMs } = await withController(chart, async (metricsUrl) => {
      const worker =
        "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: writer}\nspec:\n  task: {instruction: Write a summary.}\n" +
        "  execution:\n    mode: iterative\n    validation:\n      - type: semantic\n        judge_agent: summary-judge\n        criteria: Is the summary faithful?\n";
      const judge =
        "apiVersion: 100monkeys.ai/v1\nkind: Agent\nmetadata: {name: summary-judge, labels: {role: judge}}\nspec:\n  task: {instruction: Judge.}\n  execution: {mode: one-shot}\n";
      const policy =
        "apiVersion: 100monkeys.ai/v1\nkind: GuardPolicy\nmetadata: {name: team-policy}\nspec:\n  revoked_tools:\n    - {tool: net.fetch, reason: exfiltration risk}\n";
      const applied = await k(["apply", "-n", chart.team, "-f", "-"], worker + "---\n" + judge + "---\n" + policy);
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
      const created = await k(["apply", "-n", chart.team, "-f", "-"], run1);
      expect(created.code, created.stderr).toBe(0);
      await eventually(async () => {
        const phase = await k(["get", "execution", "run-1", "-n", chart.team, "-o", "jsonpath={.status.phase}"]);
        if (phase.stdout.trim() === "") throw new Error("no status.phase on run-1 yet");
        const pods = await k(["get", "pods", "-n", chart.team, "-l", "gavel.dev/execution=run-1", "-o", "name"]);
        if (pods.stdout.trim() === "") throw new Error(`no worker pod for run-1 yet (phase ${phase.stdout})`);
        return true;
      }, 60_000);
      // --leader-elect: the Execution ran because this replica holds the Lease in the release namespace.
      const holder = await k(["get", "lease", "gavel-execution-controller", "-n", NS, "-o", "jsonpath={.spec.holderIdentity}"]);
      expect(holder.stdout.trim(), holder.stderr).toBe(chart.container);
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
    const up = await h([
      "upgrade",
      RELEASE,
      CHART,
      "--namespace",
      NS,
      "--reuse-values",
      "--set",
      "logLevel=debug",
      "--set",
      `watchNamespaces={${chart.team}}`,
    ]);
    expect(up.code, up.stderr).toBe(0);
    const c = (
      await getJson<{ spec: { template: { spec: { containers: { args: string[]; env: { name: string; value?: string }[] }[] } } } }>([
        "deployment",
        "gavel-controller",
        "-n",
        NS,
      ])
    ).spec.template.spec.containers[0];
    expect(c?.args).toEqual([
      "controller",
      "--health-probe-bind-address=:8081",
      "--metrics-bind-address=:8080",
      "--leader-elect",
      "--namespace",
      chart.team,
    ]);
    expect(c?.env.find((e) => e.name === "GAVEL_LOG_LEVEL")?.value).toBe("debug");

    // One watched namespace: the same rules as a Role there, GuardPolicy reads in the release
    // namespace, and no cluster-wide grant any more.
    const clusterRole = await k(["get", "clusterrole", "gavel"]);
    expect(clusterRole.stderr).toContain("NotFound");
    const role = await getJson<{ rules: PolicyRule[] }>(["role", "gavel", "-n", chart.team]);
    expect(flatten(role.rules)).toEqual(EXPECTED_RULES);
    const gp = await getJson<{ rules: PolicyRule[] }>(["role", "gavel-guardpolicies", "-n", NS]);
    expect(flatten(gp.rules)).toEqual({
      "100monkeys.ai/guardpolicies": ["get", "list", "watch"],
      "100monkeys.ai/guardpolicies/status": ["patch"],
    });
    expect(await canI("create", "pods")).toBe(true);
    expect(await canI("list", "guardpolicies.100monkeys.ai", { ns: NS })).toBe(true);
    expect(await canI("create", "pods", { ns: "default" })).toBe(false);
    expect(await canI("list", "executions.100monkeys.ai", { ns: NS })).toBe(false);
    expect(await canI("list", "agents.100monkeys.ai", { all: true })).toBe(false);
    // ...and that is enough for the controller started with --namespace: a second Execution runs.
    await withController(chart, async () => {
      const run2 = "apiVersion: 100monkeys.ai/v1\nkind: Execution\nmetadata: {name: run-2}\nspec:\n  agentRef: {name: writer}\n";
      const created = await k(["apply", "-n", chart.team, "-f", "-"], run2);
      expect(created.code, created.stderr).toBe(0);
      await eventually(async () => {
        const pods = await k(["get", "pods", "-n", chart.team, "-l", "gavel.dev/execution=run-2", "-o", "name"]);
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
      ["role", "gavel", "-n", chart.team],
      ["rolebinding", "gavel", "-n", chart.team],
      ["role", "gavel-guardpolicies", "-n", NS],
      ["validatingadmissionpolicy", "agents.100monkeys.ai"],
      ["validatingadmissionpolicybinding", "agents.100monkeys.ai"],
    ]) {
      expect(await gone(obj), obj.join(" ")).toBe(true);
    }
    const left = await k([
      "get",
      "serviceaccounts,deployments,roles,rolebindings,secrets,configmaps",
      "-n",
      NS,
      "-l",
      "app.kubernetes.io/instance=gavel",
      "-o",
      "name",
    ]);
    expect(left.stdout.trim()).toBe("");
    const releases = await k(["get", "secrets", "-n", NS, "-l", "owner=helm", "-o", "name"]);
    expect(releases.stdout.trim()).toBe("");
    // Helm never deletes CRDs: they and every Agent in them survive.
    for (const crd of CRDS) expect(await gone(["crd", crd]), crd).toBe(false);
    expect(await gone(["agent", "ref-exit-code", "-n", chart.team])).toBe(false);
  });

  it("manifests/gavel.yaml installs the same objects with kubectl alone", async () => {
    const file = join(REPO_DIR, "manifests", "gavel.yaml");
    const docs = parseAllDocuments(await readFile(file, "utf8"))
      .map((d) => d.toJS() as K8sObject | null)
      .filter((d): d is K8sObject => d !== null);
    expect(docs.map((d) => d.kind)).toEqual(
      expect.arrayContaining(["CustomResourceDefinition", "Deployment", "ClusterRole", "ValidatingAdmissionPolicy"]),
    );
    const r = await k(["apply", "--server-side", "--force-conflicts", "-f", file]);
    expect(r.code, r.stderr).toBe(0);
    for (const d of docs) {
      const g = await k([
        "get",
        d.kind,
        d.metadata.name,
        ...(d.metadata.namespace !== undefined ? ["-n", d.metadata.namespace] : []),
        "-o",
        "name",
      ]);
      expect(g.code, `${d.kind}/${d.metadata.name}: ${g.stderr}`).toBe(0);
    }
    expect(await canI("create", "pods")).toBe(true);
    expect(await canI("get", "secrets")).toBe(false);
  });
});

/** f over the items, at most eight at once: the answers in the items' order. */
async function eightAtATime<T, R>(items: readonly T[], f: (item: T) => Promise<R>): Promise<R[]> {
  const answers: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) answers[i] = await f(items[i] as T);
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  return answers;
}
