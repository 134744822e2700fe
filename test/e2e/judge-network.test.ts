// security.network as declared, checked from inside the judge pod on the single-node cluster,
// whose NetworkPolicies kube-network-policies enforces (test/harness/network-policy.sh): a
// judge with `none` cannot reach another pod, one whose allowlist names that pod's host can,
// and the same allowlisted judge still cannot reach a pod it does not name. The judge is the
// command judge running a TCP connect as its one allowlisted command (`node`); it declares the
// input_schema fields it reads (criteria, worker_mounts): without one a judge gets {content, intent}.
import * as k8s from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { eventually, type Cluster } from "../harness/cluster.js";
import { chartRuns } from "../harness/chart-runs.js";
import { commandJudgeYaml, executionYaml, oneShotWorkerYaml, semanticValidation } from "../harness/example-worker.js";
import { type Executions } from "../harness/executions.js";

// Five connects 1 s apart; the last three decide, by majority (a pod's very first packet may
// precede the report of its IP to the API server, see network-policy.sh; and one connect of an
// allowed pair timed out under load in CI after two had passed). Exit 0 only when at least two
// of the last three connected.
const PROBE = `let n=0,ok=0;const next=(c)=>{if(n>2&&c)ok++;if(n>=5)process.exit(ok>=2?0:1);setTimeout(t,1000)};const t=()=>{n++;const s=require('net').connect({host:process.argv[1],port:8080,timeout:2500});s.on('connect',()=>{console.log('connected');s.destroy();next(true)});const bad=(why)=>{console.log(why);s.destroy();next(false)};s.on('timeout',()=>bad('timeout'));s.on('error',(e)=>bad(e.code))};t()`;

/** A command judge with `network` (the lines under security.network). */
function judgeYaml(name: string, network: string): string {
  return commandJudgeYaml(name, { network });
}

/** A worker judged by `judge`, whose criteria run the probe against `host`. */
function runYaml(name: string, judge: string, host: string): string {
  return `${oneShotWorkerYaml(`${name}-worker`, semanticValidation(judge, `node -e "${PROBE}" ${host}`))}---${executionYaml(name, `${name}-worker`, {})}`;
}

/** A TCP server pod answering on 8080 and a headless Service naming it. */
function targetYaml(name: string): string {
  return `
apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: ${name}}
spec:
  automountServiceAccountToken: false
  containers:
    - name: main
      image: gavel/base:bookworm-node20
      imagePullPolicy: Never
      command: ["node", "-e", "require('net').createServer((s) => { s.on('error', () => {}); s.end('hi'); }).listen(8080)"]
      securityContext: {runAsUser: 65534, runAsNonRoot: true, allowPrivilegeEscalation: false}
---
apiVersion: v1
kind: Service
metadata:
  name: ${name}
spec:
  clusterIP: None
  selector: {app: ${name}}
  ports: [{port: 8080}]
`;
}

describe("judge network on the cluster (NetworkPolicy enforced)", () => {
  let cluster: Cluster;
  let runs: Executions;
  let ns: string;
  let targetIp: string;
  let otherIp: string;

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-judge-network"));
    ns = runs.namespace;
    await runs.apply(targetYaml("target") + "---" + targetYaml("other"));
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const ipOf = (name: string) =>
      eventually(
        async () => {
          const pod = await core.readNamespacedPod({ name, namespace: ns });
          return pod.status?.phase === "Running" ? pod.status.podIP : undefined;
        },
        60_000,
        `pod ${name} running`,
      );
    targetIp = await ipOf("target");
    otherIp = await ipOf("other");
    await runs.apply(judgeYaml("no-net-judge", "      mode: none"));
    await runs.apply(judgeYaml("allow-judge", `      mode: allow\n      allowlist: ["target.${ns}.svc.cluster.local"]`));
  });

  it("network: none cannot reach another pod", async () => {
    await runs.apply(runYaml("net-none", "no-net-judge", targetIp));
    const ex = await runs.final("net-none");
    const child = await runs.get(ex.status?.children?.[0]?.name ?? "");
    expect(child?.status?.verdict?.score, JSON.stringify(child?.status)).toBe(0);
    expect(child?.status?.verdict?.reasoning).toMatch(/timeout/);
    expect(ex.status?.phase).toBe("Failed");
  });

  it("an allowlisted host is reached, by name (DNS allowed)", async () => {
    await runs.apply(runYaml("net-allow", "allow-judge", `target.${ns}.svc.cluster.local`));
    const ex = await runs.final("net-allow");
    const child = await runs.get(ex.status?.children?.[0]?.name ?? "");
    expect(child?.status?.verdict?.score, JSON.stringify(child?.status)).toBe(1);
    expect(ex.status?.phase).toBe("Succeeded");
  });

  it("the allowlisted judge cannot reach a pod its allowlist does not name", async () => {
    await runs.apply(runYaml("net-other", "allow-judge", otherIp));
    const ex = await runs.final("net-other");
    const child = await runs.get(ex.status?.children?.[0]?.name ?? "");
    expect(child?.status?.verdict?.score, JSON.stringify(child?.status)).toBe(0);
    expect(child?.status?.verdict?.reasoning).toMatch(/timeout/);
  });
});
