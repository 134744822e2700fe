// The installed controller run as its pod would run: the Deployment's image, args, env, user,
// read-only root and dropped capabilities in a container on the host's network, with the
// ServiceAccount's token, so its RBAC is the chart's and nothing more.
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { eventually } from "../harness/eventually.js";
import { run, type ExecResult } from "../harness/exec.js";
import { freePort } from "../harness/nats.js";
import { IMAGE, NS, type ChartCluster } from "./chart-fixture.js";

const docker = (args: string[]): Promise<ExecResult> => run("docker", args);

/** The controller's container as the installed Deployment declares it. */
interface Container {
  image: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
  volumeMounts: { name: string; mountPath: string }[];
  readinessProbe: { httpGet: { path: string; port: string } };
}

/** The installed Deployment's pod: its user and its one container. */
interface ControllerPod {
  securityContext: { runAsUser: number; runAsGroup: number };
  container: Container;
}

/** What the controller's container is started with: where it mounts the ServiceAccount, which host ports it binds. */
interface Placement {
  name: string;
  saDir: string;
  server: URL;
  probePort: number;
  metricsPort: number;
}

/** Reads the installed Deployment's pod template. */
async function deployedPod(chart: ChartCluster): Promise<ControllerPod> {
  const dep = await chart.getJson<{
    spec: { template: { spec: { securityContext: ControllerPod["securityContext"]; containers: Container[] } } };
  }>(["deployment", "gavel-controller", "-n", NS]);
  const pod = dep.spec.template.spec;
  const c = pod.containers[0];
  if (c === undefined) throw new Error("no container in the Deployment");
  return { securityContext: pod.securityContext, container: c };
}

/** Writes what the kubelet would mount: the ServiceAccount's token, the cluster CA and the namespace. */
async function serviceAccountDir(chart: ChartCluster): Promise<string> {
  const sa = await mkdtemp(join(tmpdir(), "gavel-sa-"));
  const tok = await chart.k(["create", "token", "gavel", "-n", NS, "--duration", "1h"]);
  expect(tok.code, tok.stderr).toBe(0);
  const caFile = chart.cp.kc.getCurrentCluster()?.caFile;
  if (caFile === undefined) throw new Error("the harness kubeconfig has no certificate-authority file");
  await writeFile(join(sa, "token"), tok.stdout.trim());
  await writeFile(join(sa, "ca.crt"), await readFile(caFile));
  await writeFile(join(sa, "namespace"), NS);
  await chmod(sa, 0o755);
  for (const f of ["token", "ca.crt", "namespace"]) await chmod(join(sa, f), 0o644);
  return sa;
}

/** `docker run` arguments that give the container the pod's user, security settings, env and args. */
function dockerRunArgs(pod: ControllerPod, at: Placement): string[] {
  const c = pod.container;
  const env = c.env.flatMap((e) => {
    if (e.valueFrom?.fieldRef?.fieldPath === "metadata.namespace") return ["-e", `${e.name}=${NS}`];
    if (e.valueFrom?.fieldRef?.fieldPath === "metadata.name") return ["-e", `${e.name}=${at.name}`];
    if (e.value !== undefined) return ["-e", `${e.name}=${e.value}`];
    throw new Error(`env ${e.name}: the test cannot translate its source`);
  });
  // On the host's network the chart's ports may be taken: the same flags, free ports.
  const probeArg = "--health-probe-bind-address=";
  const metricsArg = "--metrics-bind-address=";
  return [
    "run",
    "-d",
    "--name",
    at.name,
    "--network",
    "host",
    "--user",
    `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`,
    ...(c.securityContext.readOnlyRootFilesystem ? ["--read-only"] : []),
    ...(c.securityContext.allowPrivilegeEscalation ? [] : ["--security-opt", "no-new-privileges"]),
    ...c.securityContext.capabilities.drop.flatMap((cap) => ["--cap-drop", cap]),
    ...c.volumeMounts.filter((m) => m.name === "tmp").flatMap((m) => ["--tmpfs", m.mountPath]),
    "-v",
    `${at.saDir}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
    "-e",
    `KUBERNETES_SERVICE_HOST=${at.server.hostname}`,
    "-e",
    `KUBERNETES_SERVICE_PORT=${at.server.port}`,
    ...env,
    c.image,
    ...c.args.map((a) =>
      a.startsWith(probeArg)
        ? `${probeArg}127.0.0.1:${at.probePort}`
        : a.startsWith(metricsArg)
          ? `${metricsArg}127.0.0.1:${at.metricsPort}`
          : a,
    ),
  ];
}

/**
 * Runs the controller image as the kubelet would run the installed Deployment's pod: its
 * image, args, env, user, read-only root, dropped capabilities and /tmp, with the
 * ServiceAccount's token, the CA and the namespace mounted where client-node looks in a pod.
 * Calls `body` while it runs, then stops it with SIGTERM; returns its log and exit code.
 */
export async function withController(
  chart: ChartCluster,
  body: (metricsUrl: string) => Promise<void>,
): Promise<{ text: string; exit: string; stopMs: number }> {
  const inspect = await docker(["image", "inspect", IMAGE]);
  expect(inspect.code, `${IMAGE} is missing: run make images (test/harness/images.sh)`).toBe(0);
  const pod = await deployedPod(chart);
  const at: Placement = {
    name: `gavel-chart-${randomBytes(3).toString("hex")}`,
    saDir: await serviceAccountDir(chart),
    server: new URL(chart.cp.kc.getCurrentCluster()?.server ?? ""),
    probePort: await freePort(),
    metricsPort: await freePort(),
  };
  chart.container = at.name;
  const started = await docker(dockerRunArgs(pod, at));
  expect(started.code, started.stderr).toBe(0);

  // Failures inside are reported with the controller's log, after the container is stopped.
  let failure: unknown;
  try {
    // Ready by the Deployment's own readinessProbe before anything is asked of it.
    const probe = `http://127.0.0.1:${at.probePort}${pod.container.readinessProbe.httpGet.path}`;
    await eventually(async () => {
      const r = await fetch(probe);
      if (r.status !== 200) throw new Error(`${probe}: ${r.status} ${await r.text()}`);
      return true;
    }, 60_000);
    await body(`http://127.0.0.1:${at.metricsPort}/metrics`);
  } catch (err) {
    failure = err;
  }
  // SIGTERM, as the kubelet sends it: the controller should stop cleanly with exit code 0.
  const t1 = Date.now();
  await docker(["stop", "-t", "20", at.name]);
  const stopMs = Date.now() - t1;
  const exit = (await docker(["inspect", "-f", "{{.State.ExitCode}}", at.name])).stdout.trim();
  const logs = await docker(["logs", at.name]);
  const text = logs.stdout + logs.stderr;
  await docker(["rm", "-f", at.name]);
  chart.container = undefined;
  await rm(at.saDir, { recursive: true, force: true });
  if (failure !== undefined)
    throw new Error(`${failure instanceof Error ? failure.message : JSON.stringify(failure)}\ncontroller log:\n${text}`, {
      cause: failure,
    });
  expect(text).toContain("controllers started");
  expect(text.toLowerCase(), text).not.toContain("forbidden");
  expect(exit, `exit code after SIGTERM; log:\n${text}`).toBe("0");
  return { text, exit, stopMs };
}
