// The real parts both cluster-gate test files run on: a kube-apiserver, a nats-server in JWT
// mode and two `gavel controller --nats` replicas (gate-a, gate-b) serving the gate of one
// namespace; helpers to play a worker and read Executions. (No kubelet: worker pods are
// created but never run; the tests play the worker.)
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import type { Execution } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import {
  createTrust,
  issueControllerCredentials,
  issueWorkerCredentials,
  serverConfig,
  type NatsTrust,
} from "../../src/transport/credentials.js";
import { inboxPrefix } from "../../src/transport/subjects.js";
import { ToolCallClient } from "../../src/transport/tool-call-client.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { REPO_DIR } from "../harness/paths.js";
import { eventually as poll, type Answer } from "../harness/eventually.js";
import { messageOf } from "../../src/errors.js";

export const enc = new TextEncoder();

/** A controller process and what it wrote to stderr. */
export interface ControllerProc {
  name: string;
  proc: ChildProcess;
  log: string[];
}

/** The parts, set once the suite's beforeAll has run. */
export interface GateCluster {
  cp: ControlPlane;
  nats: NatsServer;
  trust: NatsTrust;
  ns: string;
  api: k8s.CustomObjectsApi;
  core: k8s.CoreV1Api;
  conns: NatsConnection[];
  procs: ControllerProc[];
  /** Starts `gavel controller` with these arguments (stopped after the suite). */
  controller: (name: string, args: string[]) => ControllerProc;
  execution: (namespace: string, name: string) => Promise<Execution>;
  /** A ToolCallClient with a worker's credentials for this Execution. */
  asWorker: (namespace: string, exec: string) => Promise<ToolCallClient>;
  /** Polls like the harness's `eventually`; a timeout carries the controllers' own account of why. */
  eventually: <T extends Answer>(probe: () => Promise<T | undefined>, ms?: number, what?: string) => Promise<T>;
}

/**
 * Registers the suite's beforeAll (control plane, NATS, two gate replicas in a namespace named
 * after `label`, started with `controllerArgs` too) and afterAll; the returned object is filled in by the beforeAll.
 */
export function gateCluster(label: string, opts: { controllerArgs?: string[] } = {}): GateCluster {
  let dir: string | undefined;
  const g = {
    conns: [],
    procs: [],
    controller(name: string, args: string[]): ControllerProc {
      const log: string[] = [];
      const proc = spawn(join(REPO_DIR, "bin", "gavel"), ["controller", "--kubeconfig", g.cp.kubeconfigPath, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, GAVEL_POD_NAME: name, GAVEL_LOG_LEVEL: "info" },
      });
      proc.stderr?.on("data", (b: Buffer) => log.push(b.toString()));
      const entry = { name, proc, log };
      g.procs.push(entry);
      return entry;
    },
    async execution(namespace: string, name: string): Promise<Execution> {
      return (await g.api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "executions",
        name,
      })) as Execution;
    },
    async asWorker(namespace: string, exec: string): Promise<ToolCallClient> {
      const nc = await connect({
        servers: g.nats.url,
        authenticator: credsAuthenticator(enc.encode(issueWorkerCredentials(g.trust, namespace, exec).creds)),
        inboxPrefix: inboxPrefix(namespace, exec),
      });
      g.conns.push(nc);
      return new ToolCallClient(nc, { attemptTimeoutMs: 2000, totalTimeoutMs: 30_000 });
    },
    async eventually<T extends Answer>(probe: () => Promise<T | undefined>, ms = 30_000, what = "condition"): Promise<T> {
      return poll(probe, { timeoutMs: ms, everyMs: 200, what }).catch((err: unknown) => {
        const logs = g.procs.map((p) => `--- ${p.name} (exit ${String(p.proc.exitCode)}):\n${p.log.join("").slice(-3000)}`).join("\n");
        throw new Error(`${messageOf(err)}\n${logs}`, { cause: err });
      });
    },
  } as unknown as GateCluster;

  beforeAll(async () => {
    g.trust = createTrust();
    [g.cp, g.nats] = await Promise.all([startControlPlane(), startNats({ extraConfig: serverConfig(g.trust).config })]);
    g.api = g.cp.kc.makeApiClient(k8s.CustomObjectsApi);
    g.core = g.cp.kc.makeApiClient(k8s.CoreV1Api);
    dir = await mkdtemp(join(tmpdir(), "gavel-cluster-gate-"));
    await writeFile(join(dir, "controller.creds"), issueControllerCredentials(g.trust).creds);
    g.ns = await g.cp.createNamespace(label);
    const natsArgs = ["--nats", g.nats.url, "--nats-creds", join(dir, "controller.creds")];
    // Two replicas: one leads the reconciler, both serve the gate.
    for (const name of ["gate-a", "gate-b"])
      g.controller(name, ["-n", g.ns, "--controller-namespace", g.ns, "--leader-elect", ...natsArgs, ...(opts.controllerArgs ?? [])]);
  }, 120_000);

  afterAll(async () => {
    for (const p of g.procs) if (p.proc.exitCode === null) p.proc.kill("SIGKILL");
    for (const c of g.conns) await c.close().catch(() => undefined);
    await g.nats?.stop();
    await g.cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  return g;
}

/** An Agent with three tools (fs.read, fs.write, cmd.run limited to ls), one-shot. */
export const agentYaml = (name: string) => `
apiVersion: 100monkeys.ai/v1
kind: Agent
metadata:
  name: ${name}
spec:
  runtime:
    image: gavel/agent:dev
  task:
    instruction: Read the report, then rewrite it.
  tools:
    - fs.read
    - fs.write
    - name: cmd.run
      allowlist: ["ls"]
  execution:
    mode: one-shot
`;

/** A GuardPolicy with a sequence contract and adaptive rules in each enforcement action. */
export const policyYaml = `
apiVersion: 100monkeys.ai/v1
kind: GuardPolicy
metadata:
  name: read-first
spec:
  sequence_contracts:
    - name: read-before-overwrite
      requires_prior: fs.read
      triggers_for: fs.write
      within_steps: 3
  adaptive_rules:
    - name: watch-reads
      match_field: tool
      pattern: '^fs\\.read$'
      action: flag
      reason: how often do workers read
    - name: no-done-reports
      match_field: args
      pattern: "status: done"
      action: deny
      reason: a candidate rule, watched before it blocks
      enforcementAction: warn
    - name: report-writes
      match_field: args
      pattern: "/workspace/report"
      action: deny
      reason: measured only
      enforcementAction: dryrun
`;
